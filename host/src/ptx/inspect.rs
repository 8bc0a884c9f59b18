//! What a kernel does to each memory level, read from its code with no GPU: static counts of
//! PTX memory instructions by state space, the SASS instructions `ptxas` turned them into
//! (disassembled by `nvdisasm`), and the Rust source line of every SASS memory instruction,
//! from the line-table PTX build (`build.rs`, [`LINES_ARCH`]).
//!
//! Counts are static (instructions in the code), not executed instructions: a load inside a
//! loop counts once. PTX `ld.local`/`st.local` are stack slots that ptxas may still promote to
//! registers; SASS `LDL`/`STL` are what really reaches local memory (spills, stack arrays).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::ptx::line_tables;
use crate::ptx::ptxas;
use crate::ptx::{count_ops, opcodes};

/// The line-table PTX as LLVM wrote it (same code as the sm_90 PTX, plus `.file`/`.loc` and
/// DWARF sections; never loaded on a GPU). [`sass`] makes it assemblable with
/// [`crate::ptx::line_tables::with_inlining`].
pub const LINES_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90_lines.ptx"));
/// Its PTX target.
pub const LINES_ARCH: &str = "sm_90";

/// One kind of memory access: its level, what it is, its PTX opcode prefixes and its SASS
/// opcodes (without modifiers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Memory level: "global", "shared", "local", "constant", "parameter", "generic", "barrier".
    pub level: &'static str,
    /// What the instructions do.
    pub what: &'static str,
    /// PTX opcode prefixes (PTX ISA, "Data Movement and Conversion Instructions").
    pub ptx: &'static [&'static str],
    /// SASS opcodes (CUDA Binary Utilities, "Instruction Set Reference").
    pub sass: &'static [&'static str],
}

/// The accesses `inspect` counts, one table row each. Kernel parameters live in constant
/// bank 0 on sm_70 and later, so PTX `ld.param` becomes SASS `LDC`/`ULDC` too.
pub const ACCESSES: [Access; 12] = [
    Access { level: "global", what: "loads", ptx: &["ld.global"], sass: &["LDG"] },
    Access { level: "global", what: "stores", ptx: &["st.global"], sass: &["STG"] },
    Access { level: "global", what: "atomics", ptx: &["atom.global", "red.global"], sass: &["ATOMG", "RED", "REDG"] },
    Access { level: "shared", what: "loads", ptx: &["ld.shared"], sass: &["LDS", "LDSM"] },
    Access { level: "shared", what: "stores", ptx: &["st.shared"], sass: &["STS"] },
    Access { level: "shared", what: "atomics", ptx: &["atom.shared", "red.shared"], sass: &["ATOMS"] },
    // `cp.async` only: TMA's `cp.async.bulk*` is not LDGSTS (inspect's pipeline note counts it).
    Access { level: "global -> shared", what: "async copies", ptx: &["cp.async.ca", "cp.async.cg"], sass: &["LDGSTS"] },
    Access { level: "local", what: "loads (stack, spills)", ptx: &["ld.local"], sass: &["LDL"] },
    Access { level: "local", what: "stores (stack, spills)", ptx: &["st.local"], sass: &["STL"] },
    Access { level: "constant", what: "loads (parameters too, in SASS)", ptx: &["ld.const"], sass: &["LDC", "ULDC"] },
    Access { level: "parameter", what: "loads", ptx: &["ld.param"], sass: &[] },
    Access { level: "barrier", what: "block barriers", ptx: &["bar.", "barrier."], sass: &["BAR"] },
];

/// State spaces a PTX `ld`/`st` may name; one without any is a generic access. `.shared::cta`
/// and `.shared::cluster` are the block's own and its cluster's shared memory (PTX ISA 7.8,
/// "State Spaces: Shared State Space").
const STATE_SPACES: [&str; 7] = ["global", "shared", "shared::cta", "shared::cluster", "local", "const", "param"];

/// Static PTX counts of one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxCounts {
    /// Per [`ACCESSES`] row.
    pub accesses: Vec<usize>,
    /// Generic `ld`/`st` (no state space: the hardware resolves the address at run time).
    pub generic: usize,
    /// Vector loads and stores: `.v2` and `.v4`.
    pub vectors: (usize, usize),
}

