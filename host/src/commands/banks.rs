//! `memlab banks`: one warp's (or a block's) shared-memory access described on the command
//! line, answered by the bank model with no GPU: wavefronts per request, the conflicts Nsight
//! Compute counts, the rule used and its source, and a picture of lanes -> banks.

use anyhow::Result;
use serde::Serialize;

use super::occupancy::parse_cc;
use crate::expr::Expr;
use crate::model::occupancy::ArchLimits;
use crate::model::{
    banks::{BankReport, NUM_BANKS, Tile, TileAccess, WARP_SIZE, WarpRequest, Width, swizzle_atom},
    gpus,
};
use crate::{cli, present::report, refuse};

/// Options of `banks`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bytes per lane: 4 (float), 8 (double, float2) or 16 (float4).
    #[arg(long, default_value_t = 4)]
    pub width: u64,
    /// Lane t accesses element t * STRIDE (default 1).
    #[arg(long, conflicts_with_all = ["index", "bytes", "tile"])]
    pub stride: Option<u64>,
    /// Lane t accesses element EXPR, e.g. `t%4`, `(t>>1)%4` (t spans warps).
    #[arg(long, conflicts_with_all = ["bytes", "tile"])]
    pub index: Option<String>,
    /// Lane t accesses byte EXPR, e.g. `(t%4)*16` (a multiple of WIDTH).
    #[arg(long, conflicts_with = "tile")]
    pub bytes: Option<String>,
    /// A 2-D tile of ROWSxCOLS elements accessed by one block (--block, --access).
    #[arg(long, value_parser = cli::dims::<2>)]
    pub tile: Option<[usize; 2]>,
    /// Elements from one tile row to the next (default COLS; COLS+1 pads).
    #[arg(long, requires = "tile", value_parser = cli::at_least_one::<u64>)]
    pub pitch: Option<u64>,
    /// Block shape XxY for --tile; thread x + X*y of the block, warps of 32 consecutive threads
    /// (default: the tile's extent along x and y, each at most 32, so every thread has an element).
    #[arg(long, requires = "tile", value_parser = cli::dims::<2>)]
    pub block: Option<[usize; 2]>,
    /// Thread (x, y) at tile[y][x] (row) or tile[x][y] (column)
    #[arg(long, requires = "tile", default_value = "row", value_parser = access)]
    pub access: TileAccess,
    /// Byte offset of element 0 (a multiple of WIDTH).
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Active lanes per warp, lanes 0..N (1..=32).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub lanes: u32,
    /// Warps (t = 32 * warp + lane); --tile takes the block's
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32), conflicts_with = "tile")]
    pub warps: u32,
    /// Shared array the accesses lie in: B, K/KB/KiB (1024 B, any case), M... (default: the GPU's limit or the tile)
    #[arg(long, value_parser = cli::bytes)]
    pub array: Option<usize>,
    /// A TMA tensor map's shared-memory swizzle over the addresses: none, 32B, 64B or 128B
    /// (16-byte chunk c of 128-byte line l moves to chunk c XOR (l mod 2, 4 or 8); PTX ISA,
    /// "Tensors: tensor swizzling modes"), from a tile aligned to the swizzle's atom (--offset a
    /// multiple of 256, 512 or 1024 bytes).
    #[arg(long, value_parser = swizzle, default_value = "none")]
    pub swizzle: u32,
    /// The GPU whose shared memory per block bounds the array and the tile (also --gpu; default
    /// 9.0, the H200): a compute capability, SM target or name.
    #[arg(long, alias = "gpu", default_value = "9.0", long_help = gpus::help("The GPU whose shared memory per block bounds the array and the tile (also --gpu; default 9.0, the H200)"), value_parser = parse_cc)]
    pub cc: (u32, u32),
    /// Print the answer as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The swizzle modes of a tensor map, by name, as `memlab_contracts::tma::swizzle` numbers them.
const SWIZZLES: [&str; 4] = ["none", "32B", "64B", "128B"];

/// Parses a swizzle name (case-insensitive) into its mode number.
fn swizzle(text: &str) -> Result<u32, String> {
    SWIZZLES
        .iter()
        .position(|s| s.eq_ignore_ascii_case(text))
        .map(|mode| mode as u32)
        .ok_or_else(|| format!("unknown swizzle `{text}`: the tensor map modes are {}", SWIZZLES.join(", ")))
}

/// Parses `row` or `column`.
fn access(text: &str) -> Result<TileAccess, String> {
    match text {
        "row" => Ok(TileAccess::Row),
        "column" => Ok(TileAccess::Column),
        _ => Err(format!("`{text}` is not a tile access: use row or column")),
    }
}

