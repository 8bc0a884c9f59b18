//! Measurement probes several lessons share, below them all: pointer-chase chains laid out by
//! the host ([`chain`]), the latency probes that follow them ([`latency`]), the bandwidth
//! readers and host <-> device copies ([`bandwidth`]), the strided-read sweep ([`strided`]),
//! the GEMM operands with cuBLAS beside them ([`gemm`]), and the LSU copy and transpose other
//! lessons time their own paths against ([`baselines`]). A probe returns figures and checks; the
//! lessons put them in their rows and notes.

pub mod bandwidth;
pub mod baselines;
pub mod chain;
pub mod gemm;
pub mod latency;
pub mod strided;
