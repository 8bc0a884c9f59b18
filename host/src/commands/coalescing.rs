//! `memlab coalescing`: one warp's global-memory access described on the command line (an
//! element per lane by stride or index expression, or fields of an array of structs), answered
//! by the coalescing model with no GPU: requests and L1 sectors per instruction, sectors per
//! request, L2 bytes and DRAM bytes, and the efficiency under the sector and 128-byte-segment models.

use anyhow::Result;
use serde::Serialize;

use crate::cli::count;
use crate::expr::Expr;
use crate::model::coalescing::{Instruction, SEGMENT_BYTES, VIRTUAL_ADDRESS_BITS, WarpTraffic};
use crate::{cli, present::report, refuse};

/// The largest access one lane makes in one instruction (a 128-bit load; Programming Guide,
/// "Device Memory Accesses").
const MAX_ACCESS: u64 = 16;

/// Options of `coalescing`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bytes each lane reads, 1..=16 (4 float, 8 double, 16 float4); a size no single load has
    /// (3, 12: float3) is read as the loads the compiler emits, one per aligned piece.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=MAX_ACCESS), conflicts_with = "fields")]
    pub elem: u64,
    /// Lane t reads element (or struct) t * STRIDE (default 1).
    #[arg(long, conflicts_with = "index")]
    pub stride: Option<u64>,
    /// Lane t reads element (or struct) EXPR, e.g. `t*2`, `(t%4)*8`, `t/8*9`.
    #[arg(long)]
    pub index: Option<String>,
    /// Byte address of element 0 (misalignment costs sectors)
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Active lanes, lanes 0..N (1..=32).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub lanes: u32,
    /// Array of structs: the struct's bytes; each field read is one instruction.
    #[arg(long = "struct", value_name = "BYTES", requires = "fields", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub struct_bytes: Option<u64>,
    /// Fields read, OFFSET:SIZE in bytes, comma-separated (e.g. 0:4,4:4,8:4).
    #[arg(long, requires = "struct_bytes", value_delimiter = ',', value_parser = field)]
    pub fields: Vec<(u64, u64)>,
    /// Print the answer as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Parses `OFFSET:SIZE`.
fn field(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("`{text}` is not a field OFFSET:SIZE in bytes, like 4:4 (SIZE 1..={MAX_ACCESS})");
    let (off, size) = text.split_once(':').ok_or_else(bad)?;
    let (off, size): (u64, u64) = (off.trim().parse().map_err(|_| bad())?, size.trim().parse().map_err(|_| bad())?);
    if !(1..=MAX_ACCESS).contains(&size) {
        return Err(bad());
    }
    Ok((off, size))
}

/// The loads one lane's `elem`-byte element takes, as (offset, bytes): one load when `elem` is
/// a load's size (1, 2, 4, 8, 16 bytes; PTX ISA, "ld": scalar and .v2/.v4 vector widths), else
/// one load per piece of its alignment, the largest power of two dividing it: a 12-byte
/// `float3` is three 4-byte loads, a 6-byte `short3` three 2-byte ones (CUDA C++ Programming
/// Guide, "Built-in Vector Types": a 3-component type has its component's alignment, and a load
/// must be naturally aligned).
pub fn element_loads(elem: u64) -> Vec<(u64, u64)> {
    let piece = 1 << elem.trailing_zeros();
    (0..elem / piece).map(|k| (k * piece, piece)).collect()
}

/// What the output says of the accesses (offset, bytes) no single load makes, or `None`.
fn split_note(accesses: &[(u64, u64)]) -> Option<String> {
    let mut sizes: Vec<u64> = accesses.iter().map(|a| a.1).filter(|l| element_loads(*l).len() > 1).collect();
    sizes.dedup();
    let each: Vec<String> = sizes
        .iter()
        .map(|&l| {
            let loads = element_loads(l);
            format!("{l} bytes as {} of {}", cli::count(loads.len(), "load"), cli::count(loads[0].1, "byte"))
        })
        .collect();
    (!each.is_empty()).then(|| {
        format!(
            "no single load reads {}: the compiler emits one load per piece of the alignment, {} (as for char3, \
             short3 or float3; Programming Guide, \"Built-in Vector Types\")",
            sizes.iter().map(|l| format!("{l} bytes")).collect::<Vec<_>>().join(" or "),
            each.join(", ")
        )
    })
}

