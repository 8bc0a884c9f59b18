//! `memlab inspect NAME`: what one kernel does to each memory level, from its code (no GPU):
//! PTX and SASS memory instructions by level, ptxas's registers and spills, and the Rust source
//! line of each SASS memory instruction.

use anyhow::Result;

use super::occupancy::parse_cc;
use crate::present::table::{self, Layout};
use crate::ptx::inspect::{self, ACCESSES, LINES_ARCH, LINES_PTX, SassInstr};
use crate::ptx::ptxas::PtxasKernel;
use crate::{present::report, ptx, ptx::ptxas, refuse};

/// Options of `inspect`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Kernel entry point, e.g. transpose_padded.
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// Print the kernels of the PTX for --cc, one per line, instead.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
    /// Compute capability to assemble the SASS for, e.g. 9.0.
    #[arg(long, default_value = "9.0", value_parser = parse_cc)]
    pub cc: (u32, u32),
}

/// Prints the kernel's memory profile; SASS parts are replaced by a note when ptxas or
/// nvdisasm are missing.
pub fn run(args: Args) -> Result<bool> {
    let (major, minor) = args.cc;
    let Some(p) = ptx::for_device(args.cc) else { refuse!("no embedded PTX runs on cc {major}.{minor}") };
    let tensor = ptx::runs_tensor(args.cc).then_some(&ptx::TENSOR);
    let Some(name) = args.name.as_deref() else {
        for name in ptx::kernel_names(p.text).into_iter().chain(tensor.map_or(vec![], |t| ptx::kernel_names(t.text))) {
            println!("{name}");
        }
        return Ok(true);
    };
    // The tensor ladder's kernels are only in the arch-specific sm_90a PTX, assembled as such.
    let p = tensor.filter(|t| ptx::kernel_names(t.text).contains(&name)).unwrap_or(p);
    ptx::check_kernel(p, name)?;
    let Some(body) = ptx::entry_body(p.text, name) else {
        refuse!("kernel `{name}` has no body in the {} PTX", p.arch)
    };
    let layout = Layout::current();
    let sass_arch = if p.arch == ptx::TENSOR.arch { p.arch.to_string() } else { format!("sm_{major}{minor}") };
    println!("# {name}: memory instructions (PTX {}, SASS {sass_arch})\n", p.arch);
    println!("{}\n", table::text(layout, "Static counts: each instruction once, however often it runs."));

    // The line-table PTX has the same code as the sm_90 PTX (tests compare the SASS).
    let line_info = p.arch == LINES_ARCH;
    let source = if line_info { LINES_PTX } else { p.text };
    let sass = inspect::entry_sass(source, &sass_arch, line_info, name);
    let figures = ptxas::run_entry(p.text, &sass_arch, name);
    match &figures {
        Ok(Some(k)) => println!(
            "{}\n",
            table::text(
                layout,
                &format!(
                    "ptxas -arch={sass_arch}: {} registers per thread, {} B stack frame, {} B spill stores, {} B spill loads, {} B static shared memory",
                    k.regs, k.stack_bytes, k.spill_stores, k.spill_loads, k.smem_bytes
                )
            )
        ),
        Ok(None) => println!("ptxas reported nothing for {name}\n"),
        Err(e) => println!("ptxas figures not available: {e:#}\n"),
    }

    let ptx_counts = inspect::ptx_counts(body);
    let sass_counts = sass.as_ref().ok().map(|s| inspect::sass_counts(s));
    let rows = ACCESSES.iter().enumerate().map(|(i, a)| {
        vec![
            a.level.to_string(),
            a.what.to_string(),
            a.ptx.join(" "),
            ptx_counts.accesses[i].to_string(),
            a.sass.join(" "),
            sass_counts.as_ref().map_or("n/a".into(), |c| c[i].to_string()),
        ]
    });
    let header = ["level", "access", "PTX", "PTX count", "SASS", "SASS count"].map(String::from);
    println!("{}\n", report::table(header, rows));
    let (v2, v4) = ptx_counts.vectors;
    println!("PTX: {v2} .v2 and {v4} .v4 vector accesses; {} generic ld/st (no state space)", ptx_counts.generic);
    if let Some(note) = local_note(&ptx_counts, sass_counts.as_deref(), figures.as_ref().ok().and_then(Option::as_ref))
    {
        println!("\n{}\n", table::text(layout, &note));
    }
    if let Some(pipeline) = pipeline_note(body) {
        println!("\n{}\n", table::text(layout, &pipeline));
    }

    match &sass {
        Ok(instrs) => print_sass(layout, instrs, name, p.arch, line_info),
        Err(e) => println!("SASS not available: {e:#}"),
    }
    Ok(true)
}

