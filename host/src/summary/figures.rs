//! The summaries' charts in the report, after the lessons': the roofline, and the bars of the
//! kernels that only move data and so have no place on it. Both are drawn from every section
//! of the run.

use crate::charts::BarChart;
use crate::lab::{Figure, Run};

/// The roofline and the bandwidth bars of `run`, or the notes naming what the run lacks.
pub fn figures(run: &Run) -> Vec<Figure> {
    vec![
        Figure::or_missing(
            super::roofline::chart(run),
            "Kernels that compute, each at its first size, at their arithmetic intensity by requested global loads (the tiling model; caches ignored, so a kernel whose loads hit L1/L2, like `matmul_naive`, sits above the DRAM roof), each against the roof of its arithmetic: FP32 pipes, TF32 tensor cores (SGEMM rung 9, tensor rung 7), BF16 tensor cores (the tensor ladder), FP8 tensor cores (tensor rung 9). Each point carries its number in the table beside the plot. The roofs are at the SM clock measured under load, when the run measured it; a point above its compute roof with no faster clock measured is listed as n/a and not drawn.",
            "roofline (needs the `memcpy` and `matmul` demos)",
        ),
        Figure::or_missing(
            BarChart::bandwidth(run.sections, run.memcpy_gbs),
            "Kernels that only move data (no FLOP, so no place on the roofline): bandwidth against the memcpy ceiling, which a kernel that only reads (`read_cg`) can pass. Each bar is named by its kernel and, where the kernel runs more than once, by its size or configuration (the hot buffer and its policy, the swizzle) or its demo; the L2-resident bars re-read a hot buffer amid a stream, and the re-reads of a buffer that fits in L2 hit there.",
            "bandwidth bars (run the `transpose` demo)",
        ),
    ]
}
