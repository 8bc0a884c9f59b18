//! The line-table PTX (`build.rs`'s `sm_90_lines` build) made ready for `ptxas -lineinfo`, with
//! the inlining chain of every instruction, so that `nvdisasm -gi` credits a SASS instruction
//! to the lesson's line that called a helper, not only to the helper's line.
//!
//! rustc's LLVM writes each PTX instruction's own line (`.loc`) and, in the DWARF
//! `.debug_info` section, one `DW_TAG_inlined_subroutine` per inlined call: the callee, its
//! call site (`DW_AT_call_file`, `DW_AT_call_line`) and the PTX labels around its code
//! (`DW_AT_low_pc`, `DW_AT_high_pc`). ptxas rejects LLVM's DWARF sections but reads the
//! `inlined_at` form of `.loc` (PTX ISA 7.2+, "Debugging Directives: .loc"), which newer LLVMs
//! write themselves. This module writes it from the DWARF: each `.loc` becomes the chain of
//! call sites down to the instruction's line, the DWARF sections are dropped, and a
//! `.debug_str` section names the inlined functions.
//!
//! LLVM gives an inlined call one label range from its first to its last instruction (no
//! `.debug_ranges` for PTX), so ranges of calls whose code was interleaved overlap: an
//! instruction is credited to the tightest call containing it whose function can hold its
//! line (a call that itself calls from another file, or a leaf call from another file than its
//! call site), else to the caller.
//!
//! The labels no instruction names go with it (LLVM writes `$L__tmp*`, `$L__func_begin*`/`_end*`
//! for the DWARF only): ptxas
//! starts a basic block at every label, so left in they change its schedule (measured with
//! CUDA 13's ptxas: the TMA bulk copy's 384 SASS instructions became 536), and the SASS shown
//! would not be the release build's.

use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use anyhow::{Context, Result, bail};

use crate::ptx::memo::Memo;

/// `DW_TAG_inlined_subroutine` (DWARF 2, section 7.5.3).
const INLINED: u64 = 0x1d;
/// `DW_TAG_subprogram`.
const SUBPROGRAM: u64 = 0x2e;

/// The line-table PTX for `ptxas -lineinfo`: `.loc` directives with their inlining chains, no
/// DWARF sections, `.target` without `debug`.
///
/// # Errors
/// DWARF that this reader does not know (a form other than LLVM's line-tables-only ones), or a
/// label it does not find in the code.
pub fn with_inlining(ptx: &str) -> Result<Arc<String>> {
    // `inspect` asks once per kernel it shows, and reading a whole module's DWARF takes seconds.
    static DONE: Memo<String> = Memo::new();
    DONE.get(ptx, || rewrite(ptx))
}

/// [`with_inlining`], computed.
fn rewrite(ptx: &str) -> Result<String> {
    let (code, sections) = match ptx.find("\t.section\t.debug_") {
        Some(at) => ptx.split_at(at),
        None => (ptx, ""),
    };
    let abbrev = section(sections, ".debug_abbrev");
    let info = section(sections, ".debug_info");
    let dies = if info.is_empty() { Vec::new() } else { parse_dies(&items(abbrev)?, &items(info)?)? };
    let positions = label_positions(code);
    let dies = Dies::new(dies, &positions);
    let referenced = referenced_labels(code);
    let mut names: Vec<String> = Vec::new();
    let mut out = String::with_capacity(code.len() * 2);
    let mut position = 0usize;
    for line in code.lines() {
        let t = line.trim();
        if let Some(arch) = t.strip_prefix(".target").and_then(|a| a.trim().strip_suffix(", debug")) {
            out += &format!(".target {arch}\n");
            continue;
        }
        if let Some(loc) = parse_loc(t) {
            let chain = chain(&dies, position, loc.0)?;
            out += &loc_directives(&dies, &chain, loc, &mut names);
            continue;
        }
        if is_instruction(t) {
            position += 1;
        }
        if t.strip_suffix(':').is_some_and(|label| label.starts_with('$') && !referenced.contains(label)) {
            continue;
        }
        out += line;
        out.push('\n');
    }
    if !names.is_empty() {
        out += "\t.section\t.debug_str\n\t{\n";
        for (i, name) in names.iter().enumerate() {
            let bytes: Vec<String> = name.bytes().chain([0]).map(|b| b.to_string()).collect();
            out += &format!("$L__memlab_fn{i}:\n.b8 {}\n", bytes.join(","));
        }
        out += "\t}\n";
    }
    Ok(out)
}