/// What the PTX's local accesses became: `ld.local`/`st.local` with no `LDL`/`STL` in the SASS
/// are stack slots ptxas moved to registers, not spills; `LDL`/`STL` do reach local memory.
pub fn local_note(ptx: &inspect::PtxCounts, sass: Option<&[usize]>, figures: Option<&PtxasKernel>) -> Option<String> {
    let row = |what: &str| ACCESSES.iter().position(|a| a.level == "local" && a.what.starts_with(what));
    let (loads, stores) = (row("loads")?, row("stores")?);
    let (ptx_local, sass) = (ptx.accesses[loads] + ptx.accesses[stores], sass?);
    let sass_local = sass[loads] + sass[stores];
    let frame = figures.map_or(String::new(), |k| {
        format!(
            " (ptxas: {} B stack frame, {} B spill stores, {} B spill loads)",
            k.stack_bytes, k.spill_stores, k.spill_loads
        )
    });
    match (ptx_local, sass_local) {
        (0, 0) => None,
        (p, 0) => Some(format!(
            "Local memory: the PTX's {p} ld.local/st.local are stack slots LLVM gave a local array or struct; \
             ptxas kept them all in registers, so the SASS has no LDL/STL{frame}. This is not spilling: \
             nothing of this kernel reaches local memory."
        )),
        (_, s) => {
            let why = match figures {
                Some(k) if k.spill_stores + k.spill_loads > 0 => "registers ptxas spilled for lack of room",
                Some(_) => "a stack array (indexed at run time, so not kept in registers), no spills",
                None => "a stack array indexed at run time, or registers spilled",
            };
            Some(format!(
                "Local memory: {s} LDL/STL in the SASS reach local memory (cached in L1, backed by DRAM){frame}: {why}."
            ))
        }
    }
}

/// The Hopper pipeline instructions of a kernel's PTX body, each with its count, and the
/// registers `setmaxnreg` leaves each warpgroup (PTX ISA, "wgmma.mma_async",
/// "cp.async.bulk.tensor", "mbarrier.try_wait", "setmaxnreg"); `None` when it has none.
pub fn pipeline_note(body: &str) -> Option<String> {
    const OPS: [(&str, &str); 6] = [
        ("wgmma.mma_async", "warpgroup MMAs from shared-memory descriptors"),
        ("cp.async.bulk.tensor", "TMA tile copies"),
        ("multicast::cluster", "of them multicast to the cluster"),
        ("mbarrier.arrive.expect_tx", "barrier arrivals that expect TMA bytes"),
        ("mbarrier.try_wait", "barrier waits"),
        ("fence.proxy.async", "async-proxy fences"),
    ];
    let counts: Vec<String> = OPS
        .iter()
        // Lines, not opcodes: `multicast::cluster` is a qualifier inside a TMA copy's opcode.
        .map(|(op, what)| (body.lines().filter(|l| !l.trim().starts_with("//") && l.contains(op)).count(), what))
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let setmaxnreg: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix("setmaxnreg."))
        .map(|rest| {
            let dir = if rest.starts_with("dec") { "down to" } else { "up to" };
            format!("{dir} {}", rest.split_whitespace().last().unwrap_or("").trim_end_matches(';'))
        })
        .collect();
    if counts.is_empty() && setmaxnreg.is_empty() {
        return None;
    }
    let mut note = format!("Hopper pipeline (PTX): {}.", counts.join(", "));
    if !setmaxnreg.is_empty() {
        note.push_str(&format!(" setmaxnreg sets a warpgroup's registers per thread {}.", setmaxnreg.join(", ")));
    }
    Some(note)
}

