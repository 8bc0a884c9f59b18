//! The kernels' PTX, built by `build.rs` from `kernels-gpu/` and embedded in the binary, so the
//! lab runs on a GPU machine with no Rust toolchain; and below it the tools that read it on a
//! machine with no GPU: ptxas's figures, and SASS credited to the Rust source lines.

pub mod inspect;
pub mod line_tables;
pub mod memo;
pub mod ptxas;

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
    Ptx { arch: "sm_70", cc: (7, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_70.ptx")) },
    Ptx { arch: "sm_80", cc: (8, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_80.ptx")) },
    Ptx { arch: "sm_90", cc: (9, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90.ptx")) },
];

/// The load-counting build (feature `count-loads`, cc 7.0 so any device runs it): the matmul
/// kernels also count their global loads in the `.global` variable `GLOBAL_LOADS` (u64).
pub const COUNTING: Ptx =
    Ptx { arch: "sm_70", cc: (7, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_70_counting.ptx")) };

/// The load-counting build for cc 9.0: as [`COUNTING`], with the kernels only the sm_90 PTX
/// has (`matmul_dsmem_32`, whose cluster shares its tiles).
pub const COUNTING_SM90: Ptx =
    Ptx { arch: "sm_90", cc: (9, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90_counting.ptx")) };
/// The checked build (feature `checked`, sm_90): every index of a global view or shared tile of
/// the kernels on the device API is bounds-checked and traps when out of bounds; `memlab bench
/// --checked` times it against the release build.
pub const CHECKED: Ptx =
    Ptx { arch: "sm_90", cc: (9, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90_checked.ptx")) };

/// The tensor-core ladder (`kernels-gpu/src/tensor.rs`), built for `sm_90a`: `wgmma` and
/// `setmaxnreg` exist only with the arch-specific features, and PTX for them loads on devices
/// of exactly cc 9.0 (PTX ISA, "Target ISA notes": `sm_90a`). It holds no other lesson.
pub const TENSOR: Ptx =
    Ptx { arch: "sm_90a", cc: (9, 0), text: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90a.ptx")) };

/// Whether a device of compute capability `cc` loads [`TENSOR`].
pub fn runs_tensor(cc: (u32, u32)) -> bool {
    cc == TENSOR.cc
}

/// The nightly toolchain the PTX was built with.
pub const NIGHTLY: &str = env!("MEMLAB_NIGHTLY");

/// The kernel entry points (`.visible .entry NAME(`) of a PTX text, in order.
pub fn kernel_names(ptx: &str) -> Vec<&str> {
    ptx.lines().filter_map(|l| l.trim().strip_prefix(".visible .entry ")).filter_map(|l| l.split('(').next()).collect()
}

/// Kernels an unknown name's refusal lists in full; above that, the closest ones.
const LISTED: usize = 8;

/// Refuses a kernel name that is not an entry point of `ptx`, naming the ones that are (or,
/// of many, the closest, and how to list them all).
///
/// # Errors
/// `unknown kernel `NAME`: the sm_90 PTX has a, b, ...`, or `... has 62 kernels; closest: a,
/// b, c (`memlab inspect --list --cc 9.0` prints them all)`.
pub fn check_kernel(ptx: &Ptx, name: &str) -> Result<(), crate::error::Refusal> {
    let names = kernel_names(ptx.text);
    if names.contains(&name) {
        return Ok(());
    }
    if let Some(why) = needs_newer(ptx, name) {
        return Err(crate::error::Refusal(why));
    }
    let arch = ptx.arch;
    if names.len() <= LISTED {
        return Err(crate::error::Refusal(format!("unknown kernel `{name}`: the {arch} PTX has {}", names.join(", "))));
    }
    // A cc 9.0 device loads the tensor ladder's sm_90a PTX beside it: `--list` shows both.
    let (mut names, mut arch) = (names, format!("{arch} PTX has"));
    if ptx.arch != TENSOR.arch && runs_tensor(ptx.cc) {
        names.extend(kernel_names(TENSOR.text));
        arch = format!("{} and {} PTX have", ptx.arch, TENSOR.arch);
    }
    let (count, (major, minor)) = (names.len(), ptx.cc);
    Err(crate::error::Refusal(format!(
        "unknown kernel `{name}`: the {arch} {count} kernels; closest: {} (`memlab inspect --list --cc \
         {major}.{minor}` prints them all)",
        closest_kernels(name, &names).join(", ")
    )))
}

/// The kernels `name` may have meant: those whose name holds it (case aside: `sgemm_8` names a
/// family, `TRANSPOSE_PADDED` a kernel), up to [`LISTED`]; else the 3 nearest by spelling.
fn closest_kernels<'a>(name: &str, names: &[&'a str]) -> Vec<&'a str> {
    let query = name.to_lowercase();
    let holding: Vec<&str> = names.iter().copied().filter(|n| n.contains(&query)).take(LISTED).collect();
    match holding.is_empty() {
        true => crate::model::gpus::closest(&query, names.iter().copied(), 3),
        false => holding,
    }
}

/// PTX instructions the older targets lack, most specific first (`cp.async.bulk.tensor` and
/// `cp.async.bulk`: sm_90 and up; `cp.async`: sm_80 and up; PTX ISA "Data Movement and
/// Conversion Instructions"; `mapa` and `barrier.cluster`: sm_90 and up, PTX ISA 7.8, "mapa",
/// "barrier.cluster"; target ISA notes of each; `createpolicy`: PTX ISA 7.4, which only the sm_90
/// build declares, "createpolicy"). A kernel is said to use the first it has.
const NEWER_INSTRUCTIONS: [&str; 6] =
    ["cp.async.bulk.tensor", "cp.async.bulk", "cp.async", "mapa", "barrier.cluster", "createpolicy"];

/// When kernel `name` is not in `ptx` but in a newer embedded PTX: one line naming the compute
/// capability it needs and the instruction that keeps it out (`cp.async` for
/// `sgemm_7_async_copy`).
pub fn needs_newer(ptx: &Ptx, name: &str) -> Option<String> {
    if kernel_names(ptx.text).contains(&name) {
        return None;
    }
    if ptx.arch != TENSOR.arch && kernel_names(TENSOR.text).contains(&name) {
        return Some(format!(
            "kernel `{name}` is in the sm_90a PTX (it uses wgmma.mma_async and setmaxnreg), which loads on cc 9.0 only: it is not in the {} PTX",
            ptx.arch
        ));
    }
    let newer = ALL.iter().find(|p| p.cc > ptx.cc && kernel_names(p.text).contains(&name))?;
    let body = entry_body(newer.text, name).unwrap_or("");
    let uses = NEWER_INSTRUCTIONS.iter().find(|op| count_ops(body, op) > 0);
    let uses = uses.map_or(String::new(), |op| format!(", it uses {op}"));
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

/// A PTX text with one kernel, `name`, out of `ptx`: the header and module-scope declarations
/// (everything before the first entry: `.version`, `.target`, constants, `.extern .shared`,
/// function prototypes), that entry, and the module's device functions (`.func` with a body:
/// core's panic path, which a kernel's checked division may call). The driver's JIT and
/// `ptxas` then compile one kernel instead of all of them (about a second each for the whole
/// module on the H200 machine), for the register-cap sweeps that load one kernel many times.
/// `None` when `name` is not an entry of `ptx`.
pub fn only_entry(ptx: &str, name: &str) -> Option<String> {
    only_entries(ptx, &[name])
}

/// [`only_entry`] for several kernels: the module-scope declarations, the entries `names` in
/// that order, and the device functions. The driver's JIT compiles every kernel of a module it
/// loads, so a demo that launches three kernels of a 60-kernel build (the load-counting
/// matmuls) loads these alone. `None` when any name is not an entry of `ptx`.
pub fn only_entries(ptx: &str, names: &[&str]) -> Option<String> {
    let first = ptx.find(".visible .entry ")?;
    let mut text = ptx[..first].to_string();
    for name in names {
        text += &format!(".visible {}\n", entry_body(ptx, name)?);
    }
    // A definition starts a line with `.func` and has `{` before any `;` (a prototype ends
    // with `;`); it ends at the closing brace at the start of a line.
    let mut rest = &ptx[first..];
    while let Some(at) = rest.find("\n.func ") {
        let def = &rest[at + 1..];
        let end = def.find("\n}").map_or(def.len(), |e| e + 2);
        if def.find('{').is_some_and(|b| def.find(';').is_none_or(|s| b < s)) {
            text += &def[..end];
            text.push('\n');
            rest = &def[end..];
        } else {
            rest = &def[1..];
        }
    }
    Some(text)
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

/// One kernel parameter as the host passes it and the PTX declares it (PTX ISA, "Kernel
/// Function Parameters": `.param` state space). A Rust kernel's raw pointer is `.param .u64`,
/// a `u32` `.param .u32`, an `f32` `.param .f32`; an aggregate (a slice, a struct) is a byte
/// array with the type's alignment, `.param .align A .b8 name[N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// A device address (`CUdeviceptr`), `.param .u64`.
    Ptr,
    /// A `u32`, `.param .u32`.
    U32,
    /// A `u64` that is not a buffer, `.param .u64`.
    U64,
    /// An `f32`, `.param .f32`.
    F32,
    /// An aggregate of `size` bytes aligned to `align`, `.param .align A .b8 name[N]`.
    Bytes {
        /// Bytes.
        size: u32,
        /// Alignment, bytes.
        align: u32,
    },
}

impl Param {
    /// Bytes of the parameter.
    pub const fn size(self) -> u32 {
        match self {
            Param::Ptr | Param::U64 => 8,
            Param::U32 | Param::F32 => 4,
            Param::Bytes { size, .. } => size,
        }
    }

    /// Alignment of the parameter, bytes.
    pub const fn align(self) -> u32 {
        match self {
            Param::Bytes { align, .. } => align,
            other => other.size(),
        }
    }

    /// Whether the PTX declaration `p` receives this value: same size and alignment, and the
    /// same kind (integer, float, or byte array).
    pub fn fits(self, p: &PtxParam) -> bool {
        let kind_fits = match self {
            Param::Bytes { .. } => p.array,
            Param::F32 => p.float && !p.array,
            Param::Ptr | Param::U32 | Param::U64 => !p.float && !p.array,
        };
        kind_fits && self.size() == p.size && self.align() == p.align
    }
}

impl std::fmt::Display for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Param::Ptr => write!(f, "a device pointer (8 bytes)"),
            Param::U32 => write!(f, "a u32 (4 bytes)"),
            Param::U64 => write!(f, "a u64 (8 bytes)"),
            Param::F32 => write!(f, "an f32 (4 bytes)"),
            Param::Bytes { size, align } => write!(f, "{size} bytes aligned to {align}"),
        }
    }
}

/// One `.param` of a PTX `.entry`: its declaration and layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxParam {
    /// The declaration without its name, e.g. `.param .u64 .ptr .align 1`.
    pub decl: String,
    /// Bytes.
    pub size: u32,
    /// Alignment of the parameter itself, bytes (`.ptr .align N` is the pointee's, not this).
    pub align: u32,
    /// A floating-point scalar (`.f32`, `.f64`).
    pub float: bool,
    /// A byte array (`.b8 name[N]`): an aggregate.
    pub array: bool,
}

/// Bytes of a PTX fundamental type (`.u32`, `.f64`, `.b8`, ...).
fn type_bytes(ty: &str) -> Option<u32> {
    let bits: u32 = ty.trim_start_matches('.').get(1..)?.parse().ok()?;
    bits.is_multiple_of(8).then_some(bits / 8)
}

/// Parses one parameter declaration, `.param .u32 name` or `.param .align 16 .b8 name[16]`.
fn parse_param(line: &str) -> Option<PtxParam> {
    let tokens: Vec<&str> = line.trim().trim_end_matches(',').split_whitespace().collect();
    let (&first, rest) = tokens.split_first()?;
    if first != ".param" {
        return None;
    }
    let (align, rest) = match rest {
        [".align", a, rest @ ..] => (Some(a.parse().ok()?), rest),
        _ => (None, rest),
    };
    let (&ty, rest) = rest.split_first()?;
    let name = *rest.last()?;
    let elem = type_bytes(ty)?;
    let count = match name.split_once('[') {
        Some((_, n)) => Some(n.trim_end_matches(']').parse::<u32>().ok()?),
        None => None,
    };
    let decl = tokens[..tokens.len() - 1].join(" ");
    Some(PtxParam {
        decl,
        size: elem * count.unwrap_or(1),
        align: align.unwrap_or(elem),
        float: ty.starts_with(".f"),
        array: count.is_some(),
    })
}

/// The parameters of entry `name` in a PTX text, in order; `None` when it has no such entry.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<PtxParam>> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let rest = &ptx[start..];
    let list = &rest[rest.find('(')? + 1..rest.find(')')?];
    Some(list.lines().filter_map(parse_param).collect())
}

/// Checks the parameters the host passes to entry `name` against the PTX's declaration:
/// count, then size, alignment and kind of each.
///
/// # Errors
/// One line naming the entry, the first parameter that differs, and both sides.
pub fn check_params(ptx: &str, name: &str, host: &[Param]) -> Result<(), String> {
    let Some(params) = entry_params(ptx, name) else {
        return Err(format!("the PTX has no entry `{name}`"));
    };
    if let Some(i) = (0..params.len().max(host.len()))
        .find(|&i| !matches!((host.get(i), params.get(i)), (Some(h), Some(p)) if h.fits(p)))
    {
        let ptx_side =
            params.get(i).map_or("nothing".into(), |p| format!("`{}` ({} bytes, align {})", p.decl, p.size, p.align));
        let host_side = host.get(i).map_or("nothing".into(), |h| format!("{h}, align {}", h.align()));
        return Err(format!(
            "`{name}` parameter {i}: the PTX declares {ptx_side}, the host passes {host_side} ({} PTX parameters, {} host arguments)",
            params.len(),
            host.len()
        ));
    }
    Ok(())
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
        assert_eq!(for_device((7, 5)).unwrap().arch, "sm_70");
        assert_eq!(for_device((7, 0)).unwrap().arch, "sm_70");
        assert_eq!(for_device((6, 1)), None);
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
        let header = ".version 8.3\n.visible .global .align 8 .b8 GLOBAL_LOADS[8];\n";
        let module = format!(
            "{header}.visible .entry a(\n)\n{{\n\tret;\n}}\n.visible .entry b(\n)\n{{\n\tret;\n}}\n.visible .entry c(\n)\n{{\n\tret;\n}}\n.func f(\n)\n{{\n\tret;\n}}\n"
        );
        let two = only_entries(&module, &["c", "a"]).unwrap();
        assert_eq!(kernel_names(&two), ["c", "a"]);
        assert!(two.starts_with(header) && two.ends_with(".func f(\n)\n{\n\tret;\n}\n"), "{two}");
        assert_eq!(only_entries(&module, &["a", "d"]), None);
    }

    /// What rustc (nightly-2026-05-20, `--target nvptx64-nvidia-cuda -C target-cpu=sm_90`)
    /// emits for `extern "ptx-kernel" fn scale_words(words: &[u32], scale: Scale, out: *mut f32)`
    /// with `#[repr(C, align(16))] struct Scale { mul: f32, add: f32, n: u32 }`: the slice is
    /// one 16-byte aggregate aligned to 8 (pointer and length), the struct a 16-byte aggregate
    /// aligned to 16.
    const TRAP: &str = ".visible .entry scale_words(\n\t.param .align 8 .b8 scale_words_param_0[16],\n\t.param .align 16 .b8 scale_words_param_1[16],\n\t.param .u64 .ptr .align 1 scale_words_param_2\n)\n{\n\tret;\n}\n";

    #[test]
    fn parses_aggregates_with_their_alignment_and_pointers_with_theirs() {
        let params = entry_params(TRAP, "scale_words").unwrap();
        let layout: Vec<(u32, u32, bool)> = params.iter().map(|p| (p.size, p.align, p.array)).collect();
        assert_eq!(layout, [(16, 8, true), (16, 16, true), (8, 8, false)]);
        // `.ptr .align 1` is the pointee's alignment; the parameter itself is a u64.
        assert_eq!(params[2].decl, ".param .u64 .ptr .align 1");
    }

    #[test]
    fn a_slice_passed_as_one_pointer_is_caught() {
        let slice = Param::Bytes { size: 16, align: 8 };
        let scale = Param::Bytes { size: 16, align: 16 };
        assert_eq!(check_params(TRAP, "scale_words", &[slice, scale, Param::Ptr]), Ok(()));
        // The host passes the slice as its data pointer alone: every later argument shifts.
        let err = check_params(TRAP, "scale_words", &[Param::Ptr, scale, Param::Ptr]).unwrap_err();
        assert_eq!(
            err,
            "`scale_words` parameter 0: the PTX declares `.param .align 8 .b8` (16 bytes, align 8), the host passes a device pointer (8 bytes), align 8 (3 PTX parameters, 3 host arguments)"
        );
        // Pointer and length as two u64 (the C view of a slice): one argument too many.
        let err = check_params(TRAP, "scale_words", &[Param::Ptr, Param::U64, scale, Param::Ptr]).unwrap_err();
        assert!(err.starts_with("`scale_words` parameter 0: the PTX declares `.param .align 8 .b8`"), "{err}");
        assert!(err.ends_with("(3 PTX parameters, 4 host arguments)"), "{err}");
        // The struct's bytes without its alignment.
        let err = check_params(TRAP, "scale_words", &[slice, Param::Bytes { size: 16, align: 4 }, Param::Ptr]);
        assert!(err.unwrap_err().starts_with("`scale_words` parameter 1: the PTX declares `.param .align 16 .b8` (16 bytes, align 16), the host passes 16 bytes aligned to 4"));
    }

    #[test]
    fn a_kernel_of_a_newer_ptx_names_the_capability_it_needs() {
        let why = needs_newer(&ALL[0], "sgemm_7_async_copy").expect("rung 7 is in the sm_80 PTX");
        assert_eq!(
            why,
            "kernel `sgemm_7_async_copy` needs cc 8.0 or newer (the sm_80 PTX and up have it, it uses cp.async): it is not in the sm_70 PTX, which cc 7.0 loads"
        );
        assert_eq!(check_kernel(&ALL[0], "sgemm_7_async_copy").unwrap_err().0, why);
        assert_eq!(needs_newer(&ALL[0], "copy"), None, "in every PTX");
        assert_eq!(needs_newer(&ALL[2], "sgemm_7_async_copy"), None);
        assert_eq!(
            needs_newer(&ALL[1], "matmul_dsmem_32").unwrap(),
            "kernel `matmul_dsmem_32` needs cc 9.0 or newer (the sm_90 PTX and up have it, it uses mapa): it is not in the sm_80 PTX, which cc 8.0 loads"
        );
    }

    #[test]
    fn unknown_kernel_names_are_refused_with_the_known_ones() {
        let p = Ptx { arch: "sm_90", cc: (9, 0), text: ".visible .entry a(\n)\n.visible .entry b_2(\n)\n" };
        assert!(check_kernel(&p, "b_2").is_ok());
        assert_eq!(check_kernel(&p, "b").unwrap_err().0, "unknown kernel `b`: the sm_90 PTX has a, b_2");
        let err = check_kernel(&ALL[0], "transpose_pading").unwrap_err().0;
        assert!(err.starts_with(&format!("unknown kernel `transpose_pading`: the {} PTX has ", ALL[0].arch)), "{err}");
        assert!(err.contains("kernels; closest: transpose_padded, ") && err.ends_with("prints them all)"), "{err}");
        // A name held by kernels' names, or one in capitals, lists those kernels.
        let sm90 = for_device((9, 0)).unwrap();
        let err = check_kernel(sm90, "TRANSPOSE_PADDED").unwrap_err().0;
        assert!(err.contains("closest: transpose_padded (`memlab"), "{err}");
        // cc 9.0 counts the sm_90a PTX's kernels too, as `--list` shows them.
        let all = kernel_names(sm90.text).len() + kernel_names(TENSOR.text).len();
        assert!(err.contains(&format!("the sm_90 and sm_90a PTX have {all} kernels")), "{err}");
        let tuned: Vec<&str> = kernel_names(sm90.text).into_iter().filter(|n| n.starts_with("sgemm_8")).collect();
        let err = check_kernel(sm90, "sgemm_8").unwrap_err().0;
        assert!(tuned.len() > 1 && tuned.iter().take(LISTED).all(|t| err.contains(t)), "{err}");
        for p in &ALL {
            assert!(check_kernel(p, "matmul_tiled_32_missing_barrier").is_ok());
            let err = check_kernel(p, "matmul_tiled_64").unwrap_err().0;
            let list = format!("(`memlab inspect --list --cc {}.{}` prints them all)", p.cc.0, p.cc.1);
            assert!(err.contains("closest: matmul_tiled_16, matmul_tiled_32, ") && err.ends_with(&list), "{err}");
        }
    }
}
