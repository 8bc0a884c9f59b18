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
pub mod inspect;
pub mod launches;
pub mod line_tables;
pub mod memo;
pub mod model;
pub mod output;
pub mod peer_report;
pub mod phases;
pub mod progress;
pub mod ptx;
pub mod ptxas;
pub mod record_check;
pub mod reference;
pub mod report;
pub mod report_dir;
pub mod series;
pub mod table;
pub mod tuned;
pub mod verify;
