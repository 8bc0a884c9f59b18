//! Measurement probes several lessons share, below them all: pointer-chase chains laid out by
//! the host ([`chain`]), the latency probes that follow them ([`latency`]), the bandwidth
//! readers and host <-> device copies ([`bandwidth`]), the strided-read sweep ([`strided`]) and
//! the GEMM operands with cuBLAS beside them ([`gemm`]). A probe returns figures and checks; the
//! lessons put them in their rows and notes.

pub mod bandwidth;
pub mod chain;
pub mod gemm;
pub mod latency;
pub mod strided;
