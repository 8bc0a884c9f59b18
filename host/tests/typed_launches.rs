//! The typed launches' shapes and argument bytes, on the CPU: each launch function is called
//! with buffers at made-up device addresses (no context, never dereferenced, never freed), and
//! the launch it returns must have the shape the kernel's doc comment states.

use std::mem::ManuallyDrop;

use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer};
use memlab::gpu::launch::LaunchShape;
use memlab::launches;

/// A buffer that names device address `addr` and is never freed (no driver is involved).
fn fake<T: DeviceCopy>(addr: u64, len: usize) -> ManuallyDrop<DeviceBuffer<T>> {
    // SAFETY: the buffer is only read for its address; ManuallyDrop keeps Drop from freeing it.
    ManuallyDrop::new(unsafe { DeviceBuffer::from_raw_parts(DevicePointer::from_raw(addr), len) })
}

fn shape(grid: (u32, u32), block: (u32, u32), smem_bytes: u32) -> LaunchShape {
    LaunchShape { grid, block, smem_bytes }
}

#[test]
fn transposes_cover_the_matrix_with_their_documented_tiles() {
    let (input, mut output) = (fake::<f32>(0x1000, 4), fake::<f32>(0x2000, 4));
    let (rows, cols) = (33, 4097);
    // The typed launch of transpose-family kernel `$name` at its lesson's shape.
    macro_rules! launch {
        ($name:ident, $rows:expr, $cols:expr) => {
            launches::$name(memlab::demos::transpose::shapes::$name($rows, $cols), &input, &mut output, $rows, $cols)
        };
    }
    let l = launch!(copy, rows, cols);
    assert_eq!((l.kernel, l.shape), ("copy", shape((258, 1), (32, 8), 0)));
    // Copy's rows of 4091 floats shift back by up to 7 (of 4090 by up to 6), whole-sector rows not.
    assert_eq!(launch!(copy, rows, 4091).shape.grid, (258, 1));
    assert_eq!(launch!(copy, rows, 4090).shape.grid, (256, 1));
    assert_eq!(launch!(copy, rows, 4096).shape.grid, (256, 1));
    assert_eq!(launch!(transpose_naive, rows, cols).shape, shape((258, 1), (32, 8), 0));
    assert_eq!(launch!(transpose_tiled, rows, cols).shape, shape((258, 1), (32, 8), 4096));
    // Output rows of 33 floats are not whole sectors: the shifted paths' staged tiles, and a grid
    // covering the largest shift (7 columns) more.
    assert_eq!(launch!(transpose_padded, rows, cols).shape, shape((258, 1), (32, 8), 5280));
    assert_eq!(launch!(transpose_vectorized, rows, cols).shape, shape((65, 1), (16, 16), 18720));
    assert_eq!(launch!(transpose_aligned_stores, rows, cols).shape, shape((258, 1), (32, 8), 5280));
    // Whole-sector rows (and, for the vectorized kernel, whole-vector columns): the plain tiles.
    assert_eq!(launch!(transpose_padded, 64, cols).shape, shape((258, 1), (32, 8), 4224));
    assert_eq!(launch!(transpose_vectorized, 64, 4096).shape, shape((64, 1), (16, 16), 16640));
    assert_eq!(launch!(transpose_vectorized, 64, 4095).shape.smem_bytes, 18720);
    // One-dimensional grids of tiles, tile rows after tile rows (columns x rows of tiles).
    // Rows of 62 floats shift by up to 6, of 123 by up to 7: one more tile row than the rows
    // alone need; whole-sector rows none.
    assert_eq!(launch!(transpose_padded, 62, cols).shape.grid, (387, 1));
    assert_eq!(launch!(transpose_aligned_stores, 64, cols).shape.grid, (258, 1));
    assert_eq!(launch!(transpose_vectorized, 123, 4096).shape.grid, (192, 1));
    assert_eq!(launch!(transpose_vectorized, 128, 4096).shape.grid, (128, 1));
    // Arguments in the entry's order: the two addresses, then rows and cols as 4-byte values.
    let args = launch!(transpose_padded, rows, cols).args().to_vec();
    assert_eq!(
        args,
        [0x1000u64.to_ne_bytes(), 0x2000u64.to_ne_bytes(), slot(&33u32.to_ne_bytes()), slot(&4097u32.to_ne_bytes())]
    );
}