/// How lane `t` finds its element, as the user described it.
enum Pattern {
    Stride(u64),
    Index(Expr, String),
    Bytes(Expr, String),
    Tile(Tile, TileAccess, [usize; 2]),
}

impl Pattern {
    fn describe(&self, width: u64) -> String {
        match self {
            Pattern::Stride(s) => format!("lane t at element {s}*t"),
            Pattern::Index(_, text) => format!("lane t at element {text}"),
            Pattern::Bytes(_, text) => format!("lane t at byte {text}"),
            Pattern::Tile(tile, access, [rows, cols]) => format!(
                "tile[{rows}][{cols}] of {width}-byte elements, pitch {}, block {}x{}{}, {} access (thread (x, y) at \
                 tile{})",
                tile.pitch,
                tile.block.0,
                tile.block.1,
                match tile.threads() % WARP_SIZE as u32 {
                    0 => String::new(),
                    last => format!(
                        " (warps of 32 consecutive threads x + {}*y: the last has {})",
                        tile.block.0,
                        cli::count(last, "active lane")
                    ),
                },
                match access {
                    TileAccess::Row => "row",
                    TileAccess::Column => "column",
                },
                match access {
                    TileAccess::Row => "[y][x]",
                    TileAccess::Column => "[x][y]",
                }
            ),
        }
    }
}

/// The answer, as `--json` writes it.
#[derive(Serialize)]
struct Answer {
    width_bytes: u64,
    pattern: String,
    offset_bytes: u64,
    active_lanes: u32,
    warps: Vec<BankReport>,
    total_wavefronts: u32,
    total_ideal_wavefronts: u32,
    total_conflicts: u32,
    rule: String,
    source: String,
}

/// The rule the model applies to `width`, in words, and its source.
fn rule(width: Width) -> (String, String) {
    let banks = "32 banks of 4 bytes, word w in bank w mod 32; a bank delivers one distinct word per wavefront, \
                 lanes on one word share it (broadcast)";
    match width {
        Width::B4 => (
            format!("{banks}; a warp's 4-byte accesses form one phase"),
            "CUDA C++ Programming Guide, \"Shared Memory\" (cc 5.x and later)".into(),
        ),
        w => (
            format!(
                "{banks}; {}-byte accesses are served in phases of {} lanes (128 bytes), or {} when every lane pair \
                 2k, 2k+1 shares one address; broadcast merges lanes within a phase only; conflicts = wavefronts - \
                 phases",
                w.bytes(),
                w.lanes_per_phase(),
                2 * w.lanes_per_phase()
            ),
            "the Programming Guide's bank layout; phases and merging measured on the H200 (docs/measurements/banks.md)"
                .into(),
        ),
    }
}

/// The most shared memory one block of `arch` may have, in words: the opt-in figure (a kernel
/// that raises `cudaFuncAttributeMaxDynamicSharedMemorySize`), and its source.
fn shared_limit(arch: &ArchLimits) -> String {
    format!(
        "a block on cc {}.{} ({}) has at most {} B ({} KiB, with the opt-in above 48 KiB; CUDA C++ Programming \
         Guide, \"Technical Specifications per Compute Capability\"); --cc names another GPU",
        arch.major,
        arch.minor,
        arch.name,
        arch.smem_per_block_optin,
        arch.smem_per_block_optin >> 10
    )
}

/// The element (or byte) addresses of warp `warp`, checked against the array.
fn warp_request(args: &Args, width: Width, pattern: &Pattern, array: u64, warp: u32) -> Result<WarpRequest> {
    let w = width.bytes();
    let mut lanes = [None; WARP_SIZE];
    let tile_lanes = match pattern {
        Pattern::Tile(tile, access, _) => Some(tile.warp_elements(warp, *access)),
        _ => None,
    };
    for (lane, slot) in lanes.iter_mut().enumerate().take(args.lanes as usize) {
        let t = warp * WARP_SIZE as u32 + lane as u32;
        let byte = match pattern {
            Pattern::Stride(s) => (t as u64).checked_mul(*s).and_then(|e| e.checked_mul(w)),
            Pattern::Index(e, _) => e.index(t)?.checked_mul(w),
            Pattern::Bytes(e, _) => Some(e.index(t)?),
            Pattern::Tile(..) => match tile_lanes.as_ref().and_then(|l| l[lane]) {
                Some(i) => i.checked_mul(w),
                None => continue,
            },
        };
        let Some(addr) = byte.and_then(|b| b.checked_add(args.offset)).filter(|a| a.checked_add(w).is_some()) else {
            refuse!(
                "thread {t}'s byte address overflows 64 bits: allowed byte offsets 0..={} of the {array}-byte shared \
                 array",
                array.saturating_sub(w)
            )
        };
        if addr + w > array {
            refuse!(
                "thread {t} accesses bytes {addr}..{}, past the end of the {array}-byte shared array: allowed byte \
                 offsets 0..={} (set --array, --offset, --block or the pattern)",
                addr + w,
                array.saturating_sub(w)
            );
        }
        *slot = Some(addr);
    }
    Ok(WarpRequest::new(width, lanes)?)
}

