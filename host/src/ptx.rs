//! The kernels' PTX, built by `build.rs` from `kernels-gpu/` and embedded in the binary, so the
//! lab runs on a GPU machine with no Rust toolchain.

/// One embedded PTX module and the compute capability it was generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ptx {
    /// PTX target, e.g. `"sm_90"`.
    pub arch: &'static str,
    /// Compute capability of `arch` as `(major, minor)`.
    pub cc: (u32, u32),
    /// The PTX text.
    pub text: &'static str,
}

/// Every embedded PTX, lowest target first.
pub const ALL: [Ptx; 3] = [
    Ptx { arch: "sm_75", cc: (7, 5), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_75.ptx")) },
    Ptx { arch: "sm_80", cc: (8, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_80.ptx")) },
    Ptx { arch: "sm_90", cc: (9, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90.ptx")) },
];

/// The load-counting build (feature `count-loads`, cc 7.5 so any device runs it): the matmul
/// kernels also count their global loads in the `.global` variable `GLOBAL_LOADS` (u64).
pub const COUNTING: Ptx =
    Ptx { arch: "sm_75", cc: (7, 5), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_75_counting.ptx")) };

/// The nightly toolchain the PTX was built with.
pub const NIGHTLY: &str = env!("MEMLAB_NIGHTLY");

/// The kernel entry points (`.visible .entry NAME(`) of a PTX text, in order.
pub fn kernel_names(ptx: &str) -> Vec<&str> {
    ptx.lines().filter_map(|l| l.trim().strip_prefix(".visible .entry ")).filter_map(|l| l.split('(').next()).collect()
}

/// Refuses a kernel name that is not an entry point of `ptx`, naming the ones that are.
///
/// # Errors
/// `unknown kernel `NAME`: the sm_90 PTX has a, b, ...`.
pub fn check_kernel(ptx: &Ptx, name: &str) -> Result<(), crate::error::Refusal> {
    let names = kernel_names(ptx.text);
    if names.contains(&name) {
        return Ok(());
    }
    if let Some(why) = needs_newer(ptx, name) {
        return Err(crate::error::Refusal(why));
    }
    Err(crate::error::Refusal(format!("unknown kernel `{name}`: the {} PTX has {}", ptx.arch, names.join(", "))))
}

/// PTX instructions the older targets lack (`cp.async`: sm_80 and up, PTX ISA "Data Movement
/// and Conversion Instructions: cp.async", target ISA notes).
const NEWER_INSTRUCTIONS: [&str; 1] = ["cp.async"];

/// When kernel `name` is not in `ptx` but in a newer embedded PTX: one line naming the compute
/// capability it needs and the instruction that keeps it out (`cp.async` for
/// `sgemm_7_async_copy`).
pub fn needs_newer(ptx: &Ptx, name: &str) -> Option<String> {
    if kernel_names(ptx.text).contains(&name) {
        return None;
    }
    let newer = ALL.iter().find(|p| p.cc > ptx.cc && kernel_names(p.text).contains(&name))?;
    let body = entry_body(newer.text, name).unwrap_or("");
    let uses: Vec<&str> = NEWER_INSTRUCTIONS.iter().copied().filter(|op| count_ops(body, op) > 0).collect();
    let uses = if uses.is_empty() { String::new() } else { format!(", it uses {}", uses.join(", ")) };
    Some(format!(
        "kernel `{name}` needs cc {}.{} or newer (the {} PTX and up have it{uses}): it is not in the {} PTX, which cc {}.{} loads",
        newer.cc.0, newer.cc.1, newer.arch, ptx.arch, ptx.cc.0, ptx.cc.1
    ))
}

/// The PTX to load on a device of compute capability `cc`: the highest target not above it
/// (the driver JIT-compiles PTX for its own or any newer architecture), or `None` when the
/// device is older than every target.
pub fn for_device(cc: (u32, u32)) -> Option<&'static Ptx> {
    ALL.iter().rev().find(|p| p.cc <= cc)
}

/// The body of kernel `name` in a PTX text: from its `.entry` line to the closing brace at the
/// start of a line.
pub fn entry_body<'a>(ptx: &'a str, name: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let rest = &ptx[start..];
    let end = rest.find("\n}").map_or(rest.len(), |e| e + 2);
    Some(&rest[..end])
}

/// The lines of a kernel body with any predicate (`@%p1 `) removed, so each starts with its
/// opcode (directives and labels pass through unchanged).
pub fn opcodes(body: &str) -> impl Iterator<Item = &str> {
    body.lines().map(str::trim_start).map(|l| match l.strip_prefix('@') {
        Some(predicated) => predicated.split_once(char::is_whitespace).map_or("", |(_, op)| op.trim_start()),
        None => l,
    })
}

/// Counts instructions in a kernel body whose opcode starts with `prefix` (e.g. `"ld.shared"`),
/// predicated ones (`@%p1 ld...`) included.
pub fn count_ops(body: &str, prefix: &str) -> usize {
    opcodes(body).filter(|op| op.starts_with(prefix)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_highest_target_not_above_the_device() {
        assert_eq!(for_device((9, 0)).unwrap().arch, "sm_90");
        assert_eq!(for_device((12, 0)).unwrap().arch, "sm_90");
        assert_eq!(for_device((8, 9)).unwrap().arch, "sm_80");
        assert_eq!(for_device((8, 0)).unwrap().arch, "sm_80");
        assert_eq!(for_device((7, 5)).unwrap().arch, "sm_75");
        assert_eq!(for_device((7, 0)), None);
    }

    const SAMPLE: &str = ".entry a(\n.param .u32 p\n)\n{\n\tld.shared.b32 %r1, [%rd1];\n\t@%p1 st.shared.b32 [%rd2], %r1;\n\tret;\n}\n.entry b(\n)\n{\n\tld.global.b32 %r1, [%rd1];\n}\n";

    #[test]
    fn finds_entry_bodies_and_counts_ops() {
        let a = entry_body(SAMPLE, "a").unwrap();
        assert!(a.starts_with(".entry a(") && a.ends_with("\n}"));
        assert_eq!(count_ops(a, "ld.shared"), 1);
        assert_eq!(count_ops(a, "st.shared"), 1, "predicated stores count");
        assert_eq!(count_ops(a, "ld.global"), 0);
        assert_eq!(count_ops(entry_body(SAMPLE, "b").unwrap(), "ld.global"), 1);
        assert_eq!(entry_body(SAMPLE, "c"), None);
        assert_eq!(kernel_names(".visible .entry a(\n.param\n)\n.visible .entry b_2(\n"), ["a", "b_2"]);
    }

    #[test]
    fn a_kernel_of_a_newer_ptx_names_the_capability_it_needs() {
        let why = needs_newer(&ALL[0], "sgemm_7_async_copy").expect("rung 7 is in the sm_80 PTX");
        assert_eq!(
            why,
            "kernel `sgemm_7_async_copy` needs cc 8.0 or newer (the sm_80 PTX and up have it, it uses cp.async): it is not in the sm_75 PTX, which cc 7.5 loads"
        );
        assert_eq!(check_kernel(&ALL[0], "sgemm_7_async_copy").unwrap_err().0, why);
        assert_eq!(needs_newer(&ALL[0], "copy"), None, "in every PTX");
        assert_eq!(needs_newer(&ALL[2], "sgemm_7_async_copy"), None);
    }

    #[test]
    fn unknown_kernel_names_are_refused_with_the_known_ones() {
        let p = Ptx { arch: "sm_90", cc: (9, 0), text: ".visible .entry a(\n)\n.visible .entry b_2(\n)\n" };
        assert!(check_kernel(&p, "b_2").is_ok());
        assert_eq!(check_kernel(&p, "b").unwrap_err().0, "unknown kernel `b`: the sm_90 PTX has a, b_2");
        for p in &ALL {
            assert!(check_kernel(p, "matmul_tiled_32_missing_barrier").is_ok());
            let err = check_kernel(p, "matmul_tiled_64").unwrap_err().0;
            assert!(err.contains("matmul_tiled_32, ") && err.contains("shared_bank_probe"), "{err}");
        }
    }
}
