//! Tensor-core wrappers for rung 9 (`sgemm/tensor.rs`): `ldmatrix` and the TF32 `mma.sync`,
//! compiled for `sm_80` and up only (PTX ISA, "Warp-level matrix load instruction: ldmatrix"
//! and "Matrix multiply-accumulate operation using mma instruction": TF32 `m16n8k8` needs
//! `sm_80`).

/// Loads four 8 x 8 matrices of 16-bit elements from shared memory, one per register of each
/// lane (`ldmatrix.sync.aligned.m8n8.x4.shared.b16`): lanes `8 i .. 8 i + 7` give the addresses
/// of the 8 rows (16 bytes each) of matrix `i`, and lane `l` receives, in register `i`, the
/// 32-bit word `l % 4` of row `l / 4` of matrix `i`. Read as 32-bit words, that is an 8 x 4
/// matrix of `f32` per register, the layout of a TF32 `A` fragment of `m16n8k8`.
///
/// # Safety
/// `row` points into the block's shared memory, 16-byte aligned; every lane of the warp calls
/// it together (`.sync.aligned`).
#[inline(always)]
pub unsafe fn ldmatrix_x4(row: *const f32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    unsafe {
        core::arch::asm!(
            "{{\n.reg .u64 a;\ncvta.to.shared.u64 a, {p};\nldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [a]; }}",
            p = in(reg64) row as u64,
            r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
        )
    };
    [r0, r1, r2, r3]
}

/// `d = a * b + c` for one warp's `16 x 8` tile of `C` from a `16 x 8` tile of `A` and an
/// `8 x 8` tile of `B`, in TF32 with FP32 accumulation
/// (`mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`). With `g = lane / 4`, `q = lane % 4`:
/// `a = [A(g, q), A(g + 8, q), A(g, q + 4), A(g + 8, q + 4)]`, `b = [B(q, g), B(q + 4, g)]`,
/// `c` and `d = [C(g, 2q), C(g, 2q + 1), C(g + 8, 2q), C(g + 8, 2q + 1)]` (PTX ISA, "Matrix
/// Fragments for mma.m16n8k8", `.tf32`). The operands are `f32` bit patterns: the tensor core
/// reads their sign, exponent and top 10 mantissa bits (TF32), so the low 13 are dropped.
///
/// Every lane of the warp must call it together (`.sync.aligned`).
#[inline(always)]
pub fn mma_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let (d0, d1, d2, d3): (f32, f32, f32, f32);
    // SAFETY: registers only; the caller's whole warp executes it (the `.aligned` contract).
    unsafe {
        core::arch::asm!(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};",
            d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
            options(pure, nomem, nostack),
        )
    };
    [d0, d1, d2, d3]
}
