//! Report generation from a run recorded on the H200 (`tests/data/h200_run.json`, written by
//! `run-demos --json`): every chart is drawn, non-empty, and plots exactly the recorded points;
//! and the line-table PTX that `inspect` maps to Rust source compiles to the same SASS as the
//! PTX the GPU runs.

use memlab::charts::labels::Rect;
use memlab::charts::{self, BarChart, OccupancyChart, Precision, Reference, RooflineChart, SweepChart, YAxis};
use memlab::demos::sgemm::TENSOR_KERNELS;
use memlab::lab::Rate;
use memlab::present::output;
use memlab::present::report_dir::{self, RunRecord};
use memlab::ptx;
use memlab::ptx::inspect::{self, LINES_ARCH, LINES_PTX};
use memlab::series::names;
use memlab::summary::roofline;

fn record() -> RunRecord {
    serde_json::from_str(include_str!("data/h200_run.json")).expect("the recorded run parses")
}

#[test]
fn sweep_charts_plot_the_recorded_points() {
    let r = record();
    let coalescing = SweepChart::coalescing(&r.sections).expect("coalescing chart");
    let section = r.sections.iter().find(|s| s.name == "coalescing").unwrap();
    let measured = &coalescing.series[0];
    assert_eq!(measured.name, names::MEASURED);
    assert_eq!(measured, section.series.iter().find(|s| s.name == names::MEASURED).unwrap());
    let strides: Vec<f64> = measured.points.iter().map(|p| p.x).collect();
    assert_eq!(strides, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    assert_eq!(measured.points[0].y, 1.0, "relative to stride 1");
    // The sector model flattens at 1/8 past stride 8; the segment model keeps halving to 1/32.
    assert_eq!(coalescing.series[1].points[6].y, 0.125);
    assert_eq!(coalescing.series[2].points[6].y, 0.03125);

    let banks = SweepChart::banks(&r.sections).expect("banks chart");
    let labels: Vec<_> = banks.series[0].points.iter().map(|p| p.label.clone().unwrap()).collect();
    assert_eq!(labels, ["1", "2", "4", "8", "16", "32", "33", "broadcast"]);
    let model: Vec<f64> = banks.series[1].points.iter().map(|p| p.y).collect();
    assert_eq!(model, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 1.0, 1.0]);
}

#[test]
fn roofline_and_bars_take_every_kernel() {
    let r = record();
    let peak = r.peak_tflops().expect("cc 9.0 has FP32 lanes");
    assert!((peak - 66.9).abs() < 0.1, "132 SMs x 128 lanes x 2 x 1.98 GHz: {peak}");
    let (memcpy, theoretical) = (r.memcpy_gbs.unwrap(), r.device.theoretical_bandwidth_gbs());
    let roof = RooflineChart::new(&r.sections, roofline::precision, peak, memcpy, theoretical).unwrap();
    let ai: Vec<(&str, f64)> = roof.points.iter().map(|p| (p.label.as_str(), p.ai)).collect();
    // 2 FLOP per 8 requested bytes naive; tiling divides the loads by the tile width.
    assert_eq!(ai, [("matmul_naive", 0.25), ("matmul_tiled_16", 4.0), ("matmul_tiled_32", 8.0)]);
    let matmul = r.sections.iter().find(|s| s.name == "matmul").unwrap();
    for (point, row) in roof.points.iter().zip(&matmul.kernels) {
        assert_eq!(Rate::Tflops(point.tflops), row.rate);
    }
    let bars = BarChart::bandwidth(&r.sections, r.memcpy_gbs).unwrap();
    let kernels: Vec<&str> = bars.bars.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(kernels, ["copy", "transpose_naive", "transpose_tiled", "transpose_padded", "strided_read"]);
    let memcpy = Reference { key: "memcpy D2D".into(), label: String::new(), value: r.memcpy_gbs.unwrap(), rows: 0..5 };
    assert_eq!(bars.references, [memcpy]);
    assert!(BarChart::sgemm_ladder(&r.sections, &TENSOR_KERNELS).is_none(), "this run has no sgemm section");
}