/// Four value bytes in an 8-byte slot.
fn slot(bytes: &[u8; 4]) -> [u8; 8] {
    let mut s = [0; 8];
    s[..4].copy_from_slice(bytes);
    s
}

#[test]
fn matmuls_and_rungs_have_their_documented_blocks_and_shared_bytes() {
    let (a, b, mut c) = (fake::<f32>(0x1000, 1), fake::<f32>(0x2000, 1), fake::<f32>(0x3000, 1));
    let (m, n, k) = (517, 389, 263);
    // The typed launch of a GEMM-family kernel at its lesson's shape, on `a`, `b`, `c`.
    macro_rules! gemm {
        ($lesson:ident :: $name:ident) => {
            launches::$name(memlab::demos::$lesson::shapes::$name(m, n), &a, &b, &mut c, m, n, k)
        };
        (probes :: $module:ident :: $name:ident) => {
            launches::$name(memlab::probes::$module::shapes::$name(m, n), &a, &b, &mut c, m, n, k)
        };
    }
    let launches = [
        (gemm!(matmul::matmul_naive), shape((25, 33), (16, 16), 0)),
        (gemm!(matmul::matmul_tiled_16), shape((25, 33), (16, 16), 2048)),
        (gemm!(probes::gemm::matmul_tiled_32), shape((13, 17), (32, 32), 8192)),
        (gemm!(race::matmul_tiled_32_missing_barrier), shape((13, 17), (32, 32), 8192)),
        (gemm!(sgemm::sgemm_2_register_1d), shape((7, 9), (512, 1), 4096)),
        (gemm!(sgemm::sgemm_3_register_2d), shape((4, 5), (256, 1), 8192)),
        (gemm!(sgemm::sgemm_4_vectorized), shape((4, 5), (256, 1), 8192)),
        (gemm!(sgemm::sgemm_5_conflict_free), shape((4, 5), (256, 1), 8320)),
        (gemm!(sgemm::sgemm_6_double_buffered), shape((4, 5), (256, 1), 16640)),
        (gemm!(sgemm::sgemm_7_async_copy), shape((4, 5), (256, 1), 16640)),
    ];
    for (launch, want) in launches {
        assert_eq!(launch.shape, want, "{}", launch.kernel);
        assert_eq!(launch.args()[5], slot(&263u32.to_ne_bytes()), "{}: k is the sixth argument", launch.kernel);
    }
}

#[test]
fn probes_launch_the_documented_shapes() {
    let (words, mut out) = (fake::<u32>(0x1000, 1), fake::<u32>(0x2000, 1));
    assert_eq!(
        launches::strided_read(memlab::probes::strided::shapes::strided_read(1000), &words, &mut out, 1000, 4).shape,
        shape((4, 1), (256, 1), 0)
    );
    assert_eq!(
        launches::misaligned_read(memlab::demos::coalescing::shapes::misaligned_read(1024), &words, &mut out, 1024, 1)
            .shape,
        shape((4, 1), (256, 1), 0)
    );
    assert_eq!(
        launches::shared_bank_probe(memlab::demos::banks::shapes::shared_bank_probe(1056), &mut out, 32, 8).shape,
        shape((1056, 1), (256, 1), 16384)
    );
    assert_eq!(
        launches::read_cg(memlab::probes::bandwidth::read_shape(1056), &words, 64, 1, &mut out).shape,
        shape((1056, 1), (256, 1), 0)
    );
    let (input, mut floats) = (fake::<f32>(0x3000, 1), fake::<f32>(0x4000, 1));
    assert_eq!(
        launches::register_pressure(
            memlab::demos::occupancy::shapes::register_pressure(1 << 20),
            &input,
            &mut floats,
            1 << 20,
            64
        )
        .shape,
        shape((4096, 1), (256, 1), 0)
    );
    let runtime = launches::local_array_runtime_index(
        memlab::summary::hierarchy::spills::shapes::local_array_runtime_index(512),
        &input,
        &mut floats,
        512,
        4,
        1,
    );
    assert_eq!((runtime.shape, runtime.args().len()), (shape((2, 1), (256, 1), 0), 5));
}