/// The answer, as `--json` writes it.
#[derive(Serialize)]
struct Answer {
    pattern: String,
    active_lanes: u32,
    instructions: Vec<String>,
    /// Why an element takes several loads, when it does.
    split: Option<String>,
    traffic: WarpTraffic,
    l2_bytes: u64,
    dram_bytes: u64,
    sectors_per_request: f64,
    sector_efficiency: f64,
    segment_efficiency: f64,
    rule: String,
    source: String,
}

const RULE: &str = "a warp instruction is one request; it touches every aligned 32-byte sector that holds a byte \
                    any active lane accesses (L1 sectors add up over instructions); L2 moves each distinct sector \
                    once, DRAM each distinct 64-byte sector pair; the segment model counts aligned 128-byte \
                    segments instead";
/// Where the DRAM line's 64-byte fetch comes from.
const DRAM_SOURCE: &str = "measured on the H200 with Nsight Compute, docs/measurements/dram.md";
const SOURCE: &str = "CUDA C++ Best Practices Guide, \"Coalesced Access to Global Memory\" (cc 6.0 and later: \
                      32-byte sectors); a sector moved once for several instructions: measured on the H200";

/// Runs the model and prints its answer.
pub fn run(args: Args) -> Result<bool> {
    let index = args.index.as_deref().map(Expr::parse).transpose()?;
    let stride = args.stride.unwrap_or(1);
    let (unit, accesses): (u64, Vec<(u64, u64)>) = match args.struct_bytes {
        Some(size) => {
            for &(off, len) in &args.fields {
                if off.saturating_add(len) > size {
                    refuse!(
                        "field {off}:{len} ends past the {size}-byte struct: allowed fields lie in bytes 0..{size}"
                    );
                }
            }
            (size, args.fields.clone())
        }
        None => (args.elem, vec![(0, args.elem)]),
    };
    let split = split_note(&accesses);
    let accesses: Vec<(u64, u64)> = accesses
        .iter()
        .flat_map(|&(off, len)| element_loads(len).into_iter().map(move |(o, l)| (off + o, l)))
        .collect();
    let mut instructions = Vec::new();
    for &(field_off, len) in &accesses {
        let mut lanes = [None; 32];
        for (t, slot) in lanes.iter_mut().enumerate().take(args.lanes as usize) {
            let element = match &index {
                Some(e) => e.index(t as u32)?,
                None => t as u64 * stride,
            };
            let end = element
                .checked_mul(unit)
                .and_then(|b| b.checked_add(args.offset))
                .and_then(|b| b.checked_add(field_off + len))
                .filter(|&end| end <= 1 << VIRTUAL_ADDRESS_BITS);
            let Some(addr) = end.map(|end| end - len) else {
                refuse!(
                    "lane {t}'s address is past the GPU's {VIRTUAL_ADDRESS_BITS}-bit virtual address space: allowed \
                     bytes 0..2^{VIRTUAL_ADDRESS_BITS} (NVIDIA Tesla P100 whitepaper, \"Unified Memory\"; the same since \
                     Pascal)"
                )
            };
            // Loads and stores of 1, 2, 4, 8 or 16 bytes must be naturally aligned.
            if len.is_power_of_two() && !addr.is_multiple_of(len) {
                refuse!(
                    "lane {t} reads {len} bytes at byte {addr}: a {len}-byte access must start at a multiple of {len} \
                     (Programming Guide, \"Device Memory Accesses\"); change --offset, the stride or the field"
                );
            }
            *slot = Some(addr);
        }
        instructions.push(Instruction { elem_bytes: len, lanes });
    }
    let traffic = WarpTraffic::of(&instructions);
    let pattern = match (args.struct_bytes, &args.index) {
        (Some(size), None) => format!("array of {size}-byte structs, lane t at struct {stride}*t"),
        (Some(size), Some(text)) => format!("array of {size}-byte structs, lane t at struct {text}"),
        (None, None) => format!("{}-byte elements, lane t at element {stride}*t", args.elem),
        (None, Some(text)) => format!("{}-byte elements, lane t at element {text}", args.elem),
    };
    let answer = Answer {
        pattern: format!("{pattern}, element 0 at byte {}", args.offset),
        active_lanes: args.lanes,
        instructions: accesses.iter().map(|(off, len)| format!("{len} B at +{off}")).collect(),
        split,
        l2_bytes: traffic.l2_bytes(),
        dram_bytes: traffic.dram_bytes(),
        sectors_per_request: traffic.sectors_per_request(),
        sector_efficiency: traffic.sector_efficiency(),
        segment_efficiency: traffic.segment_efficiency(),
        traffic,
        rule: RULE.into(),
        source: SOURCE.into(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print_text(&answer);
    }
    Ok(true)
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn print_text(a: &Answer) {
    let t = &a.traffic;
    println!(
        "{}\n",
        report::wrap(&format!("Global-memory coalescing: {}, {} active lanes", a.pattern, a.active_lanes))
    );
    let mut rows: Vec<Vec<String>> = a
        .instructions
        .iter()
        .zip(&t.instructions)
        .map(|(what, &(sectors, segments, useful))| {
            let requests = u64::from(sectors > 0);
            vec![
                what.clone(),
                requests.to_string(),
                sectors.to_string(),
                format!("{}", if requests == 0 { 0 } else { sectors }),
                segments.to_string(),
                useful.to_string(),
            ]
        })
        .collect();
    if a.instructions.len() > 1 {
        rows.push(vec![
            "all (L1)".into(),
            t.requests.to_string(),
            t.l1_sectors.to_string(),
            format!("{:.1}", t.sectors_per_request()),
            t.instructions.iter().map(|i| i.1).sum::<u64>().to_string(),
            t.instructions.iter().map(|i| i.2).sum::<u64>().to_string(),
        ]);
    }
    let header = ["instruction", "requests", "L1 sectors", "sectors/request", "128-B segments", "useful B"];
    if let Some(split) = &a.split {
        println!("{}\n", report::wrap(split));
    }
    println!("{}\n", report::table(header.map(String::from), rows));
    let l2 = format!(
        "L2: {} = {} B (a sector counted once however many instructions touch it); {} useful B",
        count(t.l2_sectors, "distinct sector"),
        a.l2_bytes,
        t.useful_bytes
    );
    println!("{}", report::wrap(&l2));
    let dram = format!(
        "DRAM: {} = {} B when they miss in L2 (a miss reads the sector's pair: {})",
        count(t.dram_fetches, "distinct 64-byte sector pair"),
        a.dram_bytes,
        DRAM_SOURCE
    );
    println!("{}", report::wrap(&dram));
    let efficiency = format!(
        "efficiency: sector model {} ({} useful / {} B moved), 128-byte segment model {} ({} / {} B)",
        percent(a.sector_efficiency),
        t.useful_bytes,
        a.l2_bytes,
        percent(a.segment_efficiency),
        t.useful_bytes,
        t.segments * SEGMENT_BYTES
    );
    println!("{}", report::wrap(&efficiency));
    println!("{}", report::wrap(&format!("rule: {}", a.rule)));
    println!("{}", report::wrap(&format!("source: {}", a.source)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_no_load_has_is_split_at_its_alignment() {
        for size in [1, 2, 4, 8, 16] {
            assert_eq!(element_loads(size), vec![(0, size)]);
        }
        assert_eq!(element_loads(3), vec![(0, 1), (1, 1), (2, 1)]);
        assert_eq!(element_loads(6), vec![(0, 2), (2, 2), (4, 2)]);
        assert_eq!(element_loads(12), vec![(0, 4), (4, 4), (8, 4)]);
        assert_eq!(element_loads(24).len(), 3);
        assert_eq!(split_note(&[(0, 4), (4, 4)]), None);
        let note = split_note(&[(0, 12), (12, 3)]).unwrap();
        assert!(note.starts_with("no single load reads 12 bytes or 3 bytes:"), "{note}");
        assert!(note.contains("12 bytes as 3 loads of 4 bytes, 3 bytes as 3 loads of 1 byte"), "{note}");
    }
}