/// [`with_inlining`] with kernel `entry` alone: the header, that entry and the module's device
/// functions ([`crate::ptx::only_entry`]), then what follows the code (the `.file`
/// directives, the `.debug_str` naming the inlined functions), so that ptxas assembles one
/// kernel with its line tables. `None` when `ptx` has no kernel `entry`.
///
/// # Errors
/// As for [`with_inlining`].
pub fn entry_with_inlining(ptx: &str, entry: &str) -> Result<Option<String>> {
    let lined = with_inlining(ptx)?;
    let Some(alone) = crate::ptx::only_entry(&lined, entry) else { return Ok(None) };
    // The code ends with the last function's closing brace at the start of a line.
    let tail = lined.rfind("\n}\n").map_or("", |at| &lined[at + 3..]);
    Ok(Some(alone + tail))
}

/// The lines between `.section NAME` and its closing brace.
fn section<'a>(text: &'a str, name: &str) -> &'a str {
    let Some(start) = text.find(&format!("\t.section\t{name}\n")) else { return "" };
    let body = &text[start..];
    let open = body.find('{').map_or(body.len(), |i| i + 1);
    let close = body[open..].find("\n\t}").map_or(body.len(), |i| open + i);
    &body[open..close]
}

/// A datum of a DWARF section: a number `bytes` wide, or a symbol (a label, a section).
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Num(usize, u64),
    Sym(usize, String),
}

/// The `.b8`/`.b16`/`.b32`/`.b64` data of a section, in order.
fn items(body: &str) -> Result<Vec<Item>> {
    let mut out = Vec::new();
    for line in body.lines().map(str::trim) {
        let Some((kind, values)) = line.split_once(char::is_whitespace) else { continue };
        let bytes = match kind {
            ".b8" => 1,
            ".b16" => 2,
            ".b32" => 4,
            ".b64" => 8,
            _ => continue,
        };
        for v in values.split(',').map(str::trim) {
            out.push(match v.parse::<u64>() {
                Ok(n) => Item::Num(bytes, n),
                Err(_) => Item::Sym(bytes, v.to_string()),
            });
        }
    }
    Ok(out)
}

/// Reads DWARF values from [`Item`]s, keeping the byte offset.
struct Reader<'a> {
    items: &'a [Item],
    next: usize,
    offset: u64,
}

/// One attribute value.
enum Value {
    Num(u64),
    Sym(String),
    Text(String),
}