#[test]
fn occupancy_chart_marks_the_driver_figures() {
    let r = record();
    let c = OccupancyChart::for_kernel(&r.sections, r.device.cc, "transpose_padded").unwrap();
    let row = r.sections.iter().flat_map(|s| &s.kernels).find(|k| k.kernel == "transpose_padded").unwrap();
    let ([threads, regs, smem], occ) = c.current();
    assert_eq!([threads, regs, smem], [256.0, f64::from(row.attrs.regs), 4224.0]);
    assert_eq!(occ, row.occupancy.occupancy, "model and driver agree at the measured launch");
    let by_threads = c.by_threads();
    assert_eq!(by_threads.len(), 32);
    assert!(by_threads.iter().any(|&(t, o)| t == threads && o == occ));
    assert_eq!(c.by_registers().len(), 255);
    assert_eq!(c.by_registers()[254].1, 0.125, "255 registers: 2 blocks of 8 warps");
}

#[test]
fn report_folder_has_markdown_and_nonempty_charts() {
    let dir = std::env::temp_dir().join(format!("memlab-report-{}", std::process::id()));
    let files = report_dir::write(&dir, &record()).unwrap();
    assert_eq!(files.len(), 1 + 2 * 6, "report.md + SVG and PNG of six charts");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for chart in ["coalescing.svg", "banks.svg", "roofline.svg", "bandwidth.svg", "occupancy_transpose_padded.svg"] {
        assert!(md.contains(&format!("![{chart}]({chart})")), "{chart} not in report.md");
    }
    assert!(md.contains("SGEMM ladder against cuBLAS (this run has no `sgemm` section)"));
    // In the registry's order: the lessons' charts in `lessons!` order, then the summaries'.
    let at = |chart: &str| md.find(&format!("![{chart}]")).unwrap();
    let order = ["occupancy_transpose_padded.svg", "coalescing.svg", "banks.svg", "roofline.svg", "bandwidth.svg"];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "charts out of the registry's order");
    assert!(md.contains("## Tables") && md.contains("| copy "), "the tables follow");
    for f in &files {
        assert!(std::fs::metadata(f).unwrap().len() > 1000, "{} is empty", f.display());
    }
    // The SVG holds one marker per point: 7 strides (filled circles), and 2 x 7 model points
    // (open circles, larger, drawn over the measured ones), plus one for each series in the key.
    let svg = std::fs::read_to_string(dir.join("coalescing.svg")).unwrap();
    let circles: Vec<&str> = svg.split("<circle").skip(1).map(|c| c.split('>').next().unwrap_or("")).collect();
    let open = circles.iter().filter(|c| c.contains("fill=\"none\"")).count();
    assert_eq!(circles.len() - open, 7 + 1, "one filled circle per measured stride, one in the key");
    assert_eq!(open, 2 * 7 + 2, "model markers stay visible over the measured ones");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn line_table_ptx_assembles_to_the_same_sass() {
    let release = ptx::ALL.iter().find(|p| p.arch == LINES_ARCH).unwrap();
    let plain = inspect::sass(release.text, LINES_ARCH, false).unwrap();
    let lined = inspect::sass(LINES_PTX, LINES_ARCH, true).unwrap();
    assert_eq!(plain.keys().collect::<Vec<_>>(), lined.keys().collect::<Vec<_>>());
    for (kernel, instrs) in &plain {
        let ops = |v: &[inspect::SassInstr]| v.iter().map(|i| i.text.clone()).collect::<Vec<_>>();
        assert_eq!(ops(instrs), ops(&lined[kernel]), "{kernel}");
        assert!(lined[kernel].iter().filter(|i| inspect::is_memory(i)).all(|i| i.line.is_some()), "{kernel}");
    }
    // `memlab inspect` assembles the kernel it shows alone: the SASS and the source lines (with
    // their inlining chains) it has in the whole module.
    for kernel in ["transpose_padded", "chase_global", "register_pressure", "matmul_tiled_32"] {
        let alone = inspect::entry_sass(LINES_PTX, LINES_ARCH, true, kernel).unwrap();
        assert!(alone.iter().any(|i| !i.inlined_at.is_empty()), "{kernel}: inlining chains");
        assert_eq!(without_labels(&alone), without_labels(&lined[kernel]), "{kernel}");
        let alone = inspect::entry_sass(release.text, LINES_ARCH, false, kernel).unwrap();
        assert_eq!(without_labels(&alone), without_labels(&plain[kernel]), "{kernel}");
    }
    assert!(inspect::entry_sass(LINES_PTX, LINES_ARCH, true, "no_such_kernel").unwrap().is_empty());
}