#[test]
fn latency_probes_run_one_block_and_pass_floats_as_floats() {
    let (chain, mut record) = (fake::<u32>(0x1000, 1), fake::<u64>(0x2000, 35));
    assert_eq!(
        launches::chase_global(memlab::probes::latency::shapes::one_thread(), 0x7000, 1, 64, &mut record).shape,
        shape((1, 1), (1, 1), 0)
    );
    assert_eq!(
        launches::chase_shared(memlab::probes::latency::shapes::chase_shared(4096), &chain, 4096, 128, 64, &mut record)
            .shape,
        shape((1, 1), (256, 1), 16384)
    );
    assert_eq!(
        launches::const_chase(memlab::probes::latency::shapes::const_chase(), 1, 256, 64, &mut record).shape,
        shape((1, 1), (32, 1), 0)
    );
    let fma = launches::register_chain(memlab::probes::latency::shapes::one_thread(), 0.25, 0.5, 1.0, 64, &mut record);
    assert_eq!(fma.shape, shape((1, 1), (1, 1), 0));
    assert_eq!(
        fma.args()[..3],
        [slot(&0.25f32.to_ne_bytes()), slot(&0.5f32.to_ne_bytes()), slot(&1.0f32.to_ne_bytes())]
    );
    assert_eq!(fma.args()[4], 0x2000u64.to_ne_bytes());
}

#[test]
fn every_rung_names_the_entry_its_launch_runs() {
    let (a, b, mut c) = (fake::<f32>(0x1000, 1), fake::<f32>(0x2000, 1), fake::<f32>(0x3000, 1));
    use memlab::demos::sgemm::{RUNGS, Rung};
    let tuned = memlab_contracts::sgemm::TUNED.iter().map(Rung::tuned);
    for rung in RUNGS.into_iter().chain(tuned) {
        let launch = (rung.launch)(&a, &b, &mut c, 300, 200, 8);
        assert_eq!(launch.kernel, rung.entry.name);
        let (rows, cols) = rung.tile;
        assert_eq!(launch.shape.grid, (200u32.div_ceil(cols), 300u32.div_ceil(rows)), "{}", launch.kernel);
    }
    // Rung 8's shape and shared bytes come from its configuration.
    let cfg = memlab::tuned::config("sgemm_8_128x64x16_w64x32_t8x8_s3").unwrap();
    let launch = (Rung::tuned(cfg).launch)(&a, &b, &mut c, 300, 200, 8);
    assert_eq!(launch.shape.block, (128, 1));
    assert_eq!(launch.shape.smem_bytes, 3 * (128 * 20 + 16 * 64) * 4);
}

#[test]
fn demos_are_registered_once_in_run_order() {
    // NAMES is computed from the registry at compile time. (Reading DEMOS itself would link the
    // demos' driver calls into this test, which then needs libcuda.so.1 to start.) Each lesson
    // runs under its module's name, in the order of `demos/mod.rs`'s `lessons!` list, then the
    // hierarchy summary.
    let list = include_str!("../src/demos/mod.rs").split("\nlessons! {").nth(1).and_then(|rest| rest.split('}').next());
    let modules = list.expect("demos/mod.rs has a `lessons! { .. }` list").split(',');
    let mut want: Vec<&str> = modules.filter_map(|entry| Some(entry.split_once("::")?.0.trim())).collect();
    want.push("hierarchy");
    let names = memlab::registry::NAMES;
    assert_eq!(names[..], want[..]);
    // The ceiling every later share is read against runs first.
    assert_eq!(names[0], "memcpy");
    assert!(names.len() >= 12 && names.contains(&"sgemm"), "{names:?}");
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "a demo registered twice");
}