/// How lane `t` finds its element, from the pattern options, with the tile's block and pitch
/// checked.
fn pattern(args: &Args) -> Result<Pattern> {
    Ok(if let Some(text) = &args.index {
        Pattern::Index(Expr::parse(text)?, text.clone())
    } else if let Some(text) = &args.bytes {
        Pattern::Bytes(Expr::parse(text)?, text.clone())
    } else if let Some([rows, cols]) = args.tile {
        // Row access walks x along a row, column access down a column.
        let (along_x, along_y) = match args.access {
            TileAccess::Row => (cols, rows),
            TileAccess::Column => (rows, cols),
        };
        let [bx, by] = args.block.unwrap_or([along_x.min(WARP_SIZE), along_y.min(WARP_SIZE)]);
        if bx * by > 1024 {
            refuse!("--block {bx}x{by} has {} threads: a block has at most 1024", bx * by);
        }
        let tile = Tile { pitch: args.pitch.unwrap_or(cols as u64), block: (bx as u32, by as u32) };
        if tile.pitch < cols as u64 {
            refuse!("--pitch {} is less than the tile's {cols} columns: allowed {cols} or more", tile.pitch);
        }
        Pattern::Tile(tile, args.access, [rows, cols])
    } else {
        Pattern::Stride(args.stride.unwrap_or(1))
    })
}

/// Runs the model and prints its answer.
pub fn run(args: Args) -> Result<bool> {
    let width = Width::from_bytes(args.width)?;
    let w = width.bytes();
    if !args.offset.is_multiple_of(w) {
        refuse!("--offset {} is not a multiple of the {w}-byte width: accesses must be naturally aligned", args.offset);
    }
    let atom = swizzle_atom(args.swizzle);
    if args.swizzle != 0 && !args.offset.is_multiple_of(atom) {
        refuse!(
            "--offset {} is not a multiple of the {} swizzle's {atom}-byte atom: the swizzle is modelled from an \
             aligned tile (allowed offsets 0, {atom}, {}, ...)",
            args.offset,
            SWIZZLES[args.swizzle as usize],
            2 * atom
        );
    }
    let pattern = pattern(&args)?;
    let (major, minor) = args.cc;
    let Some(arch) = ArchLimits::for_cc(major, minor) else { refuse!("no limits for cc {major}.{minor}") };
    let limit = u64::from(arch.smem_per_block_optin);
    let (warps, array) = match &pattern {
        Pattern::Tile(tile, _, [rows, cols]) => {
            let tile_bytes = (*rows as u64).saturating_mul(tile.pitch).saturating_mul(w).saturating_add(args.offset);
            if tile_bytes > limit {
                refuse!(
                    "--tile {rows}x{cols} of {w}-byte elements (pitch {}, offset {}) takes {tile_bytes} B of shared \
                     memory: {}",
                    tile.pitch,
                    args.offset,
                    shared_limit(arch)
                );
            }
            (tile.warps(), args.array.map_or(tile_bytes, |a| a as u64))
        }
        _ => (args.warps, args.array.map_or(limit, |a| a as u64)),
    };
    if array > limit {
        refuse!("--array {array} B is more shared memory than one block has: {}", shared_limit(arch));
    }
    let reports: Vec<BankReport> = (0..warps)
        .map(|warp| warp_request(&args, width, &pattern, array, warp).map(|r| r.swizzled(args.swizzle).analyze()))
        .collect::<Result<_>>()?;
    let (rule, source) = rule(width);
    let answer = Answer {
        width_bytes: w,
        pattern: match args.swizzle {
            0 => pattern.describe(w),
            mode => format!("{}, through the {} TMA swizzle", pattern.describe(w), SWIZZLES[mode as usize]),
        },
        offset_bytes: args.offset,
        active_lanes: args.lanes,
        total_wavefronts: reports.iter().map(|r| r.wavefronts).sum(),
        total_ideal_wavefronts: reports.iter().map(|r| r.ideal_wavefronts).sum(),
        total_conflicts: reports.iter().map(|r| r.conflicts).sum(),
        warps: reports,
        rule,
        source,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print_text(&answer);
    }
    Ok(true)
}

