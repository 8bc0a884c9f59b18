//! Barrier phases in the types, shown with the compiler: the race lesson's bug (the tiled matmul
//! of `kernels-gpu/src/matmul.rs`, which compiles, without its second barrier), a read before
//! the publishing barrier, and a tile's row read through another tile do not compile
//! (`tests/ui/*.stderr` hold rustc's errors; regenerate with
//! `TRYBUILD=overwrite cargo test -p memlab-device-api --test compile_fail`).

#[test]
fn unpublished_reads_and_writes_during_reads_do_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/missing_barrier.rs");
    t.compile_fail("tests/ui/read_before_barrier.rs");
    t.compile_fail("tests/ui/line_of_another_tile.rs");
}