#[test]
fn cluster_launches_carry_their_cluster_and_whole_clusters_of_blocks() {
    let (a, b, mut c) = (fake::<f32>(0x1000, 1), fake::<f32>(0x2000, 1), fake::<f32>(0x3000, 1));
    // 67x45: 3x2 tiles of 32, rounded up to whole 4x4 clusters.
    let l = launches::matmul_dsmem_32(
        memlab::demos::clusters::shapes::matmul_dsmem_32((4, 4), 67, 45),
        &a,
        &b,
        &mut c,
        67,
        45,
        33,
    )
    .in_clusters((4, 4));
    assert_eq!((l.kernel, l.shape, l.cluster), ("matmul_dsmem_32", shape((4, 4), (32, 32), 16384), Some((4, 4))));
    let l = launches::matmul_dsmem_32(
        memlab::demos::clusters::shapes::matmul_dsmem_32((2, 1), 67, 45),
        &a,
        &b,
        &mut c,
        67,
        45,
        33,
    )
    .in_clusters((2, 1));
    assert_eq!((l.shape.grid, l.cluster), ((2, 3), Some((2, 1))));
    let (chain, mut out) = (fake::<u32>(0x4000, 4096), fake::<u64>(0x5000, 35));
    let l = launches::chase_dsmem(
        memlab::demos::clusters::shapes::chase_dsmem(16, 4096),
        &chain,
        4096,
        15,
        128,
        4096,
        &mut out,
    )
    .in_clusters((16, 1));
    assert_eq!((l.shape, l.cluster), (shape((16, 1), (256, 1), 16384), Some((16, 1))));
    assert_eq!(l.args()[2][..4], 15u32.to_ne_bytes(), "the target rank");
    let mut sums = fake::<u32>(0x6000, 8 * 256);
    let l = launches::cluster_shared_read(memlab::demos::clusters::shapes::cluster_shared_read(8), 4096, 1, &mut sums)
        .in_clusters((4, 1));
    assert_eq!((l.shape, l.cluster), (shape((8, 1), (256, 1), 32768), Some((4, 1))));
    let l = launches::cluster_barrier(memlab::demos::clusters::shapes::cluster_barrier(8), 1024, &mut out)
        .in_clusters((8, 1));
    assert_eq!((l.shape, l.cluster), (shape((8, 1), (128, 1), 0), Some((8, 1))));
    // A plain launch has no cluster.
    assert_eq!(
        launches::matmul_tiled_32(memlab::probes::gemm::shapes::matmul_tiled_32(67, 45), &a, &b, &mut c, 67, 45, 33)
            .cluster,
        None
    );
}

#[test]
fn the_tensor_ladder_has_one_typed_launch_per_rung() {
    use memlab::ptx::Param;
    use memlab_contracts::tensor::RUNGS;
    let entries: Vec<_> = RUNGS
        .iter()
        .map(|r| *launches::ENTRIES.iter().find(|e| e.name == r.name).expect("a typed launch per rung"))
        .collect();
    // Two map slots, C (the slot of its map where the rung stores by TMA), m, n, k, and the
    // stages for every rung but the first.
    let (u, p) = (Param::U32, Param::Ptr);
    assert_eq!(entries[0].params, [u, u, p, u, u, u]);
    for (e, rung) in entries[1..].iter().zip(&RUNGS[1..]) {
        match (rung.tma_store, *rung == memlab_contracts::tensor::FP8) {
            // FP8 takes its per-tensor scale after the map of C.
            (true, true) => assert_eq!(e.params, [u, u, u, Param::F32, u, u, u, u], "{}", e.name),
            (true, false) => assert_eq!(e.params, [u, u, u, u, u, u, u], "{}", e.name),
            _ => assert_eq!(e.params, [u, u, p, u, u, u, u], "{}", e.name),
        }
    }
    assert_eq!(RUNGS.iter().filter(|r| r.tma_store).count(), 2);
}