/// The instructions with nvdisasm's branch labels (`.L_x_12`, numbered across the whole cubin)
/// taken out of their text.
fn without_labels(instrs: &[inspect::SassInstr]) -> Vec<inspect::SassInstr> {
    let strip = |text: &str| match text.find("`(.L_x_") {
        Some(at) => format!("{}`(.L_x_)", &text[..at]),
        None => text.to_string(),
    };
    instrs.iter().map(|i| inspect::SassInstr { text: strip(&i.text), ..i.clone() }).collect()
}

#[test]
fn charts_of_the_full_recorded_run_keep_every_size_and_explain_what_passes_a_roof() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/report/run.json");
    let r = RunRecord::load(&path).unwrap();
    let ladder = BarChart::sgemm_ladder(&r.sections, &TENSOR_KERNELS).unwrap();
    // 11 rungs (the tuned rung 8, the split-K rung, and rung 9 with its unswizzled contrast among
    // them) at 4096³, then at 8192³; cuBLAS FP32 and TF32 over the bars of each size.
    assert_eq!(ladder.bars.len(), 22, "11 rungs at 4096³ and 8192³");
    assert_eq!(ladder.bars[0].label, "matmul_tiled_32 4096³");
    assert_eq!(ladder.bars[11].label, "matmul_tiled_32 8192³");
    assert_eq!(ladder.bars[21].label, "sgemm_9_tensor_tf32_unswizzled 8192³");
    let refs: Vec<(&str, &str, std::ops::Range<usize>)> =
        ladder.references.iter().map(|r| (r.key.as_str(), r.label.as_str(), r.rows.clone())).collect();
    assert_eq!(
        refs,
        [
            ("cuBLAS FP32", "4096³", 0..11),
            ("cuBLAS TF32", "4096³", 0..11),
            ("cuBLAS FP32", "8192³", 11..22),
            ("cuBLAS TF32", "8192³", 11..22)
        ]
    );
    // The tensor-core rungs are a class of their own.
    let tensor: Vec<&str> = ladder.bars.iter().filter(|b| b.class == 1).map(|b| b.label.as_str()).collect();
    assert_eq!(tensor.len(), 4, "{tensor:?}");
    assert!(tensor.iter().all(|t| t.starts_with("sgemm_9_tensor_tf32")));
    let bars = BarChart::bandwidth(&r.sections, r.memcpy_gbs).unwrap();
    assert!(bars.bars.iter().any(|b| b.label == "read_cg" && b.value > r.memcpy_gbs.unwrap()));
    assert!(bars.note.as_deref().is_some_and(|n| n.contains("only reads")), "{:?}", bars.note);
    assert_eq!(charts::log_ticks(&(27.0..1100.0)), [50.0, 100.0, 200.0, 500.0, 1000.0]);
}