impl Reader<'_> {
    fn done(&self) -> bool {
        self.next >= self.items.len()
    }

    /// A little-endian number `bytes` wide (from one item or several `.b8`), or a symbol.
    fn read(&mut self, bytes: usize) -> Result<Value> {
        if let Some(Item::Sym(w, s)) = self.items.get(self.next) {
            self.next += 1;
            self.offset += *w as u64;
            return Ok(Value::Sym(s.clone()));
        }
        let (mut value, mut got) = (0u64, 0usize);
        while got < bytes {
            match self.items.get(self.next) {
                Some(Item::Num(w, n)) => {
                    value |= n << (8 * got);
                    got += w;
                    self.next += 1;
                }
                other => bail!("DWARF datum {other:?} where a {bytes}-byte number belongs"),
            }
        }
        self.offset += got as u64;
        Ok(Value::Num(value))
    }

    fn num(&mut self, bytes: usize) -> Result<u64> {
        match self.read(bytes)? {
            Value::Num(n) => Ok(n),
            _ => bail!("DWARF symbol where a number belongs"),
        }
    }

    fn uleb(&mut self) -> Result<u64> {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = self.num(1)?;
            value |= (byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 || shift > 63 {
                return Ok(value);
            }
        }
    }

    /// A value of DWARF form `form` (DWARF 2, section 7.5.4).
    fn value(&mut self, form: u64) -> Result<Value> {
        match form {
            0x01 => self.read(8),                       // addr (64-bit PTX)
            0x0b | 0x0c => self.read(1),                // data1, flag
            0x05 => self.read(2),                       // data2
            0x06 | 0x13 | 0x0e | 0x10 => self.read(4),  // data4, ref4, strp, ref_addr
            0x07 => self.read(8),                       // data8
            0x0f | 0x15 => self.uleb().map(Value::Num), // udata, ref_udata
            0x08 => {
                let mut bytes = Vec::new();
                loop {
                    match self.num(1)? {
                        0 => break,
                        b => bytes.push(b as u8),
                    }
                }
                Ok(Value::Text(String::from_utf8_lossy(&bytes).into_owned()))
            }
            other => bail!("DWARF form {other:#x} is not read by memlab's line-table reader"),
        }
    }
}

/// One DIE: a kernel (subprogram with code), an inlined call, or another entry.
#[derive(Debug, Clone, Default)]
struct Die {
    tag: u64,
    /// Its offset in the unit (what `DW_AT_abstract_origin` refers to).
    offset: u64,
    name: Option<String>,
    origin: Option<u64>,
    low: Option<String>,
    high: Option<String>,
    /// Call site: file number (the `.file` directives' numbers), line, column.
    call: (u32, u32, u32),
    children: Vec<usize>,
}

/// A DIE's shape: tag, whether children follow, `(attribute, form)` of each value.
type Abbreviation = (u64, bool, Vec<(u64, u64)>);

/// The DIEs of the one compile unit LLVM writes.
fn parse_dies(abbrev: &[Item], info: &[Item]) -> Result<Vec<Die>> {
    let mut table: HashMap<u64, Abbreviation> = HashMap::new();
    let mut r = Reader { items: abbrev, next: 0, offset: 0 };
    loop {
        let code = r.uleb()?;
        if code == 0 {
            break;
        }
        let (tag, children) = (r.uleb()?, r.num(1)? != 0);
        let mut attrs = Vec::new();
        loop {
            let (attr, form) = (r.uleb()?, r.uleb()?);
            if attr == 0 && form == 0 {
                break;
            }
            attrs.push((attr, form));
        }
        table.insert(code, (tag, children, attrs));
    }
    let mut r = Reader { items: info, next: 0, offset: 0 };
    // Unit header: length, version, abbreviation offset, address size.
    r.num(4)?;
    r.num(2)?;
    r.read(4)?;
    r.num(1)?;
    let mut dies: Vec<Die> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    while !r.done() {
        let offset = r.offset;
        let code = r.uleb()?;
        if code == 0 {
            open.pop();
            continue;
        }
        let (tag, has_children, attrs) = table.get(&code).with_context(|| format!("DWARF abbreviation {code}"))?;
        let mut die = Die { tag: *tag, offset, ..Die::default() };
        for &(attr, form) in attrs {
            let value = r.value(form)?;
            match (attr, value) {
                (0x03, Value::Text(s)) => die.name = Some(s),
                (0x31, Value::Num(n)) => die.origin = Some(n),
                (0x11, Value::Sym(s)) => die.low = Some(s),
                (0x12, Value::Sym(s)) => die.high = Some(s),
                (0x58, Value::Num(n)) => die.call.0 = n as u32,
                (0x59, Value::Num(n)) => die.call.1 = n as u32,
                (0x57, Value::Num(n)) => die.call.2 = n as u32,
                _ => {}
            }
        }
        let index = dies.len();
        if let Some(&p) = open.last() {
            dies[p].children.push(index);
        }
        dies.push(die);
        if *has_children {
            open.push(index);
        }
    }
    Ok(dies)
}

