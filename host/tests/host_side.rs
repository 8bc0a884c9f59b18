//! The host side of a run, without a GPU: the host-memory refusal before any work, `--sizes`
//! parsing and its refusals, what each demo holds in host memory, and the size-sweep chart
//! drawn from a recorded sweep.

use std::process::{Command, Output};

use memlab::charts::SizesChart;
use memlab::lab::Section;
use memlab::present::output;
use memlab::present::report_dir::RunRecord;
use memlab::registry::Options;
use memlab::series::{Series, names};

fn memlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memlab")).args(args).env("CUDA_VISIBLE_DEVICES", "").output().expect("run memlab")
}

/// Exit 2, one line on stderr containing `needle`, nothing on stdout.
/// Host bytes demo `name` declares at the lesson flags `flags`.
fn host_bytes(name: &str, flags: &[&str]) -> usize {
    let options = Options::from_flags(flags).unwrap();
    (memlab::registry::find(name).unwrap().host_bytes)(&options, &options.lessons.shared())
}

fn assert_refused(args: &[&str], needle: &str) {
    let o = memlab(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
}

#[test]
fn products_hold_no_host_copy_of_their_matrices() {
    // C of 10^6 x 10^6 alone takes 3.6 TiB, which no host has: it was refused for host memory
    // before the GPU. Its operands are staged and its check samples 128 rows of A (k = 1) and
    // 128 columns of B, so the host check passes and the run stops at the
    // driver (this machine has none).
    let product = "1000000x1000000x1";
    let huge = ["--matmul", product, "--sgemm", product];
    for demo in ["matmul", "sgemm"] {
        assert_eq!(host_bytes(demo, &huge), (128 << 20) + 4 * (128 + 128), "{demo}");
    }
    let o = memlab(&["run-demos", "--only", "matmul", "--matmul", "1000000x1000000x1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no NVIDIA driver") && !err.contains("host memory"), "{err}");
    assert_ne!(o.status.code(), Some(0));
}

#[test]
fn bad_size_lists_are_refused_in_one_line() {
    assert_refused(&["run-demos", "--sizes", "1000x999,,8x8"], "has an empty entry");
    assert_refused(&["run-demos", "--sizes", "8x8,8X8"], "names 8X8 twice");
    assert_refused(&["run-demos", "--sizes", "65536x65537"], "the kernels index in 32 bits");
    assert_refused(&["run-demos", "--sizes", "0x5"], "out of range: at least 1");
    assert_refused(&["run-demos", "--sizes", "8x8x8"], "expected 2 sizes");
}

#[test]
fn host_bytes_follow_the_sizes() {
    use memlab::demos::transpose::Stored;
    let pitched = Stored::pitched((1000, 999));
    assert_eq!((pitched.stored, pitched.label()), ((1000, 1000), "1000x999 in 1000x1000".to_string()));
    // Padding is zero; the matrix keeps its own dense index.
    assert_eq!(pitched.input(999), 0.0);
    assert_eq!(pitched.input(1000), memlab::reference::input_f32(memlab::demos::transpose::SEED, 999));
    assert_eq!(Stored::dense((8191, 8192)).label(), "8191x8192");
    let sizes: [&str; 0] = [];
    // The transposes stream through two 64 MiB staging chunks, whatever the matrix.
    assert_eq!(host_bytes("transpose", &sizes), 128 << 20);
    assert_eq!(host_bytes("transpose", &["--transpose", "100x10"]), 2 * 4000);
    // SGEMM stages A, B and C through two 64 MiB chunks and keeps the 128 rows of A and 128
    // columns of B its sampled check compares: 8 MiB at 8192^3.
    assert_eq!(host_bytes("sgemm", &sizes), (128 << 20) + (8 << 20));
    // TMA keeps its 256 MiB input (the copies' expected output) and stages its outputs, beside
    // SGEMM rungs 6 and 7's operands at 4096^3.
    assert_eq!(host_bytes("tma", &sizes), (256 << 20) + (128 << 20) + (128 << 20) + (4 << 20));
    assert_eq!(host_bytes("matmul", &sizes), (128 << 20) + (4 << 20));
    // A full check (at most 2^28 multiply-adds) keeps all of A and B.
    assert_eq!(host_bytes("sgemm", &["--sgemm", "517x389x263"]), 2 * 4 * 517 * 389 + 4 * (517 * 263 + 389 * 263));
    assert_eq!(host_bytes("coalescing", &sizes), 128 << 20);
    assert_eq!(host_bytes("banks", &sizes), 0);
    // The transfers' pageable and pinned buffers of 256 MiB (the DRAM read and the TMA path
    // are staged), whatever the DRAM read's size.
    assert_eq!(host_bytes("hierarchy", &sizes), 2 * (256 << 20));
    assert_eq!(host_bytes("hierarchy", &["--dram-bytes", "16GiB"]), 2 * (256 << 20));
}

#[test]
fn unaligned_sizes_compare_with_the_nearest_aligned_one() {
    use memlab::demos::transpose::nearest_aligned;
    assert_eq!(nearest_aligned((8191, 8192)), (8192, 8192));
    assert_eq!(nearest_aligned((8192, 8191)), (8192, 8192));
    assert_eq!(nearest_aligned((1000, 999)), (1000, 1000));
    assert_eq!(nearest_aligned((1, 2)), (8, 8));
    assert_eq!(nearest_aligned((1001, 1000)), (1000, 1000));
    assert_eq!(nearest_aligned((1004, 1003)), (1008, 1000));
}

/// A sweep as the transpose demo records it: memcpy and two kernels at three sizes, the second
/// kernel wrong at the last size (so it has no point there).
fn recorded_sweep() -> RunRecord {
    let sizes = ["8192x8192", "8191x8192", "1000x999"];
    let series = |name: &str, ys: &[f64]| {
        Series::labelled(
            &format!("{}{name}", names::SIZES),
            "matrix (rows x cols f32)",
            "GB/s",
            ys.iter().zip(sizes).enumerate().map(|(i, (&y, s))| (i as f64, y, s.to_string())),
        )
    };
    let mut transposed = series("transpose_vectorized", &[3800.0, 1360.0]);
    transposed.points.truncate(2);
    // The pitched layout at the two unaligned sizes only.
    let mut pitched = series("transpose_vectorized pitched", &[0.0, 3760.0, 1900.0]);
    pitched.points.remove(0);
    let section = Section {
        name: "transpose".into(),
        series: vec![
            series("memcpy", &[4000.0, 4000.0, 2000.0]),
            series("copy", &[3920.0, 3880.0, 1000.0]),
            transposed,
            series("copy pitched", &[]),
            pitched,
        ],
        ..Section::default()
    };
    let mut record: RunRecord =
        serde_json::from_str(include_str!("data/h200_run.json")).expect("the recorded run parses");
    record.sections = vec![section];
    // Through JSON and back, as `memlab report` reads a run.
    serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap()
}

#[test]
fn the_sizes_chart_plots_each_kernel_as_a_share_of_memcpy_at_its_size() {
    let record = recorded_sweep();
    let chart = SizesChart::from_sections(&record.sections).expect("a sweep was recorded");
    assert_eq!(chart.sizes, ["8192x8192", "8191x8192", "1000x999"]);
    assert_eq!(chart.y_desc, "% of memcpy at the same size");
    assert_eq!(chart.lines[0], ("copy".to_string(), vec![(0, 98.0), (1, 97.0), (2, 50.0)]));
    assert_eq!(chart.lines[1], ("transpose_vectorized".to_string(), vec![(0, 95.0), (1, 34.0)]));
    // A series without points (no padded size for copy) is left out.
    assert_eq!(chart.lines[2], ("transpose_vectorized pitched".to_string(), vec![(1, 94.0), (2, 95.0)]));
    assert_eq!(chart.lines.len(), 3);
    let dir = std::env::temp_dir().join(format!("memlab-sizes-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [svg, png] = output::save_chart(&chart, &dir).unwrap();
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000, "a drawn PNG");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("8191x8192") && text.contains("transpose_vectorized pitched"), "labels and legend");
    if std::env::var_os("KEEP_CHART").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    } else {
        eprintln!("{}", png.display());
    }
    // A run without a sweep draws no sizes chart.
    let plain: RunRecord = serde_json::from_str(include_str!("data/h200_run.json")).unwrap();
    assert!(SizesChart::from_sections(&plain.sections).is_none());
}

#[test]
fn the_any_size_kernels_use_the_accesses_they_claim() {
    use memlab::ptx::{self, count_ops, entry_body};
    for p in ptx::ALL.iter().filter(|p| !p.arch.contains("counting") && !p.arch.contains("lines")) {
        let aligned = entry_body(p.text, "transpose_aligned_stores").unwrap();
        assert_eq!(count_ops(aligned, "bar.sync"), 1, "{}", p.arch);
        // Both loops unrolled in the PTX (a rolled store loop, one store a trip, ran at 0.95x the
        // twin): 40 staged rows in 5 steps of the block's 8, 32 output rows in 4.
        let shape = |op| count_ops(aligned, op);
        assert_eq!((shape("ld.global.b32"), shape("st.shared.b32")), (5, 5), "{}", p.arch);
        assert_eq!((shape("ld.shared.b32"), shape("st.global.b32")), (4, 4), "{}", p.arch);
        assert_eq!(shape("st.global.v4"), 0, "scalar stores: {}", p.arch);
    }
}
