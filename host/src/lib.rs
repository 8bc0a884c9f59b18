//! Host side of the memory-hierarchy lab.
//!
//! Data flows one way: the kernels' PTX (built by `build.rs`, embedded by [`ptx`]) is loaded by
//! [`gpu`] into a CUDA context; each demo in [`demos`] allocates, launches (the typed launches of
//! [`launches`], generated from the kernels' signatures, with shapes built from the
//! `memlab-contracts` crate's constants), times, verifies
//! against [`reference`], asks the driver for its figures and puts them next to the [`model`]'s
//! prediction; [`report`] prints the tables.

pub mod charts;
pub mod cli;
pub mod commands;
pub mod counters;
pub mod demos;
pub mod error;
pub mod expr;
pub mod gpu;
pub mod host_ram;
pub mod lab;
pub mod launches;
pub mod model;
pub mod phases;
pub mod present;
pub mod probes;
pub mod progress;
pub mod ptx;
pub mod reference;
pub mod registry;
pub mod series;
pub mod summary;
pub mod tuned;
pub mod verify;