/// A PTX line that takes a place in the code (not a directive, label, brace or comment).
fn is_instruction(t: &str) -> bool {
    !(t.is_empty() || t.starts_with(['.', '/', '{', '}', ')']) || t.ends_with(':'))
}

/// Each label of the code and the place of the instruction that follows it.
fn label_positions(code: &str) -> HashMap<&str, usize> {
    let mut positions = HashMap::new();
    let mut position = 0;
    for t in code.lines().map(str::trim) {
        if let Some(label) = t.strip_suffix(':').filter(|l| l.starts_with('$')) {
            positions.insert(label, position);
        } else if is_instruction(t) {
            position += 1;
        }
    }
    positions
}

/// The labels the code itself names (branch targets, `.branchtargets` lists): any `$` name
/// on a line that does not define it.
fn referenced_labels(code: &str) -> HashSet<&str> {
    let mut names = HashSet::new();
    for t in code.lines().map(str::trim).filter(|t| !t.ends_with(':')) {
        for (at, _) in t.match_indices('$') {
            let end = t[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                .map_or(t.len(), |e| at + e);
            names.insert(&t[at..end]);
        }
    }
    names
}

/// `.loc FILE LINE COLUMN` as numbers.
fn parse_loc(t: &str) -> Option<(u32, u32, u32)> {
    let mut parts = t.strip_prefix(".loc")?.split_whitespace().map(|p| p.trim_end_matches(',').parse().ok());
    Some((parts.next()??, parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// The DIEs with what every `.loc` asks of them, found once (a search per `.loc` made the
/// inspect command quadratic: 80 s of CPU in a debug build for rung 8's 31,000 `.loc`s): each
/// DIE's span of code places, or the error of a label the code lacks (raised when the DIE is
/// asked about, as before), the kernels in DIE order, and each DIE's index by its offset.
struct Dies {
    dies: Vec<Die>,
    spans: Vec<Result<Option<(usize, usize)>, String>>,
    subprograms: Vec<usize>,
    by_offset: HashMap<u64, usize>,
}

impl Dies {
    fn new(dies: Vec<Die>, positions: &HashMap<&str, usize>) -> Dies {
        let at = |s: &str| positions.get(s).copied().ok_or_else(|| format!("DWARF label {s} not in the code"));
        let spans = dies
            .iter()
            .map(|d| match (&d.low, &d.high) {
                (Some(l), Some(h)) => Ok(Some((at(l)?, at(h)?))),
                _ => Ok(None),
            })
            .collect();
        let subprograms = (0..dies.len()).filter(|&i| dies[i].tag == SUBPROGRAM).collect();
        let mut by_offset = HashMap::new();
        for (i, d) in dies.iter().enumerate() {
            by_offset.entry(d.offset).or_insert(i);
        }
        Dies { dies, spans, subprograms, by_offset }
    }

    /// DIE `i`'s span of code places, if it has one.
    fn span(&self, i: usize) -> Result<Option<(usize, usize)>> {
        self.spans[i].clone().map_err(anyhow::Error::msg)
    }

    /// The name of the function DIE `i` is an inlined call of.
    fn origin_name(&self, i: usize) -> Option<String> {
        let origin = self.by_offset.get(&self.dies[i].origin?)?;
        self.dies[*origin].name.clone()
    }
}

impl std::ops::Index<usize> for Dies {
    type Output = Die;
    fn index(&self, i: usize) -> &Die {
        &self.dies[i]
    }
}

/// The inlined calls (outermost first) that hold the instruction at `position`, whose own
/// line is in file `file`.
fn chain(dies: &Dies, position: usize, file: u32) -> Result<Vec<usize>> {
    // The kernel whose code holds the position.
    let mut current = None;
    for &i in &dies.subprograms {
        if let Some((lo, hi)) = dies.span(i)?
            && (lo..hi).contains(&position)
        {
            current = Some(i);
        }
    }
    let Some(mut current) = current else { return Ok(Vec::new()) };
    let mut path = Vec::new();
    loop {
        let mut best: Option<(usize, usize)> = None;
        for &c in &dies[current].children {
            if dies[c].tag != INLINED {
                continue;
            }
            if let Some((lo, hi)) = dies.span(c)?
                && (lo..hi).contains(&position)
                && best.is_none_or(|(_, width)| hi - lo < width)
            {
                best = Some((c, hi - lo));
            }
        }
        match best {
            Some((c, _)) => {
                path.push(c);
                current = c;
            }
            None => break,
        }
    }
    // Ranges overlap: drop the innermost calls whose function cannot hold the line.
    while let Some(&d) = path.last() {
        let callee_files: Vec<u32> =
            dies[d].children.iter().filter(|&&c| dies[c].tag == INLINED).map(|&c| dies[c].call.0).collect();
        let holds = if callee_files.is_empty() { dies[d].call.0 != file } else { callee_files.contains(&file) };
        if holds {
            break;
        }
        path.pop();
    }
    Ok(path)
}

/// The `.loc` directives of one place: the outermost call site, each inlined function's call
/// site `inlined_at` its caller's, and the instruction's own line last.
fn loc_directives(dies: &Dies, chain: &[usize], own: (u32, u32, u32), names: &mut Vec<String>) -> String {
    let (file, line, column) = own;
    let Some(&first) = chain.first() else { return format!("\t.loc\t{file} {line} {column}\n") };
    let mut label = |d: usize| {
        let name = dies.origin_name(d).unwrap_or_else(|| "inlined".into());
        let i = names.iter().position(|n| *n == name).unwrap_or_else(|| {
            names.push(name);
            names.len() - 1
        });
        format!("$L__memlab_fn{i}")
    };
    let site = |d: usize| dies[d].call;
    let (f, l, c) = site(first);
    let mut out = format!("\t.loc\t{f} {l} {c}\n");
    for pair in chain.windows(2) {
        let ((f, l, c), (pf, pl, pc)) = (site(pair[1]), site(pair[0]));
        out += &format!("\t.loc\t{f} {l} {c}, function_name {}, inlined_at {pf} {pl} {pc}\n", label(pair[0]));
    }
    let last = *chain.last().expect("non-empty");
    let (pf, pl, pc) = site(last);
    out += &format!("\t.loc\t{file} {line} {column}, function_name {}, inlined_at {pf} {pl} {pc}\n", label(last));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel at line 10 of file 1 that inlines `helper` (file 2) at line 20, whose line 5
    /// inlines `leaf` (file 3, line 7); the kernel's own line 21 follows inside the helper's
    /// label range (LLVM's ranges overlap like this).
    const PTX: &str = ".version 7.8\n.target sm_90, debug\n.address_size 64\n\n.visible .entry k(\n)\n{\n\t.loc\t1 10 0\n$L__func_begin0:\n\tld.param.u64 \t%rd1, [k_param_0];\n$L__tmp0:\n\t.loc\t3 7 1\n\tld.global.u32 \t%r1, [%rd1];\n$L__tmp1:\n\t.loc\t1 21 0\n\tadd.s32 %r2, %r1, 1;\n\t.loc\t2 6 0\n\tst.global.u32 \t[%rd1], %r2;\n$L__tmp2:\n\tret;\n$L__func_end0:\n}\n\t.file\t1 \"/x/kernels-gpu/src/lesson.rs\"\n\t.file\t2 \"/x/kernels-gpu/src/device.rs\"\n\t.file\t3 \"/r/core/src/ptr.rs\"\n\t.section\t.debug_abbrev\n\t{\n.b8 1\n.b8 17\n.b8 1\n.b8 0\n.b8 0\n.b8 2\n.b8 46\n.b8 0\n.b8 3\n.b8 8\n.b8 32\n.b8 11\n.b8 0\n.b8 0\n.b8 3\n.b8 46\n.b8 1\n.b8 17\n.b8 1\n.b8 18\n.b8 1\n.b8 3\n.b8 8\n.b8 0\n.b8 0\n.b8 4\n.b8 29\n.b8 1\n.b8 49\n.b8 19\n.b8 17\n.b8 1\n.b8 18\n.b8 1\n.b8 88\n.b8 11\n.b8 89\n.b8 11\n.b8 0\n.b8 0\n.b8 5\n.b8 29\n.b8 0\n.b8 49\n.b8 19\n.b8 17\n.b8 1\n.b8 18\n.b8 1\n.b8 88\n.b8 11\n.b8 89\n.b8 5\n.b8 0\n.b8 0\n.b8 0\n\t}\n\t.section\t.debug_info\n\t{\n.b32 100\n.b8 2\n.b8 0\n.b32 .debug_abbrev\n.b8 8\n.b8 1\n.b8 2\n.b8 104,0\n.b8 1\n.b8 2\n.b8 108,0\n.b8 1\n.b8 3\n.b64 $L__func_begin0\n.b64 $L__func_end0\n.b8 107,0\n.b8 4\n.b32 12\n.b64 $L__tmp0\n.b64 $L__tmp2\n.b8 1\n.b8 20\n.b8 5\n.b32 16\n.b64 $L__tmp0\n.b64 $L__tmp1\n.b8 2\n.b8 5\n.b8 0\n.b8 0\n.b8 0\n.b8 0\n\t}\n\t.section\t.debug_macinfo\t{\t}\n";

    #[test]
    fn locs_carry_the_call_chain_and_dwarf_is_dropped() {
        let out = with_inlining(PTX).unwrap();
        assert!(out.contains(".target sm_90\n") && !out.contains(".debug_info") && !out.contains(".debug_abbrev"));
        // The leaf's load: kernel line 20 -> helper line 5 -> leaf line 7.
        let load = out.find("ld.global").unwrap();
        let before: Vec<&str> = out[..load].lines().rev().skip(1).take(3).collect();
        assert_eq!(before[2].trim(), ".loc\t1 20 0", "{out}");
        assert_eq!(before[1].trim(), ".loc\t2 5 0, function_name $L__memlab_fn0, inlined_at 1 20 0", "{out}");
        assert_eq!(before[0].trim(), ".loc\t3 7 1, function_name $L__memlab_fn1, inlined_at 2 5 0", "{out}");
        // The kernel's own line inside the helper's range stays the kernel's.
        assert!(out.contains("\t.loc\t1 21 0\n\tadd.s32"), "{out}");
        // The helper's own line: inlined at the kernel's line 20.
        assert!(out.contains(".loc\t2 6 0, function_name $L__memlab_fn0, inlined_at 1 20 0\n\tst.global"), "{out}");
        assert!(out.contains("$L__memlab_fn0:\n.b8 104,0\n$L__memlab_fn1:\n.b8 108,0\n"), "names in .debug_str: {out}");
        assert!(!out.contains("$L__tmp") && !out.contains("$L__func_"), "the DWARF's labels go: {out}");
    }

    #[test]
    fn branch_targets_stay_and_labels_no_instruction_names_go() {
        let ptx = ".target sm_90\n.visible .entry k()\n{\n$L__tmp0:\n\t@%p1 bra \t$L__BB0_2;\n$L__BB0_2:\n\tret;\n}\n";
        let out = with_inlining(ptx).unwrap();
        assert_eq!(*out, ".target sm_90\n.visible .entry k()\n{\n\t@%p1 bra \t$L__BB0_2;\n$L__BB0_2:\n\tret;\n}\n");
    }

    #[test]
    fn ptx_without_dwarf_passes_through() {
        let ptx = ".target sm_90\n.visible .entry k()\n{\n\t.loc\t1 3 0\n\tret;\n}\n";
        assert_eq!(*with_inlining(ptx).unwrap(), ptx);
    }
}