/// The first column of a row whose instructions the line tables tie to no lesson line.
const NO_LESSON_LINE: &str = "(no lesson line)";

fn print_sass(layout: Layout, instrs: &[SassInstr], name: &str, ptx_arch: &str, line_info: bool) {
    let memory: Vec<&SassInstr> = instrs.iter().filter(|i| inspect::is_memory(i)).collect();
    let wide = |w| memory.iter().filter(|i| i.width() == Some(w)).count();
    let summary = format!(
        "SASS: {} instructions, {} of them memory; {} 64-bit and {} 128-bit accesses",
        instrs.len(),
        memory.len(),
        wide(64),
        wide(128)
    );
    println!("{}\n", table::text(layout, &summary));
    if !line_info {
        println!("{}", table::text(layout, &no_lines_note(ptx_arch)));
        return;
    }
    println!("## Rust source -> SASS memory instructions\n");
    let rows: Vec<Vec<String>> = inspect::by_source_line(instrs, name)
        .into_iter()
        .map(|s| {
            let ops: Vec<String> = s.ops.iter().map(|(op, n)| format!("{op} x{n}")).collect();
            let text = s.text.map_or("(source not on this machine)".into(), |t| format!("`{}`", clip(&t, 70)));
            let own = format!("{}:{}", s.file, s.line);
            let (lesson, helper) = match (s.lesson, s.helper) {
                (true, helper) => (own, helper.map_or(String::new(), |(f, l)| format!("{f}:{l}"))),
                (false, _) => (NO_LESSON_LINE.to_string(), own),
            };
            vec![lesson, helper, text, ops.join(", ")]
        })
        .collect();
    // Too narrow for the four columns with their words whole: a bullet per row.
    let fitted = match layout {
        Layout::Terminal(width) => fit_source_rows(&rows, width.into()),
        Layout::Markdown => Some(rows.clone()),
    };
    let helper_at = if fitted.is_some() { "is in the second column" } else { "follows it in parentheses" };
    let intro = format!(
        "Each lesson line (files under kernels-gpu/src/) with the SASS memory instructions it became; where they \
         come from a helper it calls (device.rs, the device API, Rust's core), the helper's line {helper_at} (the \
         inlining chain of the line tables). Last, as \"{NO_LESSON_LINE}\", a helper's or Rust's library line whose \
         chain names no lesson line (code the compiler merged from several lines, or did not inline)."
    );
    println!("{}\n", table::text(layout, &intro));
    match fitted {
        Some(rows) => {
            println!("{}", report::table(["lesson line", "helper line", "Rust", "SASS"].map(String::from), rows))
        }
        None => {
            for r in rows {
                let helper = if r[1].is_empty() { String::new() } else { format!(" ({})", r[1]) };
                println!("{}", table::bullet(layout, &format!("{}{helper}: {}: {}", r[0], r[2], r[3])));
            }
        }
    }
}

/// Characters of a path per line in the source table: the longest piece between separators
/// of the lab's paths (`core_arch/src/`, `transpose.rs:176`) fits.
const PATH_LINE: usize = 16;