/// Counts the memory instructions of one kernel body (see [`crate::ptx::entry_body`]).
pub fn ptx_counts(body: &str) -> PtxCounts {
    let accesses = ACCESSES.iter().map(|a| a.ptx.iter().map(|p| count_ops(body, p)).sum()).collect();
    let mem_ops: Vec<&str> = opcodes(body).filter(|op| op.starts_with("ld.") || op.starts_with("st.")).collect();
    let generic = mem_ops
        .iter()
        .filter(|op| {
            let space = op[3..].split(['.', ' ', '\t']).next().unwrap_or("");
            !STATE_SPACES.contains(&space)
        })
        .count();
    let width =
        |v: &str| mem_ops.iter().filter(|op| op.split_whitespace().next().is_some_and(|o| o.contains(v))).count();
    PtxCounts { accesses, generic, vectors: (width(".v2"), width(".v4")) }
}

/// One SASS instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassInstr {
    /// Full opcode with modifiers, e.g. `LDG.E.128`.
    pub opcode: String,
    /// The instruction as disassembled, predicate included.
    pub text: String,
    /// Source file and line, when the cubin has line information.
    pub line: Option<(String, u32)>,
    /// The call sites (file, line) `line` was inlined at, innermost first: empty for a line of
    /// the kernel itself.
    pub inlined_at: Vec<(String, u32)>,
}

impl SassInstr {
    /// `line`, then the call sites it was inlined at: innermost first.
    pub fn frames(&self) -> impl Iterator<Item = &(String, u32)> {
        self.line.iter().chain(&self.inlined_at)
    }
}

impl SassInstr {
    /// The opcode without modifiers, e.g. `LDG`.
    pub fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// The access width in bits when the opcode names one (`.64`, `.128`), else `None`
    /// (32-bit or narrower).
    pub fn width(&self) -> Option<u32> {
        self.opcode.split('.').skip(1).find_map(|m| m.parse().ok()).filter(|w| [64, 128].contains(w))
    }
}

/// `"/path/file.rs", line 98` as a file and a line.
fn file_line(text: &str) -> Option<(String, u32)> {
    let (file, line) = text.trim().strip_prefix('"')?.split_once("\", line ")?;
    Some((file.to_string(), line.trim().parse().ok()?))
}

/// Parses `nvdisasm -c [-g | -gi]` output into each function's instructions. With `-gi` an
/// instruction's line comes as a block of `//## File` lines, innermost first, each but the
/// last `inlined at` the next.
pub fn parse_sass(text: &str) -> BTreeMap<String, Vec<SassInstr>> {
    let mut functions: BTreeMap<String, Vec<SassInstr>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut frames: Vec<(String, u32)> = Vec::new();
    let mut in_block = false;
    for raw in text.lines() {
        let l = raw.trim();
        if let Some(name) = l.strip_prefix(".text.").and_then(|n| n.strip_suffix(':')) {
            current = Some(name.to_string());
            frames.clear();
        } else if let Some(rest) = l.strip_prefix("//## File ") {
            // //## File "/path/a.rs", line 7 inlined at "/path/b.rs", line 5
            if !in_block {
                frames.clear();
                in_block = true;
            }
            let own = rest.split(" inlined at ").next().unwrap_or(rest);
            frames.extend(file_line(own));
        } else if let (Some(name), Some((_, instr))) = (&current, l.split_once("*/")) {
            if !l.starts_with("/*") {
                continue;
            }
            let instr = instr.trim().trim_end_matches(';').trim();
            let mut tokens = instr.split_whitespace();
            let mut opcode = tokens.next().unwrap_or("");
            if opcode.starts_with('@') {
                opcode = tokens.next().unwrap_or("");
            }
            if opcode.is_empty() {
                continue;
            }
            in_block = false;
            functions.entry(name.clone()).or_default().push(SassInstr {
                opcode: opcode.to_string(),
                text: instr.to_string(),
                line: frames.first().cloned(),
                inlined_at: frames.iter().skip(1).cloned().collect(),
            });
        }
    }
    functions
}

