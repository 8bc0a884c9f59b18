//! What the book's generated files are made from: the one place a new lesson adds its report
//! section, kernels to inspect, model commands and exercises. Chapters include the files by the
//! names given here (`src/generated/...`); `cargo xtask book` writes them and checks them.

/// Sections of the recorded run's report (`memlab report docs/report/run.json`): the heading's
/// start, and the file (`generated/report/<file>.md`) it is written to, which its chapter
/// includes. A report section with no entry here goes to the appendix's page of lessons without
/// a chapter (`generate::OTHER_LESSONS`), so a new lesson's measurements are never left out.
pub const REPORT_SECTIONS: &[(&str, &str)] = &[
    ("memlab report:", "device"),
    ("Global memory ceiling", "memcpy"),
    ("Shared memory and bank conflicts: transpose", "transpose"),
    ("Global memory and tiling", "matmul"),
    ("An SGEMM ladder", "sgemm"),
    ("Tensor cores and the Hopper pipeline", "tensor"),
    ("Global-memory coalescing", "coalescing"),
    ("Shared-memory bank conflicts", "banks"),
    ("Occupancy:", "occupancy"),
    ("The memory hierarchy, measured", "hierarchy"),
    ("Thread-block clusters", "clusters"),
    ("L2: bytes in flight", "l2"),
    ("TMA: tiles moved", "tma"),
    ("Roofline", "roofline"),
];

/// Kernels whose `memlab inspect` output is written to `generated/inspect/<kernel>.md`.
pub const INSPECT: &[&str] = &[
    "strided_read",
    "misaligned_read",
    "transpose_naive",
    "transpose_tiled",
    "transpose_padded",
    "shared_bank_probe",
    "matmul_naive",
    "matmul_tiled_32",
    "register_pressure",
    "local_array_runtime_index",
    "chase_global",
];

/// Model commands whose output is written to `generated/model/<name>.md`: (name, memlab args).
pub const MODELS: &[(&str, &[&str])] = &[
    (
        "occupancy-transpose_padded",
        &["occupancy", "--kernel", "transpose_padded", "--threads", "256", "--smem", "4224B"],
    ),
    ("occupancy-matmul_tiled_32", &["occupancy", "--kernel", "matmul_tiled_32", "--threads", "1024", "--smem", "8KiB"]),
    ("occupancy-register_pressure", &["occupancy", "--kernel", "register_pressure", "--threads", "256"]),
    (
        "occupancy-rtx4090-suggest",
        &[
            "occupancy",
            "--gpu",
            "RTX 4090",
            "--threads",
            "256",
            "--regs",
            "40",
            "--smem",
            "20KiB",
            "--suggest",
            "--blocks",
            "5",
        ],
    ),
    (
        "occupancy-sm86-opt-in",
        &[
            "occupancy",
            "--gpu",
            "sm_86",
            "--threads",
            "256",
            "--regs",
            "32",
            "--smem",
            "101120",
            "--static-smem",
            "512",
            "--opt-in",
        ],
    ),
    ("banks-8-index-t4", &["banks", "--width", "8", "--index", "t%4"]),
    ("banks-8-column", &["banks", "--width", "8", "--tile", "32x32", "--access", "column"]),
    ("banks-16-pairs", &["banks", "--width", "16", "--bytes", "((t>>1)%4)*16"]),
    ("coalescing-struct-16", &["coalescing", "--struct", "16", "--fields", "0:4,4:4,8:4,12:4"]),
    ("coalescing-float4", &["coalescing", "--elem", "16"]),
];

