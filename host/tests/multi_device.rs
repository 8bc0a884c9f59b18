//! `--device all`: the side-by-side table of two devices built from a run recorded on the
//! H200 (`tests/data/h200_run.json`) and a copy of it as a second, slower device.

use memlab::commands::multi::side_by_side;
use memlab::commands::run_demos::run_figures;
use memlab::lab::Rate;
use memlab::present::report_dir::RunRecord;

fn recorded() -> RunRecord {
    serde_json::from_str(include_str!("data/h200_run.json")).expect("the recorded run parses")
}

#[test]
fn a_run_gives_memcpy_then_every_kernel_rate() {
    let figures = run_figures(&recorded());
    let names: Vec<&str> = figures.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "memcpy: device-to-device",
            "transpose: copy",
            "transpose: transpose_naive",
            "transpose: transpose_tiled",
            "transpose: transpose_padded",
            "matmul: matmul_naive",
            "matmul: matmul_tiled_16",
            "matmul: matmul_tiled_32",
            "coalescing: strided_read",
            "banks: shared_bank_probe",
        ]
    );
    assert_eq!(figures[0].1, "4112 GB/s");
    assert!(figures[6].1.ends_with(" TFLOP/s"), "{}", figures[6].1);
    assert!(figures[9].1.ends_with(" GB/s shared"), "{}", figures[9].1);
}

#[test]
fn two_devices_side_by_side_keep_each_devices_figures() {
    let a = recorded();
    let mut b = recorded();
    b.ordinal = 1;
    b.memcpy_gbs = Some(2000.0);
    for k in b.sections.iter_mut().flat_map(|s| s.kernels.iter_mut()) {
        k.rate = match k.rate {
            Rate::Gbs(v) => Rate::Gbs(v / 2.0),
            Rate::SharedGbs(v) => Rate::SharedGbs(v / 2.0),
            Rate::Tflops(v) => Rate::Tflops(v / 2.0),
        };
    }
    let (header, rows) = side_by_side(&["GPU 0".into(), "GPU 1".into()], &[run_figures(&a), run_figures(&b)]);
    assert_eq!(header, ["figure", "GPU 0", "GPU 1"]);
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[0], ["memcpy: device-to-device", "4112 GB/s", "2000 GB/s"]);
    let copy = &rows[1];
    let gbs = |cell: &str| cell.trim_end_matches(" GB/s").parse::<f64>().unwrap();
    assert!((gbs(&copy[1]) / gbs(&copy[2]) - 2.0).abs() < 0.01, "{copy:?}");
}