/// Assembles `ptx` for `arch` and disassembles the cubin with `nvdisasm -c`; with `line_info`
/// (for the line-table PTX, [`LINES_PTX`]) the PTX gets its inlining chains
/// ([`line_tables::with_inlining`]), ptxas `-lineinfo` and nvdisasm `-gi` (source lines with
/// the call sites they were inlined at).
///
/// # Errors
/// ptxas or nvdisasm missing (`cargo xtask setup` installs both) or failing; line tables this
/// reader does not know.
pub fn sass(ptx: &str, arch: &str, line_info: bool) -> Result<BTreeMap<String, Vec<SassInstr>>> {
    if line_info { disassemble(&line_tables::with_inlining(ptx)?, arch, true) } else { disassemble(ptx, arch, false) }
}

/// [`sass`] of kernel `entry` alone: ptxas and nvdisasm see that kernel and the module's device
/// functions only ([`crate::ptx::only_entry`], [`line_tables::entry_with_inlining`]), which
/// compile to the SASS they have in the whole module; `inspect` took 80 s of CPU per kernel in
/// a debug build once rung 8's configurations filled the module. An empty list when `ptx`
/// has no kernel `entry`.
///
/// # Errors
/// As for [`sass`].
pub fn entry_sass(ptx: &str, arch: &str, line_info: bool, entry: &str) -> Result<Vec<SassInstr>> {
    let alone = match line_info {
        true => line_tables::entry_with_inlining(ptx, entry)?,
        false => crate::ptx::only_entry(ptx, entry),
    };
    let Some(alone) = alone else { return Ok(Vec::new()) };
    Ok(disassemble(&alone, arch, line_info)?.remove(entry).unwrap_or_default())
}

/// Assembles `ptx` (with `-lineinfo` when `line_info`: a text [`line_tables::with_inlining`]
/// made) and disassembles the cubin, `-gi` when `line_info`.
fn disassemble(ptx: &str, arch: &str, line_info: bool) -> Result<BTreeMap<String, Vec<SassInstr>>> {
    let extra: &[&str] = if line_info { &["-lineinfo"] } else { &[] };
    ptxas::with_cubin(ptx, arch, extra, |_, cubin| {
        let nvdisasm = ptxas::tool("nvdisasm");
        let mut cmd = Command::new(&nvdisasm);
        cmd.arg("-c");
        if line_info {
            cmd.arg("-gi");
        }
        let out = cmd
            .arg(cubin)
            .output()
            .with_context(|| format!("cannot run {} ({})", nvdisasm.display(), crate::ptx::ptxas::MISSING_TOOL))?;
        if !out.status.success() {
            bail!("nvdisasm failed: {}", String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or(""));
        }
        Ok(parse_sass(&String::from_utf8_lossy(&out.stdout)))
    })
}

/// SASS counts per [`ACCESSES`] row.
pub fn sass_counts(instrs: &[SassInstr]) -> Vec<usize> {
    ACCESSES.iter().map(|a| instrs.iter().filter(|i| a.sass.contains(&i.base())).count()).collect()
}

/// Whether an instruction is one [`ACCESSES`] counts in SASS.
pub fn is_memory(instr: &SassInstr) -> bool {
    ACCESSES.iter().any(|a| a.sass.contains(&instr.base()))
}

/// Where the kernels' sources are; [`SourceLine`] shows their paths from there.
pub const KERNEL_SOURCES: &str = "kernels-gpu/src/";

/// The lab's helper module: a line of it is credited to the lesson line that called it.
pub const HELPER_FILE: &str = "kernels-gpu/src/device.rs";

/// The helper module's own folder (`device/x.rs` under the non-mod-rs layout).
pub const HELPER_DIR: &str = "kernels-gpu/src/device/";

/// The safe device API's sources (crate `memlab-device-api`), helpers too.
pub const API_SOURCES: &str = "device-api/src/";

