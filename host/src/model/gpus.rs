//! GPU names and SM targets, mapped to the compute capability whose limits
//! [`super::occupancy::ARCHS`] holds, so a learner can ask about "RTX 4090" or `sm_89`.
//!
//! Source: NVIDIA's "CUDA GPU Compute Capability" list (developer.nvidia.com/cuda-gpus).

use super::occupancy::{ARCHS, ArchLimits};

/// Product names (upper case, spaces kept) and their compute capability.
pub const GPUS: [(&str, (u32, u32)); 36] = [
    ("V100", (7, 0)),
    ("TITAN V", (7, 0)),
    ("T4", (7, 5)),
    ("RTX 2060", (7, 5)),
    ("RTX 2070", (7, 5)),
    ("RTX 2080", (7, 5)),
    ("RTX 2080 TI", (7, 5)),
    ("A100", (8, 0)),
    ("A30", (8, 0)),
    ("A10", (8, 6)),
    ("A40", (8, 6)),
    ("RTX A6000", (8, 6)),
    ("RTX 3060", (8, 6)),
    ("RTX 3070", (8, 6)),
    ("RTX 3080", (8, 6)),
    ("RTX 3090", (8, 6)),
    ("ORIN", (8, 7)),
    ("L4", (8, 9)),
    ("L40", (8, 9)),
    ("L40S", (8, 9)),
    ("RTX 4060", (8, 9)),
    ("RTX 4070", (8, 9)),
    ("RTX 4080", (8, 9)),
    ("RTX 4090", (8, 9)),
    ("H100", (9, 0)),
    ("H200", (9, 0)),
    ("GH200", (9, 0)),
    ("B200", (10, 0)),
    ("GB200", (10, 0)),
    ("B300", (10, 3)),
    ("GB300", (10, 3)),
    ("THOR", (11, 0)),
    ("RTX 5080", (12, 0)),
    ("RTX 5090", (12, 0)),
    ("RTX PRO 6000", (12, 0)),
    ("GB10", (12, 1)),
];

/// The `n` of `names` closest to `to` (Jaro-Winkler similarity), closest first: what the
/// refusal of an unknown GPU or kernel name offers instead of the whole list.
pub fn closest<'a>(to: &str, names: impl IntoIterator<Item = &'a str>, n: usize) -> Vec<&'a str> {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_by(|a, b| strsim::jaro_winkler(to, b).total_cmp(&strsim::jaro_winkler(to, a)));
    names.truncate(n);
    names
}

/// The compute capabilities known, comma-separated.
fn capabilities() -> String {
    ARCHS.iter().map(|a| format!("{}.{}", a.major, a.minor)).collect::<Vec<_>>().join(", ")
}

/// The long help of an option naming a GPU: `what` (the option's own sentence, no full stop),
/// then what it takes, with every capability and GPU name known, each name's words joined by
/// no-break spaces so that the help's wrapping keeps "RTX 3090" on one line ([`resolve`] reads a
/// no-break space as a space, so a name copied from the help works).
pub fn help(what: &str) -> String {
    let names: Vec<String> = GPUS.iter().map(|(n, _)| n.replace(' ', "\u{a0}")).collect();
    format!(
        "{what}: a compute capability ({}), an SM target (sm_89) or a GPU name ({}; case and an NVIDIA, GeForce \
         or Tesla prefix ignored).",
        capabilities(),
        names.join(", ")
    )
}