/// Where an exercise's answer is read in its command's output.
#[derive(Clone, Copy, Debug)]
pub enum Pick {
    /// The rest of the first line that starts with this text, trimmed.
    After(&'static str),
    /// A cell of a Markdown table: in the first table with a column headed `column`, the
    /// first row whose leading cells are `row` (trimmed).
    Cell { column: &'static str, row: &'static [&'static str] },
}

/// The command an exercise's answer comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// `memlab ARGS`, run at build time (no GPU).
    Memlab(&'static [&'static str]),
    /// The report of the recorded H200 run (`memlab report docs/report/run.json --out DIR`).
    RecordedRun,
}

/// One exercise: written to `generated/exercises/<id>.md`, question and collapsed answer.
/// `answer` is what the book states; the build fails when `source`'s output, read by `pick`,
/// is anything else.
#[derive(Clone, Copy, Debug)]
pub struct Exercise {
    pub id: &'static str,
    pub question: &'static str,
    pub source: Source,
    pub pick: Pick,
    pub answer: &'static str,
    /// Why, in a sentence or two: the reasoning, not the number.
    pub why: &'static str,
}

const TEXTBOOK_SM: [&str; 7] =
    ["occupancy", "--regs-per-sm", "65536", "--threads-per-sm", "2048", "--smem-per-sm", "48KiB"];

/// `occupancy` with the textbook SM above followed by `rest`.
macro_rules! textbook {
    ($($rest:literal),*) => {
        &[TEXTBOOK_SM[0], TEXTBOOK_SM[1], TEXTBOOK_SM[2], TEXTBOOK_SM[3], TEXTBOOK_SM[4], TEXTBOOK_SM[5], TEXTBOOK_SM[6], $($rest),*]
    };
}

pub const EXERCISES: &[Exercise] = &[
    // The machine.
    Exercise {
        id: "machine-registers-limit",
        question: "A textbook SM has 65536 registers and holds at most 2048 threads. A kernel runs \
                   512 threads per block at 40 registers per thread. What occupancy does it reach?",
        source: Source::Memlab(textbook!("--threads", "512", "--regs", "40")),
        pick: Pick::After("occupancy:"),
        answer: "75.0% (limited by registers)",
        why: "One block needs 512 x 40 registers; three such blocks fit in the register file and a \
              fourth does not, so 1536 of the 2048 thread slots are filled.",
    },
    Exercise {
        id: "machine-thread-cap",
        question: "Same SM, 256 threads per block, only 16 registers per thread. Registers would \
                   allow 16 blocks. What occupancy does it reach, and what limits it?",
        source: Source::Memlab(textbook!("--threads", "256", "--regs", "16")),
        pick: Pick::After("occupancy:"),
        answer: "100.0% (limited by warps (threads per SM))",
        why: "Every limit holds at once: 2048 threads per SM allow 8 blocks of 256, fewer than the \
              register file would. Spare registers buy no extra threads.",
    },
    // Global memory and coalescing.
    Exercise {
        id: "coalescing-sector-model",
        question: "Lanes of a warp read 4-byte words 4 elements apart. By the 32-byte sector model, \
                   what fraction of the stride-1 useful bandwidth is left?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "sector model", row: &["4"] },
        answer: "0.250",
        why: "Lanes are 16 bytes apart, so each 32-byte sector carries 2 useful words instead of 8: \
              a quarter of every sector fetched is used.",
    },
    Exercise {
        id: "coalescing-stride-32",
        question: "What fraction of the stride-1 useful bandwidth did the H200 keep at stride 32?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "measured vs stride 1", row: &["32"] },
        answer: "0.058",
        why: "Below the sector model's floor of 0.125: past stride 8 each load costs more than one \
              sector of DRAM traffic (see the recorded table's segment column).",
    },
    // Shared memory and bank conflicts.
    Exercise {
        id: "banks-stride-16",
        question: "Lane t reads shared word 16 t. How many passes does the bank model say the \
                   request takes?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "model wavefronts", row: &["4 B, stride 16"] },
        answer: "16",
        why: "Word 16 t sits in bank (16 t) mod 32, which is 0 or 16: each of those two banks holds \
              16 distinct words of the request, and a bank serves one word per pass.",
    },
    Exercise {
        id: "banks-shared-limit",
        question: "A textbook SM with 48 KiB of shared memory runs 256-thread blocks at 32 registers \
                   per thread, each block using 20 KiB of shared memory. What occupancy, limited by what?",
        source: Source::Memlab(textbook!("--threads", "256", "--regs", "32", "--smem", "20KiB")),
        pick: Pick::After("occupancy:"),
        answer: "25.0% (limited by shared memory)",
        why: "Registers and the thread cap both allow 8 blocks, but only two 20 KiB blocks fit in \
              48 KiB: 512 threads of 2048.",
    },
    Exercise {
        id: "banks-padded-sass",
        question: "How many shared-memory load instructions (SASS) does `transpose_padded` hold?",
        source: Source::Memlab(&["inspect", "transpose_padded"]),
        pick: Pick::Cell { column: "SASS count", row: &["shared", "loads"] },
        answer: "8",
        why: "Each thread moves 4 elements of its tile (rows ty, ty + 8, ty + 16, ty + 24), one \
              shared load each in the write-out phase, and the kernel holds two such phases: the \
              32x33 tile's and, for rows that are not whole sectors, `transpose_aligned_stores`' \
              (a branch the same for every thread). A run executes one of them: static counts \
              are not executed counts.",
    },
    Exercise {
        id: "banks-double-row",
        question: "A 32x32 block reads a `double tile[32][32]` along its rows: thread (x, y) reads \
                   `tile[y][x]`. How many wavefronts does each warp's request take?",
        source: Source::Memlab(&["banks", "--width", "8", "--tile", "32x32", "--access", "row"]),
        pick: Pick::Cell { column: "wavefronts per request", row: &["0-31"] },
        answer: "2",
        why: "A warp reads 256 contiguous bytes: two phases of 16 lanes, each 128 bytes over all 32 \
              banks once. Two wavefronts is the least an 8-byte request can take, so it has no conflict.",
    },
    Exercise {
        id: "banks-float4-broadcast",
        question: "Every lane of a warp reads the same `float4` from shared memory. How many \
                   wavefronts does the request take?",
        source: Source::Memlab(&["banks", "--width", "16", "--index", "0"]),
        pick: Pick::Cell { column: "wavefronts per request", row: &["0"] },
        answer: "2",
        why: "The broadcast merges lanes within a phase only. Lane pairs on one address let a phase \
              cover 16 lanes instead of 8, so the warp still needs two phases of one wavefront each.",
    },
    Exercise {
        id: "coalescing-struct-dram",
        question: "A warp reads all four 4-byte fields of a 16-byte struct, lane t at struct t, one \
                   instruction per field. How many 32-byte sectors do the four instructions take \
                   from L1 in all?",
        source: Source::Memlab(&["coalescing", "--struct", "16", "--fields", "0:4,4:4,8:4,12:4"]),
        pick: Pick::Cell { column: "L1 sectors", row: &["all (L1)"] },
        answer: "64",
        why: "Each instruction touches the warp's whole 512-byte span, 16 sectors, four times over; \
              L2 and DRAM still move each of the 16 sectors once, so only L1 pays for the split loads.",
    },
    // Tiling.
    Exercise {
        id: "tiling-counted-loads",
        question: "How many global loads did the load-counting build count for `matmul_tiled_16` \
                   at 67x45x33?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "counted on the GPU", row: &["matmul_tiled_16", "67x45x33"] },
        answer: "14058",
        why: "Exactly the tiling model's figure: each block loads one 16 x 16 tile of A and of B \
              per step, edge tiles included.",
    },
    Exercise {
        id: "tiling-occupancy-32",
        question: "`matmul_tiled_32` runs 1024 threads per block with 8 KiB of shared memory. On \
                   cc 9.0, what limits its occupancy?",
        source: Source::Memlab(&["occupancy", "--kernel", "matmul_tiled_32", "--threads", "1024", "--smem", "8KiB"]),
        pick: Pick::After("occupancy:"),
        answer: "100.0% (limited by warps (threads per SM) and registers)",
        why: "Two blocks of 32 warps fill the 64 warp slots, and two blocks of 32768 registers \
              fill the 65536-register file: both limits bind together.",
    },
    // Registers, occupancy and spills.
    Exercise {
        id: "registers-hopper",
        question: "On cc 9.0, 256 threads per block at 40 registers per thread and 20 KiB of \
                   dynamic shared memory: what occupancy, limited by what?",
        source: Source::Memlab(&["occupancy", "--cc", "9.0", "--threads", "256", "--regs", "40", "--smem", "20KiB"]),
        pick: Pick::After("occupancy:"),
        answer: "75.0% (limited by registers)",
        why: "Registers are allocated per warp in units of 256: 40 x 32 = 1280 per warp, so a block \
              takes 10240 and six blocks fit in 65536.",
    },
    Exercise {
        id: "registers-spill-64",
        question: "Capped at 64 registers by the JIT, how many bytes of local memory (spills) does \
                   `register_pressure` use per thread?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "local B (spills)", row: &["64"] },
        answer: "400",
        why: "128 accumulators stay live across the loop; what does not fit in 64 registers goes \
              to the thread's stack in local memory.",
    },
    // Latency.
    Exercise {
        id: "latency-l2",
        question: "How many SM cycles did one dependent load take on the H200 when the chain \
                   fitted in L2 but not in L1?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "measured latency", row: &["L2"] },
        answer: "279 cycles (141 ns)",
        why: "The plateau of the L2-only ladder (`ld.global.cg`, which skips L1) up to 24 MiB, the \
              near half of the L2: every load hits L2.",
    },
    Exercise {
        id: "latency-hbm",
        question: "And when the chain was larger than L2?",
        source: Source::RecordedRun,
        pick: Pick::Cell { column: "measured latency", row: &["global memory (HBM)"] },
        answer: "687 cycles (347 ns)",
        why: "The plateau from 64 MiB to 2 GiB: every load goes to HBM, more than twice the L2 time.",
    },
];
