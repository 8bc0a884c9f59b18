//! Command-line parsing helpers: sizes like `8192x8192`, byte counts like `1GiB`, and device
//! lists like `all` or `0,1`.

/// Parses `AxB...` with exactly `N` positive factors that each fit in a `u32` (the kernels take
/// sizes as `u32`).
///
/// # Errors
/// A one-line message naming the bad part and the allowed range.
pub fn dims<const N: usize>(text: &str) -> Result<[usize; N], String> {
    let parts: Vec<&str> = text.split(['x', 'X']).collect();
    if parts.len() != N {
        return Err(format!("`{text}`: expected {N} sizes separated by `x`, like {}", vec!["1024"; N].join("x")));
    }
    let mut out = [0usize; N];
    for (slot, part) in out.iter_mut().zip(&parts) {
        let v: u64 = part.trim().parse().map_err(|_| format!("`{part}` in `{text}` is not a whole number"))?;
        if v == 0 {
            return Err(format!("size 0 in `{text}` is out of range: at least 1"));
        }
        let v = u32::try_from(v).map_err(|_| {
            format!("size {v} in `{text}` is out of range: at most {} (the kernels take sizes as u32)", u32::MAX)
        })?;
        *slot = v as usize;
    }
    Ok(out)
}

/// Parses a whole number of at least 1, for an option with no upper limit of its own (a
/// tile's pitch, a count of SMs), whose refusal names that least value rather than the type's
/// maximum.
///
/// # Errors
/// A one-line message for a non-number, zero, or a number too large for `T`.
pub fn at_least_one<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialEq + From<u8>,
    T::Err: std::fmt::Display,
{
    match text.trim().parse::<T>() {
        Ok(v) if v == T::from(0) => Err(format!("{} is out of range: at least 1", text.trim())),
        Ok(v) => Ok(v),
        Err(e) => Err(format!("`{text}` is not a whole number: {e}")),
    }
}

/// Parses a matrix `ROWSxCOLS` as [`dims`], into `(rows, cols)`.
///
/// # Errors
/// As for [`dims`].
pub fn matrix(text: &str) -> Result<(usize, usize), String> {
    dims::<2>(text).map(|[rows, cols]| (rows, cols))
}

/// Parses a GEMM shape `MxNxK` as [`dims`], into `(m, n, k)`.
///
/// # Errors
/// As for [`dims`].
pub fn gemm(text: &str) -> Result<(usize, usize, usize), String> {
    dims::<3>(text).map(|[m, n, k]| (m, n, k))
}

/// Most sizes one `--sizes` sweep takes.
pub const MAX_SWEEP_SIZES: usize = 32;

/// The matrices of one `--sizes` list, as [`size_list`] parses them. An alias, not `Vec`
/// written out, on purpose: clap's derive reads a field typed `Vec<T>` (by that name) as a list
/// of values parsed one by one into `T`, while the list here is one value, parsed and checked
/// as a whole; spelled `Vec`, the field panicked in clap when the flag was given.
pub type SizeList = Vec<(usize, usize)>;

/// Parses a comma-separated list of `ROWSxCOLS` matrices (`1000x999,8192x8191`): each as
/// [`dims`], with `rows * cols` within the kernels' 32-bit element index, each size once, at
/// most [`MAX_SWEEP_SIZES`].
///
/// # Errors
/// A one-line message naming the bad entry and the rule.
pub fn size_list(text: &str) -> Result<SizeList, String> {
    let mut list = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("`{text}` has an empty entry: give sizes like 1000x999,8192x8192"));
        }
        let [rows, cols] = dims::<2>(part)?;
        if rows * cols > u32::MAX as usize {
            return Err(format!(
                "`{part}` has {} elements: the kernels index in 32 bits (at most {})",
                rows * cols,
                u32::MAX
            ));
        }
        if list.contains(&(rows, cols)) {
            return Err(format!("`{text}` names {part} twice: list each size once"));
        }
        list.push((rows, cols));
    }
    if list.len() > MAX_SWEEP_SIZES {
        return Err(format!("`--sizes` has {} sizes: at most {MAX_SWEEP_SIZES}", list.len()));
    }
    Ok(list)
}

/// The units [`bytes`] takes, for help texts and refusals. Every multiple is a power of 1024:
/// a learner writing `48KB` of shared memory means the 48 KiB the Programming Guide's tables
/// give, not 48,000 bytes.
pub const BYTE_UNITS: &str = "B, K/KB/KiB, M/MB/MiB, G/GB/GiB (any case; K = 1024 B, M = 1024 K, G = 1024 M)";

