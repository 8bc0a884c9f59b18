//! Measurement probes several lessons share, below them all: pointer-chase chains laid out by
//! the host ([`chain`]), the latency probes that follow them ([`latency`]), and the bandwidth
//! readers and host <-> device copies ([`bandwidth`]). A probe returns figures and checks; the
//! lessons put them in their rows and notes.

pub mod bandwidth;
pub mod chain;
pub mod latency;