#[test]
fn the_clusters_charts_are_drawn_when_the_run_has_the_lesson() {
    use memlab::lab::Section;
    use memlab::series::Series;
    let mut r = record();
    let dir = std::env::temp_dir().join(format!("memlab-cluster-charts-{}", std::process::id()));
    // Without the lesson: no cluster chart, and none listed as missing.
    let written = report_dir::write(&dir, &r).unwrap();
    assert!(!written.iter().any(|p| p.to_string_lossy().contains("dsmem")));
    assert!(!std::fs::read_to_string(dir.join("report.md")).unwrap().contains("dsmem"));
    let sweep = |name: &str, y: &str, values: [f64; 4]| {
        let points = [2.0, 4.0, 8.0, 16.0].into_iter().zip(values).map(|(x, v)| (x, v, format!("{x}")));
        Series::labelled(name, "blocks per cluster", y, points)
    };
    let series = vec![
        sweep(names::DSMEM_LATENCY, "cycles per dependent load", [201.0, 205.0, 210.0, 214.0]),
        sweep(names::DSMEM_LATENCY_PUBLISHED, "cycles per dependent load", [196.5; 4]),
        sweep(names::DSMEM_READ, "GB/s, all SMs", [3400.0, 2950.0, 2800.0, 2700.0]),
        sweep(names::DSMEM_READ_PUBLISHED, "GB/s, all SMs", [3300.0, 2800.0, 2800.0, 2800.0]),
        sweep(names::CLUSTER_BARRIER, "cycles per barrier", [380.0, 420.0, 500.0, 640.0]),
        sweep(names::CLUSTER_BARRIER_PUBLISHED, "cycles per barrier", [850.0; 4]),
    ];
    r.sections.push(Section { name: "clusters".into(), series, ..Section::default() });
    let written = report_dir::write(&dir, &r).unwrap();
    for stem in ["dsmem_latency", "dsmem_bandwidth", "cluster_barrier"] {
        for ext in ["svg", "png"] {
            let file = dir.join(format!("{stem}.{ext}"));
            assert!(written.contains(&file), "{stem}.{ext} not written");
            assert!(std::fs::metadata(&file).unwrap().len() > 1000, "{stem}.{ext} is empty");
        }
    }
    let chart = SweepChart::clusters(&r.sections, "x", "t", names::DSMEM_READ, names::DSMEM_READ_PUBLISHED).unwrap();
    assert_eq!(chart.series[0].points[0].y, 3400.0);
    assert_eq!(chart.series[1].points[3].y, 2800.0);
    if std::env::var_os("MEMLAB_KEEP_CHARTS").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_hit_fraction_measured_below_0_is_marked_and_not_drawn() {
    use memlab::lab::Section;
    use memlab::series::Series;
    let mut r = record();
    let h = |name: &str, values: [f64; 3]| {
        let points = [16.0, 32.0, 48.0].into_iter().zip(values).map(|(x, v)| (x * 1048576.0, v, format!("{x} MiB")));
        Series::labelled(name, "hot buffer", "hit fraction h of the hot re-reads", points)
    };
    let series = vec![
        h(names::PERSISTING_MEASURED, [0.95, 0.82, -0.09]),
        h(names::PERSISTING_MODEL, [1.0, 0.88, 0.1]),
        h(names::PERSISTING_PLAIN, [0.4, 0.15, 0.0]),
        h(names::PERSISTING_WINDOW, [0.3, 0.1, 0.02]),
    ];
    r.sections.push(Section { name: "l2".into(), series, ..Section::default() });
    // The record check lets the noisy measurement through on this series only.
    assert_eq!(memlab::present::record_check::check(&r), Ok(()));
    let chart = SweepChart::persisting(&r.sections).expect("the persisting chart");
    assert_eq!((chart.y_axis, chart.series[0].points[2].y), (YAxis::Fraction, -0.09));
    // Only that value is left out, and the axis stays 0 to 1 (with a margin) without it.
    assert_eq!(chart.impossible(), [(0, 2)]);
    assert_eq!(chart.y_range(), -0.05..1.05);
    let dir = std::env::temp_dir().join(format!("memlab-persisting-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for file in output::save_chart(&chart, &dir).unwrap() {
        assert!(std::fs::metadata(&file).unwrap().len() > 1000, "{} is empty", file.display());
    }
    // Elsewhere a value below 0 is still refused, by its field.
    let l2 = r.sections.last_mut().unwrap();
    l2.series[0].name = names::MEASURED.into();
    assert!(
        memlab::present::record_check::check(&r)
            .unwrap_err()
            .ends_with(".points[2].y is -0.09: must be a finite number, 0 or more")
    );
    if std::env::var_os("MEMLAB_KEEP_CHARTS").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn full_run() -> RunRecord {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/report/run.json");
    RunRecord::load(&path).unwrap()
}

#[test]
fn the_roofline_tags_of_the_full_recorded_run_never_overlap() {
    let r = full_run();
    let roof = roofline::chart(&r.run()).expect("the run has a roofline");
    // Every roof of the H200: BF16 twice TF32, FP8 twice BF16, each at the FP32 roof's clock.
    let (tf32, bf16, fp8) = (roof.tensor_tflops.unwrap(), roof.bf16_tflops.unwrap(), roof.fp8_tflops.unwrap());
    assert!((bf16 / tf32 - 2.0).abs() < 1e-9 && (tf32 / roof.peak_tflops - 8.0).abs() < 1e-9, "{tf32} {bf16}");
    assert!((fp8 / bf16 - 2.0).abs() < 1e-9, "{fp8}");
    let of =
        |p: Precision| roof.points.iter().filter(|k| k.precision == p).map(|k| k.label.as_str()).collect::<Vec<_>>();
    assert_eq!(of(Precision::Tf32), ["sgemm_9_tensor_tf32", "sgemm_9_tensor_tf32_unswizzled", "tensor_7_tf32"]);
    assert_eq!(of(Precision::Bf16).len(), memlab_contracts::tensor::LADDER.len(), "the tensor ladder's rungs");
    assert_eq!(of(Precision::Fp8), ["tensor_9_fp8"]);
    assert!(of(Precision::Bf16).iter().all(|k| k.starts_with("tensor_")));
    // Against their own roofs no point of this run is impossible: every one is drawn.
    assert!(roof.points.iter().all(|p| roof.drawn(p)));
    let (x, y) = roof.ranges();
    assert!(roof.points.iter().all(|p| x.contains(&p.ai) && y.contains(&p.tflops)));
    assert!(y.end > bf16 && x.end > bf16 * 1e3 / roof.memcpy_gbs, "the BF16 roof's bend is in the plot");
    for plot in [Rect { x0: 84, y0: 70, x1: 806, y1: 540 }, Rect { x0: 70, y0: 40, x1: 500, y1: 400 }] {
        let anchors: Vec<(i32, i32)> = roof.points.iter().map(|p| roof.pixel(plot, (p.ai, p.tflops))).collect();
        let tags: Vec<Rect> =
            roof.tags(&anchors, plot).into_iter().map(|t| t.expect("a tag for every point")).collect();
        for (i, t) in tags.iter().enumerate() {
            assert!(plot.contains(t), "tag {} outside the plot", i + 1);
            for (j, u) in tags.iter().enumerate().skip(i + 1) {
                assert!(!t.overlaps(u), "tags {} and {} overlap in {plot:?}", i + 1, j + 1);
            }
            for (j, &a) in anchors.iter().enumerate() {
                assert!(!t.overlaps(&Rect::around(a, 6)), "tag {} covers point {}", i + 1, j + 1);
            }
        }
    }
    // The table names every point by its number.
    let table = roof.table();
    assert_eq!(table.len(), roof.points.len());
    assert!(table.iter().enumerate().all(|(i, row)| row[0] == (i + 1).to_string() && row[1] == roof.points[i].label));
}

#[test]
fn a_point_above_its_own_peak_is_listed_as_n_a_and_not_drawn() {
    let r = full_run();
    let mut roof = roofline::chart(&r.run()).unwrap();
    let mut fake = roof.points[4].clone();
    assert!(fake.ai > roof.balance(), "compute-bound");
    // Twice the FP32 peak on FP32 pipes, with the clock measured no faster than the driver's.
    fake.tflops = 2.0 * roof.peak_tflops;
    fake.label = "too_fast".into();
    let before = roof.ranges();
    roof.points.push(fake.clone());
    assert!(!roof.drawn(&fake));
    assert!(roof.table().last().unwrap()[5].starts_with("n/a"));
    assert_eq!(roof.ranges(), before, "the axes are not stretched for it");
    // The same rate on BF16 tensor cores is below their roof.
    fake.precision = Precision::Bf16;
    assert!(roof.drawn(&fake));
}

#[test]
fn every_bar_of_the_full_recorded_run_is_named_apart_and_its_value_clears_the_lines() {
    let r = full_run();
    let bars = BarChart::bandwidth(&r.sections, r.memcpy_gbs).unwrap();
    let mut names: Vec<&str> = bars.bars.iter().map(|b| b.label.as_str()).collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "every bar's name is its own");
    assert!(names.contains(&"tma_transpose 8192x8192 swizzle 128B"), "{names:?}");
    assert!(names.contains(&"hot_stream_read hot 8 MiB, window"), "{names:?}");
    assert!(names.contains(&"copy (tma demo)") && names.contains(&"copy (transpose demo)"), "{names:?}");
    // The hot re-reads, and only they, are the L2-resident class.
    for b in &bars.bars {
        assert_eq!(b.class == 1, b.label.starts_with("hot_stream_read"), "{}", b.label);
    }
    assert_eq!(bars.classes.len(), 2);
    assert!(bars.classes[1].starts_with("L2-resident"));
    let ladder = BarChart::sgemm_ladder(&r.sections, &TENSOR_KERNELS).unwrap();
    for chart in [&bars, &ladder] {
        let width = chart.x_end() * 0.06;
        for (i, b) in chart.bars.iter().enumerate() {
            let x = chart.value_at(i, width);
            assert!(x > b.value, "{}: the value label starts after its bar", b.label);
            for line in chart.references.iter().filter(|l| l.rows.contains(&i)) {
                assert!(
                    !(x..x + width).contains(&line.value),
                    "{}: its label crosses {} {}",
                    b.label,
                    line.key,
                    line.label
                );
            }
        }
        assert!(chart.bars.iter().all(|b| b.value < chart.x_end()));
    }
}

#[test]
fn the_sweep_axes_of_the_full_recorded_run_reach_past_their_data() {
    let r = full_run();
    let s = &r.sections;
    let charts = [
        SweepChart::coalescing(s),
        SweepChart::banks(s),
        SweepChart::ladder(s),
        SweepChart::l2_bandwidth(s),
        SweepChart::persisting(s),
        SweepChart::partitions(s),
        SweepChart::tma_curve(s),
        SweepChart::tma_pipeline(s),
        SweepChart::tma_swizzle(s),
    ];
    for chart in charts.into_iter().map(|c| c.expect("the full run draws it")) {
        let ys: Vec<f64> =
            chart.series.iter().flat_map(|s| &s.points).map(|p| p.y).filter(|&y| chart.possible(y)).collect();
        let (lo, hi) = ys.iter().fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
        let range = chart.y_range();
        assert!(range.start <= lo && hi <= range.end, "{}: {range:?} against {lo}..{hi}", chart.stem);
        if chart.y_axis == YAxis::Log {
            let ticks = charts::log_ticks(&range);
            assert!(ticks.len() >= 3, "{}: {ticks:?}", chart.stem);
            assert!(
                ticks[0] <= lo && *ticks.last().unwrap() >= hi,
                "{}: ticks {ticks:?} against {lo}..{hi}",
                chart.stem
            );
        }
    }
    // The window's hit fraction at 64 MiB, measured below 0, is the one value left out.
    let persisting = SweepChart::persisting(s).unwrap();
    let out: Vec<(&str, f64)> = persisting
        .impossible()
        .iter()
        .map(|&(k, i)| (persisting.series[k].name.as_str(), persisting.series[k].points[i].y))
        .collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].0 == names::PERSISTING_WINDOW && out[0].1 < 0.0, "{out:?}");
}