/// Parses a byte count with an optional unit ([`BYTE_UNITS`]): `B`, then `K`, `KB` or `KiB`
/// for 1024 bytes, `M`/`MB`/`MiB` for 1024^2 and `G`/`GB`/`GiB` for 1024^3, in any case.
///
/// # Errors
/// A one-line message for an unknown unit, a non-number or zero.
pub fn bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let power = match unit.as_str() {
        "" | "b" => 0,
        _ => match unit.strip_suffix("ib").or_else(|| unit.strip_suffix('b')).unwrap_or(&unit) {
            "k" => 1,
            "m" => 2,
            "g" => 3,
            _ => return Err(format!("unknown unit `{unit}` in `{text}`: use {BYTE_UNITS}")),
        },
    };
    let n: usize = num.parse().map_err(|_| format!("`{text}` is not a byte count like 512MiB"))?;
    match n.checked_mul(1 << (10 * power)) {
        Some(0) => Err(format!("`{text}`: the size must be at least 1 byte")),
        Some(b) => Ok(b),
        None => Err(format!("`{text}` is too large")),
    }
}

/// The devices a command runs on: every visible one, or the listed ordinals in the given order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devices {
    /// `all`: every device the driver reports.
    All,
    /// `0` or `0,1`: these ordinals, each once.
    List(Vec<u32>),
}

/// Parses `--device`: `all`, one ordinal (`0`) or a comma-separated list (`0,1`).
///
/// # Errors
/// A one-line message for an empty list or entry, a non-number, or a device named twice.
pub fn devices(text: &str) -> Result<Devices, String> {
    let t = text.trim();
    let usage = "give `all`, one ordinal like 0, or a list like 0,1";
    if t.is_empty() {
        return Err(format!("the device list is empty: {usage}"));
    }
    if t.eq_ignore_ascii_case("all") {
        return Ok(Devices::All);
    }
    let mut list = Vec::new();
    for part in t.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("`{text}` has an empty entry: {usage}"));
        }
        let d: u32 = part.parse().map_err(|_| format!("`{part}` in `{text}` is not a device ordinal: {usage}"))?;
        if list.contains(&d) {
            return Err(format!("`{text}` names device {d} twice: list each device once"));
        }
        list.push(d);
    }
    Ok(Devices::List(list))
}

impl Devices {
    /// The ordinals on a machine with `count` devices.
    ///
    /// # Errors
    /// A one-line message naming an ordinal out of range and the valid ones.
    pub fn resolve(&self, count: u32) -> Result<Vec<u32>, String> {
        match self {
            Devices::All => Ok((0..count).collect()),
            Devices::List(list) => match list.iter().find(|&&d| d >= count) {
                Some(d) => Err(format!(
                    "--device {d} is out of range: this machine has {count} CUDA device(s), valid 0..={}",
                    count.saturating_sub(1)
                )),
                None => Ok(list.clone()),
            },
        }
    }
}