/// Whether `path` is a helper's source: [`HELPER_FILE`], a file of [`HELPER_DIR`] or of the
/// device API ([`API_SOURCES`]).
pub fn is_helper_file(path: &str) -> bool {
    path.ends_with(HELPER_FILE) || path.contains(HELPER_DIR) || path.contains(API_SOURCES)
}

/// Whether `path` is a lesson's source: the lab's kernels, but not a helper ([`is_helper_file`]).
pub fn is_lesson_file(path: &str) -> bool {
    path.contains(KERNEL_SOURCES) && !is_helper_file(path)
}

/// A lesson's source line and the SASS memory instructions it became, in code order; or, with
/// `lesson` false, a line outside the lessons whose instructions the line tables tie to no
/// lesson line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    /// Whether `file:line` is a lesson line ([`is_lesson_file`], or the kernel's own line for
    /// its parameters' loads); false for a helper's or Rust's library line whose inlining chain
    /// has no lesson frame (code the compiler merged from several call sites, or a library
    /// function it did not inline).
    pub lesson: bool,
    /// The file as shown: from [`KERNEL_SOURCES`] on for the lab's sources, `core/...` for
    /// Rust's.
    pub file: String,
    /// Line number.
    pub line: u32,
    /// The line's text, when the file is on this machine.
    pub text: Option<String>,
    /// The helper line (file as shown, line) the instructions come from when the lesson line
    /// calls one (`device.rs`, `core/...`), through the inlining chain.
    pub helper: Option<(String, u32)>,
    /// Opcode (with modifiers) and how often, in first-seen order.
    pub ops: Vec<(String, usize)>,
}

/// Groups the memory instructions of kernel `entry`'s `instrs` by lesson line and helper line,
/// in order of first appearance. The lesson line is the innermost frame of the inlining chain
/// in a lesson file ([`is_lesson_file`]); the instruction's own line is the helper line when it
/// differs. A constant-bank load of the device API with no lesson frame is the `kernel!`
/// macro's read of a parameter: it is credited to the kernel's own line, `fn entry(` in its
/// lesson file, or for a kernel a lesson's macro declares (`fn $name(`, rung 8's
/// configurations) that macro's `fn` line, when the file is on this machine. Any other
/// instruction with no lesson frame (a helper's code merged from several lesson lines, Rust's
/// library not inlined from a lesson) is grouped by its own line, `lesson` false, after every
/// lesson line.
pub fn by_source_line(instrs: &[SassInstr], entry: &str) -> Vec<SourceLine> {
    let mut out: Vec<SourceLine> = Vec::new();
    let mut files: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut read = |path: &str| -> Option<Vec<String>> {
        files
            .entry(path.to_string())
            .or_insert_with(|| {
                std::fs::read_to_string(Path::new(path)).ok().map(|t| t.lines().map(String::from).collect())
            })
            .clone()
    };
    let declaration = format!("fn {entry}(");
    let declared = instrs.iter().flat_map(SassInstr::frames).filter(|(f, _)| is_lesson_file(f)).find_map(|(f, _)| {
        let at = read(f)?.iter().position(|l| l.contains(&declaration))?;
        Some((f.clone(), at as u32 + 1))
    });
    // A macro's kernel: the outermost lesson frame of its code is the line that expands the
    // macro (where the line tables carry the whole chain), the macro's `fn $name(` the last
    // one above it.
    let kernel_line = declared.or_else(|| {
        instrs.iter().filter_map(|i| i.frames().filter(|(f, _)| is_lesson_file(f)).last()).find_map(|(f, line)| {
            let lines = read(f)?;
            let above = lines.get(..*line as usize)?;
            let at = above.iter().rposition(|l| l.split("fn $").nth(1).is_some_and(|rest| rest.contains('(')))?;
            Some((f.clone(), at as u32 + 1))
        })
    });
    for instr in instrs.iter().filter(|i| is_memory(i)) {
        let Some(own) = &instr.line else { continue };
        let frame = instr.frames().find(|(f, _)| is_lesson_file(f));
        let parameter = own.0.contains(API_SOURCES) && ["LDC", "ULDC"].contains(&instr.base());
        let ((path, line), lesson) = match (frame, &kernel_line) {
            (Some(frame), _) => (frame, true),
            (None, Some(kernel)) if parameter => (kernel, true),
            (None, _) => (own, false),
        };
        let shown = short_path(path);
        let helper = (own != &(path.clone(), *line)).then(|| (short_path(&own.0), own.1));
        let same = |s: &SourceLine| s.lesson == lesson && s.file == shown && s.line == *line && s.helper == helper;
        let entry = match out.iter_mut().position(|s| same(s)) {
            Some(i) => &mut out[i],
            None => {
                let text = read(path)
                    .and_then(|l| l.get((*line as usize).checked_sub(1)?).cloned())
                    .map(|t| t.trim().to_string());
                out.push(SourceLine { lesson, file: shown, line: *line, text, helper, ops: Vec::new() });
                out.last_mut().expect("just pushed")
            }
        };
        match entry.ops.iter_mut().find(|(op, _)| *op == instr.opcode) {
            Some((_, n)) => *n += 1,
            None => entry.ops.push((instr.opcode.clone(), 1)),
        }
    }
    // Stable: each group keeps its order of first appearance.
    out.sort_by_key(|s| !s.lesson);
    out
}