/// The source table's cells broken into lines for a `width`-column terminal, never inside a
/// word: the paths at spaces and path separators ([`table::break_lines`]) at [`PATH_LINE`], the
/// SASS at its longest opcode, the Rust ([`table::break_code`]) in what is left (each column
/// takes 3 more for padding and border, the table 1), and at least its longest piece. Where
/// that piece does not fit beside whole opcodes, the opcodes break after their modifiers' dots
/// too (`BAR.SYNC.` / `DEFER_BLOCKING`). `None` when even then the table is wider than `width`.
fn fit_source_rows(rows: &[Vec<String>], width: usize) -> Option<Vec<Vec<String>>> {
    let broken =
        |c: usize, w: usize, by: fn(&str, usize) -> String| rows.iter().map(|r| by(&r[c], w)).collect::<Vec<_>>();
    let lines = |cells: &[String]| cells.iter().flat_map(|c| c.lines()).map(|l| l.chars().count()).max().unwrap_or(0);
    let (lesson, helper) = (broken(0, PATH_LINE, table::break_lines), broken(1, PATH_LINE, table::break_lines));
    let rust_piece = rows.iter().map(|r| table::longest_code_piece(&r[2])).max().unwrap_or(0);
    let left = |ops: &[String]| {
        let used = 1 + 4 * 3 + lines(&lesson).max(11) + lines(&helper).max(11) + lines(ops).max(4);
        width.saturating_sub(used)
    };
    let longest_opcode = rows.iter().flat_map(|r| r[3].split_whitespace()).map(|o| o.chars().count()).max();
    let mut ops = broken(3, longest_opcode.unwrap_or(0), table::break_lines);
    if left(&ops) < rust_piece {
        let piece = rows.iter().map(|r| table::longest_code_piece(&r[3])).max().unwrap_or(0);
        ops = broken(3, piece, table::break_code);
    }
    if left(&ops) < rust_piece.max(PATH_LINE) {
        return None;
    }
    let rust = broken(2, left(&ops), table::break_code);
    let columns = [lesson, helper, rust, ops];
    Some((0..rows.len()).map(|i| columns.iter().map(|c| c[i].clone()).collect()).collect())
}

/// Why a kernel of the `ptx_arch` PTX has no Rust source lines: the build has a line-table twin
/// of the sm_90 PTX only ([`LINES_ARCH`]). An older target's kernels are in that PTX too; the
/// sm_90a PTX's tensor ladder is in no other.
fn no_lines_note(ptx_arch: &str) -> String {
    if ptx_arch == ptx::TENSOR.arch {
        format!(
            "Rust source lines: none for the {ptx_arch} PTX's kernels (the tensor ladder): only the {LINES_ARCH} PTX \
             has a line-table build."
        )
    } else {
        format!(
            "Rust source lines: not shown for the {ptx_arch} PTX; only the {LINES_ARCH} PTX carries line tables \
             (`--cc 9.0` shows them)."
        )
    }
}

/// The first `max` characters of `text`, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_without_source_lines_advises_only_what_shows_them() {
        // The tensor ladder is in no PTX with line tables: no `--cc` shows its lines.
        let tensor = no_lines_note(ptx::TENSOR.arch);
        assert_eq!(
            tensor,
            "Rust source lines: none for the sm_90a PTX's kernels (the tensor ladder): only the sm_90 PTX has a \
             line-table build."
        );
        // An sm_70 kernel is in the sm_90 PTX too, whose line tables --cc 9.0 reads.
        let older = no_lines_note("sm_70");
        assert!(older.ends_with("only the sm_90 PTX carries line tables (`--cc 9.0` shows them)."), "{older}");
        let sm70 = ptx::for_device((7, 0)).unwrap();
        let sm90 = ptx::for_device((9, 0)).unwrap();
        assert!(ptx::kernel_names(sm70.text).iter().all(|k| ptx::kernel_names(sm90.text).contains(k)));
    }

    #[test]
    fn the_pipeline_note_counts_the_tensor_instructions_and_the_register_split() {
        let body = ptx::entry_body(ptx::TENSOR.text, "tensor_3_specialized").unwrap();
        let note = pipeline_note(body).unwrap();
        assert!(note.contains(" warpgroup MMAs ") && note.contains(" TMA tile copies"), "{note}");
        let (up, down) = (memlab_contracts::tensor::CONSUMER_REGS, memlab_contracts::tensor::PRODUCER_REGS);
        assert!(note.ends_with(&format!("per thread up to {up}, down to {down}.")), "{note}");
        // Rung 5 multicasts its shared operand; an SGEMM rung has none of these instructions.
        let multicast = pipeline_note(ptx::entry_body(ptx::TENSOR.text, "tensor_5_multicast").unwrap()).unwrap();
        assert!(multicast.contains("of them multicast to the cluster"), "{multicast}");
        let sgemm = ptx::for_device((9, 0)).unwrap();
        assert_eq!(pipeline_note(ptx::entry_body(sgemm.text, "sgemm_6_double_buffered").unwrap()), None);
    }
}
