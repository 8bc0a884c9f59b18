//! Loads of 16-byte vectors through a view that name where the line is cached: `ld.global.cg`
//! (L2 only, not L1) and the same with an L2 eviction policy (`.L2::cache_hint`), and the
//! policies themselves (`createpolicy`). Safe signatures over a [`Slice`] of `u32` words.
//!
//! Soundness invariant: a vector `v` of a view of `len` words is the words `4v..4v + 4`, read
//! only when `4v + 4 <= len` holds, as the view's own `get` does: by the launch contract in the
//! release build, checked (trap when out) in the `checked` build; the view's buffer is 16-byte
//! aligned (every device allocation is). A policy is a 64-bit value only `createpolicy` makes,
//! so a hinted load never carries another value (PTX ISA, "createpolicy": an operand not made
//! by it is undefined behaviour).

use core::arch::asm;

use memlab_device_api::global::Slice;

/// Traps in the `checked` build when words `4v..4v + 4` are not inside a view of `len` words.
#[inline(always)]
fn check_vector(v: usize, len: usize) {
    #[cfg(feature = "checked")]
    if v.checked_mul(4).and_then(|w| w.checked_add(4)).is_none_or(|end| end > len) {
        memlab_device_api::arch::trap();
    }
    let _ = (v, len);
}

/// Vector `v` (words `4v..4v + 4`) of `words` with `ld.global.cg.v4.u32`: cached in L2, not
/// in L1 (PTX ISA, "ld": `.cg` caches at the global level).
#[inline(always)]
pub fn load_cg4<A>(words: &Slice<u32, A>, v: usize) -> [u32; 4] {
    check_vector(v, words.len());
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the module's invariant: `4v + 4 <= len`, 16-byte aligned.
    unsafe {
        asm!(
            "ld.global.cg.v4.u32 {{{}, {}, {}, {}}}, [{}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d,
            in(reg64) words.as_ptr().add(4 * v) as u64,
            options(readonly, nostack, preserves_flags)
        )
    };
    [a, b, c, d]
}

/// An L2 eviction policy for every line a load (or a TMA copy) that carries it touches (PTX
/// ISA, "createpolicy"; sm_80, PTX ISA 7.4).
#[cfg(target_feature = "sm_90")]
#[derive(Clone, Copy)]
pub struct L2Policy(u64);

#[cfg(target_feature = "sm_90")]
impl L2Policy {
    /// `createpolicy.fractional.L2::evict_first.b64 p, 1.0`: every line the loads touch is among
    /// the first the L2 evicts (a streamed line, read once, gives its place up before the
    /// lines that are read again).
    #[inline(always)]
    pub fn evict_first() -> Self {
        let p: u64;
        // SAFETY: makes a value in a register; no memory is touched.
        unsafe {
            asm!("createpolicy.fractional.L2::evict_first.b64 {}, 1.0;", out(reg64) p, options(pure, nomem, nostack))
        };
        Self(p)
    }

    /// The policy's 64-bit value, for the other instructions that carry `.L2::cache_hint`
    /// (the TMA copies of `device/tma.rs`): only ever one `createpolicy` made.
    #[inline(always)]
    pub(crate) fn raw(self) -> u64 {
        self.0
    }
}

/// [`load_cg4`] with the L2 eviction policy `policy`:
/// `ld.global.cg.L2::cache_hint.v4.u32` (PTX ISA, "ld": `.L2::cache_hint`, sm_80, PTX ISA 7.4).
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub fn load_cg4_hinted<A>(words: &Slice<u32, A>, v: usize, policy: L2Policy) -> [u32; 4] {
    check_vector(v, words.len());
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the module's invariant; `policy` was made by `createpolicy`.
    unsafe {
        asm!(
            "ld.global.cg.L2::cache_hint.v4.u32 {{{}, {}, {}, {}}}, [{}], {};",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d,
            in(reg64) words.as_ptr().add(4 * v) as u64, in(reg64) policy.0,
            options(readonly, nostack, preserves_flags)
        )
    };
    [a, b, c, d]
}