/// The architecture `text` names: a compute capability (`8.9`), an SM target (`sm_89`,
/// `sm_100`, `compute_90`) or a product name from [`GPUS`] (case and an `NVIDIA `/`GeForce `
/// prefix ignored: `RTX 4090`, `nvidia h200`).
///
/// # Errors
/// A one-line message listing the capabilities and names known.
pub fn resolve(text: &str) -> Result<&'static ArchLimits, String> {
    let upper = text.trim().to_ascii_uppercase().split_whitespace().collect::<Vec<_>>().join(" ");
    if !upper.is_empty() && upper.len() <= 2 && upper.chars().all(|c| c.is_ascii_digit()) {
        let same: Vec<String> =
            ARCHS.iter().filter(|a| a.major.to_string() == upper).map(|a| format!("{}.{}", a.major, a.minor)).collect();
        return Err(format!(
            "`{text}` is a major version alone: give major.minor ({}; all known: {})",
            if same.is_empty() {
                "none known with that major".to_string()
            } else {
                format!("e.g. {}", same.join(", "))
            },
            capabilities()
        ));
    }
    let name = ["NVIDIA ", "GEFORCE ", "TESLA "].iter().fold(upper.as_str(), |n, p| n.strip_prefix(p).unwrap_or(n));
    let cc = if let Some((major, minor)) = name.split_once('.') {
        major.parse().ok().zip(minor.parse().ok())
    } else if let Some(digits) = name.strip_prefix("SM_").or_else(|| name.strip_prefix("COMPUTE_")) {
        // The last digit is the minor version: sm_89 -> 8.9, sm_100 -> 10.0.
        let digits = digits.trim_end_matches(['A', 'F']);
        (digits.len() >= 2 && digits.chars().all(|c| c.is_ascii_digit()))
            .then(|| (digits[..digits.len() - 1].parse().ok(), digits[digits.len() - 1..].parse().ok()))
            .and_then(|(a, b)| a.zip(b))
    } else {
        GPUS.iter().find(|(n, _)| *n == name).map(|&(_, cc)| cc)
    };
    match cc {
        Some((major, minor)) => ArchLimits::for_cc(major, minor).ok_or_else(|| {
            format!(
                "`{text}` is compute capability {major}.{minor}, which this lab has no limits for: the nearest known \
                 are {} (all known: {})",
                nearest_capabilities((major, minor), 3).join(", "),
                capabilities()
            )
        }),
        None => Err(format!(
            "`{text}` is not a known GPU: use a compute capability ({}), an SM target like sm_89, or one of {} GPU \
             names (closest: {}; `memlab occupancy --help` lists them)",
            capabilities(),
            GPUS.len(),
            closest(name, GPUS.iter().map(|(n, _)| *n), 3).join(", ")
        )),
    }
}

/// The `n` known compute capabilities numerically nearest `cc` (as `major.minor`, minor a
/// tenth), nearest first, the lower first between equals.
fn nearest_capabilities((major, minor): (u32, u32), n: usize) -> Vec<String> {
    let tenths = |a: &ArchLimits| (a.major * 10 + a.minor) as i64;
    let want = (major as i64).saturating_mul(10).saturating_add(minor as i64);
    let mut known: Vec<&ArchLimits> = ARCHS.iter().collect();
    known.sort_by_key(|a| ((tenths(a) - want).abs(), tenths(a)));
    known.iter().take(n).map(|a| format!("{}.{}", a.major, a.minor)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(text: &str) -> (u32, u32) {
        let a = resolve(text).unwrap();
        (a.major, a.minor)
    }

    #[test]
    fn names_targets_and_capabilities() {
        assert_eq!(cc("RTX 4090"), (8, 9));
        assert_eq!(cc("nvidia  geforce rtx 4090"), (8, 9));
        assert_eq!(cc("A100"), (8, 0));
        assert_eq!(cc("H200"), (9, 0));
        assert_eq!(cc("T4"), (7, 5));
        assert_eq!(cc("V100"), (7, 0));
        assert_eq!(cc("sm_89"), (8, 9));
        assert_eq!(cc("sm_100a"), (10, 0));
        assert_eq!(cc("compute_70"), (7, 0));
        assert_eq!(cc("12.1"), (12, 1));
        let e = resolve("GTX 1080").unwrap_err();
        assert!(e.contains("7.0, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 11.0, 12.0, 12.1"), "{e}");
        assert!(e.contains("sm_89") && e.contains(&format!("one of {} GPU names (closest: ", GPUS.len())), "{e}");
        let e = resolve("RTX 4099").unwrap_err();
        assert!(e.contains("(closest: RTX 4090, "), "{e}");
        let e = resolve("9").unwrap_err();
        assert!(e.starts_with("`9` is a major version alone: give major.minor (e.g. 9.0; all known: "), "{e}");
        assert!(resolve("4").unwrap_err().contains("none known with that major"));
        assert!(resolve("sm_61").is_err() && resolve("6.1").is_err() && resolve("sm_").is_err());
    }

    #[test]
    fn an_unknown_capability_gets_the_nearest_known_ones() {
        let e = resolve("9.5").unwrap_err();
        assert!(
            e.starts_with(
                "`9.5` is compute capability 9.5, which this lab has no limits for: the nearest known are 9.0, 10.0, 8.9"
            ),
            "{e}"
        );
        assert!(!e.contains("RTX") && !e.contains("V100"), "{e}");
        assert!(resolve("sm_61").unwrap_err().contains("the nearest known are 7.0, 7.5, 8.0"));
        assert!(resolve("12.9").unwrap_err().contains("the nearest known are 12.1, 12.0, 11.0"));
    }

    #[test]
    fn every_name_resolves_to_a_table_entry() {
        for (name, (major, minor)) in GPUS {
            assert_eq!(cc(name), (major, minor), "{name}");
        }
    }
}