fn lane_range(from: u32, to: u32) -> String {
    if to == from + 1 { from.to_string() } else { format!("{from}-{}", to - 1) }
}

fn print_text(a: &Answer) {
    let title = format!(
        "Shared-memory banks, {}-byte accesses: {}, offset {} B, {} active lanes per warp, {} warp{}",
        a.width_bytes,
        a.pattern,
        a.offset_bytes,
        a.active_lanes,
        a.warps.len(),
        if a.warps.len() == 1 { "" } else { "s" }
    );
    println!("{}\n", report::wrap(&title));
    // Consecutive warps with the same answer share a row.
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut start = 0;
    for (i, r) in a.warps.iter().enumerate() {
        let next = a.warps.get(i + 1);
        let key = |r: &BankReport| (r.wavefronts, r.ideal_wavefronts, r.conflicts, r.phases.len());
        if next.is_some_and(|n| key(n) == key(r)) {
            continue;
        }
        let phases: Vec<String> = r.phases.iter().map(|p| lane_range(p.lanes.0, p.lanes.1)).collect();
        rows.push(vec![
            lane_range(start as u32, i as u32 + 1),
            if phases.is_empty() { "none".into() } else { phases.join(", ") },
            r.wavefronts.to_string(),
            r.ideal_wavefronts.to_string(),
            r.conflicts.to_string(),
        ]);
        start = i + 1;
    }
    let header = ["warp", "phases (lanes)", "wavefronts per request", "ideal", "conflicts (Nsight)"];
    println!("{}\n", report::table(header.map(String::from), rows));
    println!(
        "total: {}, {} ideal, {} over {}",
        cli::count(a.total_wavefronts, "wavefront"),
        a.total_ideal_wavefronts,
        cli::count(a.total_conflicts, "conflict"),
        cli::count(a.warps.len(), "request")
    );
    println!("{}", report::wrap(&format!("rule: {}", a.rule)));
    println!("{}\n", report::wrap(&format!("source: {}", a.source)));
    if let Some(first) = a.warps.first() {
        print!("{}", picture(first));
    }
}

/// Lanes -> banks for one request: per phase, one row per wavefront, one 3-character column per
/// bank holding the lowest lane served from it in that wavefront (`*`: several lanes share the
/// word, a broadcast). 99 characters wide.
pub fn picture(r: &BankReport) -> String {
    let mut out =
        String::from("lanes -> banks, warp 0 (row = wavefront, cell = lane, * = broadcast to several lanes)\n");
    let header: String = (0..NUM_BANKS).map(|b| format!("{b:>2} ")).collect();
    for p in &r.phases {
        out += &format!(
            "phase lanes {}: {} wavefront{}\n",
            lane_range(p.lanes.0, p.lanes.1),
            p.wavefronts,
            if p.wavefronts == 1 { "" } else { "s" }
        );
        out += &format!("bk|{}\n", header.trim_end());
        for row in 0..p.wavefronts as usize {
            let cells: String = p
                .banks
                .iter()
                .map(|words| match words.get(row) {
                    Some(bw) => format!("{:>2}{}", bw.lanes[0], if bw.lanes.len() > 1 { '*' } else { ' ' }),
                    None => " . ".into(),
                })
                .collect();
            out += &format!("{:>2}|{}\n", row + 1, cells.trim_end());
        }
    }
    out
}

#[cfg(test)]
mod swizzle_tests {
    use super::*;

    /// Eight lanes read 16 bytes each at the start of eight 128-byte rows: a wgmma or ldmatrix
    /// read of one 16-byte column of a BF16 tile 64 wide. Unswizzled the rows share banks
    /// 0-3 (8 wavefronts); the swizzle spreads them over 2, 4 or 8 chunks of the line.
    #[test]
    fn each_tma_swizzle_spreads_a_column_of_rows_over_its_span() {
        let lanes: [Option<u64>; WARP_SIZE] = std::array::from_fn(|t| (t < 8).then_some(t as u64 * 128));
        let column = WarpRequest::new(Width::B16, lanes).unwrap();
        let wavefronts: Vec<u32> =
            SWIZZLES.iter().map(|name| column.swizzled(swizzle(name).unwrap()).analyze().wavefronts).collect();
        assert_eq!(wavefronts, [8, 4, 2, 1]);
        assert_eq!(swizzle("128b"), Ok(3));
        assert!(swizzle("16B").unwrap_err().contains("none, 32B, 64B, 128B"));
    }
}
