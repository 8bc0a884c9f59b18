//! The binary's commands: each module holds one command's options (`Args`, parsed by clap in
//! `main.rs`) and its `run`, which returns whether every check passed.

pub mod bench;
pub mod devices;
pub mod hierarchy;
pub mod inspect;
pub mod occupancy;
pub mod race;
pub mod report;
pub mod run_demos;
