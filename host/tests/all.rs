//! Every integration test of the crate in one binary, one module per file of `tests/`: the
//! library and its dependencies are linked once, not once per file. None of the files needs a
//! process of its own: those that set environment variables or remove the driver library do it
//! on a child process (`memlab`, the `cuda_occupancy.h` shim). `Cargo.toml` turns cargo's
//! discovery of `tests/*.rs` off, so a new file must be declared here, which
//! [`every_test_file_is_a_module_here`] checks.

mod cli;
mod cli_tools;
mod clusters_ptx;
mod cuda_occupancy_h;
mod device_api;
mod dram_model;
mod hierarchy_ptx;
mod host_side;
mod l2_policies_ptx;
mod l2_ptx;
mod launch_params;
mod layering;
mod memory_refusals;
mod model_props;
mod multi_device;
mod no_driver;
mod peer_report;
mod ptx_content;
mod race_ptx;
mod record_props;
mod reference_props;
mod report_charts;
mod sgemm_cli;
mod sgemm_ptx;
mod single_entry;
mod tensor_ptx;
mod terminal_width;
mod tma_cli;
mod tma_ptx;
mod toolchain;
mod twins_source;
mod typed_launches;
mod unsafe_count;
mod zero_cost;

/// A file of `tests/` that is not declared above would never be compiled or run.
#[test]
fn every_test_file_is_a_module_here() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = include_str!("all.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        if path.extension().is_some_and(|e| e == "rs") && stem != "all" && !this.contains(&format!("\nmod {stem};\n")) {
            missing.push(stem.to_string());
        }
    }
    assert!(missing.is_empty(), "files of tests/ that tests/all.rs does not declare (`mod NAME;`): {missing:?}");
}