/// `x.rs` (under `kernels-gpu/src/`) for the lab's files, `core/...` or `core_arch/...` for
/// Rust's.
fn short_path(path: &str) -> String {
    if let Some(i) = path.find(KERNEL_SOURCES) {
        return path[i + KERNEL_SOURCES.len()..].to_string();
    }
    if let Some(i) = path.find(API_SOURCES) {
        return path[i..].to_string();
    }
    if let Some(i) = path.find("/stdarch/crates/") {
        return path[i + "/stdarch/crates/".len()..].to_string();
    }
    if let Some(i) = path.find("/library/") {
        return path[i + "/library/".len()..].to_string();
    }
    path.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = ".entry k(\n)\n{\n\tld.param.b64 %rd1, [k_param_0];\n\tld.global.v4.f32 {%f1,%f2,%f3,%f4}, [%rd1];\n\t@%p1 st.shared.b32 [%rd2], %r1;\n\tld.b32 %r2, [%rd3];\n\tst.local.v2.b32 [%SP], {%r1,%r2};\n\tbar.sync 0;\n}\n";

    #[test]
    fn counts_ptx_by_state_space_and_width() {
        let c = ptx_counts(BODY);
        let row = |level: &str, what: &str| {
            let i = ACCESSES.iter().position(|a| a.level == level && a.what.starts_with(what)).unwrap();
            c.accesses[i]
        };
        assert_eq!(row("global", "loads"), 1);
        assert_eq!(row("shared", "stores"), 1, "predicated stores count");
        assert_eq!(row("local", "stores"), 1);
        assert_eq!(row("parameter", "loads"), 1);
        assert_eq!(row("barrier", "block"), 1);
        assert_eq!(row("global", "stores"), 0);
        assert_eq!(c.generic, 1, "ld.b32 names no state space");
        assert_eq!(c.vectors, (1, 1));
    }

    const SASS: &str = "\t.section\t.text.k,\"ax\",@progbits\nk:\n.text.k:\n\t//## File \"/x/kernels-gpu/src/t.rs\", line 98\n        /*0330*/              @!P4 LDG.E.128 R4, desc[UR6][R14.64] ;\n        /*0340*/                   STS [R21], R14 ;\n\t//## File \"/x/kernels-gpu/src/device.rs\", line 108 inlined at \"/x/kernels-gpu/src/t.rs\", line 97\n\t//## File \"/x/kernels-gpu/src/t.rs\", line 97\n        /*0350*/                   LDS.128 R8, [R2] ;\n        /*0360*/                   LDS.128 R12, [R2+0x10] ;\n\t//## File \"/r/lib/rustlib/src/rust/library/core/src/x.rs\", line 57\n        /*0440*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n        /*0450*/                   EXIT ;\n";

    #[test]
    fn the_device_module_its_folder_and_the_api_crate_are_helpers() {
        let root = "/work/memlab/";
        for lesson in ["kernels-gpu/src/transpose.rs", "kernels-gpu/src/sgemm/vector.rs", "kernels-gpu/src/devices.rs"]
        {
            assert!(is_lesson_file(&format!("{root}{lesson}")), "{lesson}");
        }
        for helper in ["kernels-gpu/src/device.rs", "kernels-gpu/src/device/tma.rs", "device-api/src/shared.rs"] {
            assert!(
                !is_lesson_file(&format!("{root}{helper}")) && is_helper_file(&format!("{root}{helper}")),
                "{helper}"
            );
        }
        assert_eq!(short_path("/work/memlab/device-api/src/shared.rs"), "device-api/src/shared.rs");
        assert_eq!(short_path("/work/memlab/kernels-gpu/src/device/tma.rs"), "device/tma.rs");
    }

    #[test]
    fn parses_sass_with_lines_and_groups_by_lesson_line() {
        let f = parse_sass(SASS);
        let k = &f["k"];
        assert_eq!(k.len(), 6);
        assert_eq!((k[0].opcode.as_str(), k[0].base(), k[0].width()), ("LDG.E.128", "LDG", Some(128)));
        assert_eq!(k[0].line, Some(("/x/kernels-gpu/src/t.rs".into(), 98)));
        assert!(k[0].inlined_at.is_empty());
        assert_eq!(k[2].line, Some(("/x/kernels-gpu/src/device.rs".into(), 108)));
        assert_eq!(k[2].inlined_at, vec![("/x/kernels-gpu/src/t.rs".to_string(), 97)]);
        assert_eq!(k[3].inlined_at, k[2].inlined_at, "the chain holds until the next block");
        assert!(k[4].inlined_at.is_empty() && k[4].base() == "BAR", "a new block starts a new chain");
        let counts = sass_counts(k);
        assert_eq!(counts.iter().sum::<usize>(), 5, "EXIT is no memory instruction");
        let lines = by_source_line(k, "k");
        assert_eq!(lines.len(), 3);
        assert_eq!((lines[0].file.as_str(), lines[0].line, &lines[0].helper), ("t.rs", 98, &None));
        assert_eq!(lines[0].ops, vec![("LDG.E.128".to_string(), 1), ("STS".to_string(), 1)]);
        // The helper's loads are credited to the lesson line that calls it.
        assert_eq!((lines[1].file.as_str(), lines[1].line), ("t.rs", 97));
        assert_eq!(lines[1].helper, Some(("device.rs".to_string(), 108)));
        assert_eq!(lines[1].ops, vec![("LDS.128".to_string(), 2)]);
        // Rust's library, not inlined from a lesson line: its own line, not a lesson line.
        assert_eq!((lines[2].file.as_str(), lines[2].line, &lines[2].helper), ("core/src/x.rs", 57, &None));
        assert!(lines[..2].iter().all(|l| l.lesson) && !lines[2].lesson);
        assert_eq!(lines[0].text, None, "the file is not on this machine");
    }

    /// [`by_source_line`] of kernel `entry` in the SASS `sass` writes from the paths of
    /// `files` (name, text), written under a scratch `kernels-gpu/src/`.
    fn lines_of(files: &[(&str, &str)], entry: &str, sass: impl Fn(&[String]) -> String) -> Vec<SourceLine> {
        let root = std::env::temp_dir().join(format!("memlab-inspect-{entry}-{}", std::process::id()));
        let dir = root.join("kernels-gpu/src");
        std::fs::create_dir_all(&dir).unwrap();
        let paths: Vec<String> = files
            .iter()
            .map(|(name, text)| {
                std::fs::write(dir.join(name), text).unwrap();
                dir.join(name).to_str().unwrap().to_string()
            })
            .collect();
        let lines = by_source_line(&parse_sass(&sass(&paths))[entry], entry);
        std::fs::remove_dir_all(&root).unwrap();
        lines
    }

    #[test]
    fn the_kernel_macros_code_is_credited_to_the_kernels_own_line() {
        let lesson = "kernel! {\n    /// doc\n    pub fn k(a: u32) {\n        let x = a;\n    }\n}\n";
        let lines = lines_of(&[("t.rs", lesson)], "k", |p| {
            format!(
                ".text.k:\n\t//## File \"/x/device-api/src/kernel.rs\", line 98\n        /*0010*/ LDC R1, c[0x0][0x28] \
                 ;\n\t//## File \"{}\", line 4\n        /*0020*/ LDG.E R2, desc[UR4][R2.64] ;\n",
                p[0]
            )
        });
        assert_eq!((lines[0].file.as_str(), lines[0].line), ("t.rs", 3), "{lines:?}");
        assert_eq!(lines[0].helper, Some(("device-api/src/kernel.rs".to_string(), 98)));
        assert_eq!(lines[0].text.as_deref(), Some("pub fn k(a: u32) {"));
        assert_eq!((lines[1].line, &lines[1].helper), (4, &None));
    }

    #[test]
    fn a_helper_load_with_no_lesson_frame_is_its_own_row_after_the_lesson_lines() {
        // A shared-memory load of the device API whose chain lost its lesson frame (merged from
        // two call sites): not the kernel's `fn` line, which gets the parameter load only.
        let lesson = "kernel! {\n    /// doc\n    pub fn k(a: u32) {\n        let x = a;\n    }\n}\n";
        let lines = lines_of(&[("t.rs", lesson)], "k", |p| {
            format!(
                ".text.k:\n\t//## File \"/x/device-api/src/shared.rs\", line 89\n        /*0000*/ LDS R3, [R2] ;\n\t//## \
                 File \"/x/device-api/src/kernel.rs\", line 98\n        /*0010*/ LDC R1, c[0x0][0x28] ;\n\t//## File \
                 \"{}\", line 4\n        /*0020*/ LDG.E R2, desc[UR4][R2.64] ;\n",
                p[0]
            )
        });
        let shown: Vec<String> =
            lines.iter().map(|l| format!("{} {}:{} {:?}", l.lesson, l.file, l.line, l.ops)).collect();
        assert_eq!(
            shown,
            [
                r#"true t.rs:3 [("LDC", 1)]"#,
                r#"true t.rs:4 [("LDG.E", 1)]"#,
                r#"false device-api/src/shared.rs:89 [("LDS", 1)]"#,
            ]
        );
        assert_eq!(lines[2].helper, None);
    }

    #[test]
    fn a_macro_declared_kernel_is_credited_to_its_macros_fn_line() {
        // Line 3 declares the kernels, line 8 expands the macro into `k_1` (its code's line).
        let lesson = "macro_rules! entries {\n    ($($name:ident),*) => {$( kernel! {\n        pub fn $name(a: u32) \
                      {\n            body(a)\n        }\n    } )*};\n}\nentries!(k_1);\n";
        // The line tables of the first instruction lack the macro's frame: its file is skipped.
        let other = "fn tile(a: u32) {\n    a\n}\n";
        let lines = lines_of(&[("m.rs", lesson), ("s.rs", other)], "k_1", |p| {
            let (lesson, other) = (&p[0], &p[1]);
            format!(
                ".text.k_1:\n\t//## File \"{other}\", line 2\n        /*0000*/ IADD3 R1, R1, R2, RZ ;\n\t//## File \
                 \"/x/device-api/src/kernel.rs\", line 98\n        /*0010*/ LDC R1, c[0x0][0x28] ;\n\t//## File \
                 \"/x/kernels-gpu/src/device.rs\", line 5 inlined at \"{lesson}\", line 8\n\t//## File \"{lesson}\", \
                 line 8\n        /*0020*/ LDG.E R2, desc[UR4][R2.64] ;\n"
            )
        });
        assert_eq!((lines[0].file.as_str(), lines[0].line), ("m.rs", 3), "{lines:?}");
        assert_eq!(lines[0].text.as_deref(), Some("pub fn $name(a: u32) {"));
        assert_eq!(lines[0].helper, Some(("device-api/src/kernel.rs".to_string(), 98)));
        assert_eq!((lines[1].line, &lines[1].helper), (8, &Some(("device.rs".to_string(), 5))));
    }
}