#[test]
fn the_partition_chart_draws_both_levels_and_marks_the_step() {
    let r = full_run();
    let chart = SweepChart::partitions(&r.sections).unwrap();
    let ys: Vec<f64> = chart.series[0].points.iter().map(|p| p.y).collect();
    // The largest step between neighbours of the sorted medians splits the SMs in two runs.
    let step = (1..ys.len()).max_by(|&a, &b| (ys[a] - ys[a - 1]).total_cmp(&(ys[b] - ys[b - 1]))).unwrap();
    assert_eq!(chart.marks.len(), 1);
    assert_eq!(chart.marks[0].at, step as f64 - 0.5);
    let first = chart.series[0].points[step].label.clone().unwrap();
    assert!(chart.marks[0].label.contains(&first), "{}", chart.marks[0].label);
    let levels: Vec<f64> = chart.series[1].points.iter().map(|p| p.y).collect();
    let (near, far) = (levels[0], levels[ys.len() - 1]);
    assert!(levels[..step].iter().all(|&l| l == near) && levels[step..].iter().all(|&l| l == far));
    assert_eq!(near, ys[step / 2], "the near level is the near run's median");
    assert_eq!(far, ys[step + (ys.len() - step) / 2], "the far level is the far run's median");
    assert!(ys[..step].iter().all(|&y| y < far) && ys[step..].iter().all(|&y| y > near));
}