/// `n` and `noun`, plural unless `n` is 1: `count(1, "block")` is `"1 block"`, `count(2, "warp")`
/// is `"2 warps"`.
pub fn count(n: impl std::fmt::Display, noun: &str) -> String {
    let n = n.to_string();
    if n == "1" { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A size as a person reads it: `4096x4096x4096` -> `4096³`, anything else unchanged.
pub fn cubed(size: &str) -> String {
    match size.split('x').collect::<Vec<_>>()[..] {
        [a, b, c] if a == b && b == c => format!("{a}³"),
        _ => size.to_string(),
    }
}

/// What options `T` parse to from an empty command line: their defaults, written once in their
/// `default_value` attributes.
///
/// # Panics
/// When a default fails its own parser, a mistake in the attribute (each lesson's tests parse
/// its defaults).
pub fn defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let matches = T::augment_args(clap::Command::new("defaults")).get_matches_from(["defaults"]);
    T::from_arg_matches(&matches).expect("the options' defaults parse")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dims() {
        assert_eq!(dims::<2>("8192x8192"), Ok([8192, 8192]));
        assert_eq!(dims::<3>("33X31x1"), Ok([33, 31, 1]));
        assert_eq!(dims::<2>("0x5").unwrap_err(), "size 0 in `0x5` is out of range: at least 1");
        assert!(dims::<2>("-3x5").unwrap_err().contains("not a whole number"));
        assert!(dims::<2>("abc").unwrap_err().contains("expected 2 sizes"));
        assert!(dims::<3>("4x4").unwrap_err().contains("expected 3 sizes"));
        assert_eq!(
            dims::<2>("4294967296x1").unwrap_err(),
            "size 4294967296 in `4294967296x1` is out of range: at most 4294967295 (the kernels take sizes as u32)"
        );
    }

    #[test]
    fn at_least_one_names_its_least_value() {
        assert_eq!(at_least_one::<u64>("33"), Ok(33));
        assert_eq!(at_least_one::<u64>("0").unwrap_err(), "0 is out of range: at least 1");
        assert_eq!(at_least_one::<u32>("x").unwrap_err(), "`x` is not a whole number: invalid digit found in string");
        assert!(at_least_one::<u32>("4294967296").unwrap_err().contains("too large"));
    }

    #[test]
    fn parses_size_lists_and_refuses_bad_ones() {
        assert_eq!(size_list("1000x999, 8191x8192,8192X8191"), Ok(vec![(1000, 999), (8191, 8192), (8192, 8191)]));
        assert_eq!(size_list("1x1"), Ok(vec![(1, 1)]));
        assert_eq!(
            size_list("8x8,,4x4").unwrap_err(),
            "`8x8,,4x4` has an empty entry: give sizes like 1000x999,8192x8192"
        );
        assert_eq!(size_list("8x8,8x8").unwrap_err(), "`8x8,8x8` names 8x8 twice: list each size once");
        assert_eq!(
            size_list("65536x65536").unwrap_err(),
            "`65536x65536` has 4294967296 elements: the kernels index in 32 bits (at most 4294967295)"
        );
        assert!(size_list("8x0").unwrap_err().contains("out of range: at least 1"));
        assert!(size_list("8x8x8").unwrap_err().contains("expected 2 sizes"));
        let many: Vec<String> = (1..=33).map(|i| format!("{i}x{i}")).collect();
        assert_eq!(size_list(&many.join(",")).unwrap_err(), "`--sizes` has 33 sizes: at most 32");
    }

    #[test]
    fn parses_bytes_with_units() {
        assert_eq!(bytes("1GiB"), Ok(1 << 30));
        assert_eq!(bytes("20KiB"), Ok(20 << 10));
        assert_eq!(bytes("512 MiB"), Ok(512 << 20));
        assert_eq!(bytes("100"), Ok(100));
        // K, KB and KiB are one unit, 1024 bytes, in any case; so are M and G.
        for text in ["48k", "48K", "48KB", "48kb", "48KiB", "48 kib"] {
            assert_eq!(bytes(text), Ok(48 << 10), "{text}");
        }
        for text in ["3M", "3MB", "3MiB", "3mb"] {
            assert_eq!(bytes(text), Ok(3 << 20), "{text}");
        }
        for text in ["2G", "2GB", "2GiB"] {
            assert_eq!(bytes(text), Ok(2 << 30), "{text}");
        }
        assert!(bytes("0MiB").unwrap_err().contains("at least 1 byte"));
        assert_eq!(bytes("5TB").unwrap_err(), format!("unknown unit `tb` in `5TB`: use {BYTE_UNITS}"));
        for bad in ["5kibb", "5i", "5ib", "5bb"] {
            assert!(bytes(bad).unwrap_err().contains("unknown unit"), "{bad}");
        }
        assert!(bytes("lots").is_err());
    }

    #[test]
    fn parses_device_lists() {
        assert_eq!(devices("all"), Ok(Devices::All));
        assert_eq!(devices("ALL"), Ok(Devices::All));
        assert_eq!(devices("0"), Ok(Devices::List(vec![0])));
        assert_eq!(devices("1, 0"), Ok(Devices::List(vec![1, 0])));
        assert_eq!(
            devices("").unwrap_err(),
            "the device list is empty: give `all`, one ordinal like 0, or a list like 0,1"
        );
        assert_eq!(devices("0,0").unwrap_err(), "`0,0` names device 0 twice: list each device once");
        assert!(devices("0,,1").unwrap_err().starts_with("`0,,1` has an empty entry"));
        assert!(devices("gpu0").unwrap_err().starts_with("`gpu0` in `gpu0` is not a device ordinal"));
        assert!(devices("-1").is_err());
    }

    #[test]
    fn resolves_device_lists_against_the_machine() {
        assert_eq!(Devices::All.resolve(2), Ok(vec![0, 1]));
        assert_eq!(Devices::List(vec![1]).resolve(2), Ok(vec![1]));
        assert_eq!(
            Devices::List(vec![0, 7]).resolve(2).unwrap_err(),
            "--device 7 is out of range: this machine has 2 CUDA device(s), valid 0..=1"
        );
    }

    #[test]
    fn counts_are_plural_unless_one() {
        assert_eq!(count(1, "block"), "1 block");
        assert_eq!(count(0, "warp"), "0 warps");
        assert_eq!(count(2u32, "warp"), "2 warps");
    }
}
