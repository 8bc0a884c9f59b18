//! What the measuring probes need from the SM: its clocks, its own number, and global loads
//! that bypass L1 (`ld.global.cg`), each as one PTX instruction the probes' PTX shows.

use core::arch::asm;

/// `%clock64`: the SM's cycle counter (PTX ISA, "Special Registers: %clock64").
#[inline(always)]
pub fn clock64() -> u64 {
    let t: u64;
    // SAFETY: reading a special register; `asm!` without `pure` is never moved across the
    // other volatile asm blocks (the loads under test), which keeps a timed window exact.
    unsafe { asm!("mov.u64 {}, %clock64;", out(reg64) t) };
    t
}

/// `%globaltimer`: a nanosecond timer common to the whole GPU (PTX ISA, "Special Registers:
/// %globaltimer"); its update interval is coarser than a nanosecond, so only long windows use it.
#[inline(always)]
pub fn globaltimer() -> u64 {
    let t: u64;
    // SAFETY: as for `clock64`.
    unsafe { asm!("mov.u64 {}, %globaltimer;", out(reg64) t) };
    t
}

/// `%smid`: the number of the SM the thread runs on (PTX ISA, "Special Registers: %smid"; the
/// numbering may have gaps, and `%nsmid` bounds it).
#[inline(always)]
pub fn smid() -> u32 {
    let s: u32;
    // SAFETY: reading a special register.
    unsafe { asm!("mov.u32 {}, %smid;", out(reg32) s) };
    s
}

/// One 16-byte vector from global memory with `ld.global.cg.v4.u32`: cached in L2, not in L1
/// (PTX ISA, "ld": `.cg` caches at the global level).
///
/// # Safety
/// `p` is 16-byte aligned and points to 4 readable words of global memory.
#[inline(always)]
pub unsafe fn load_cg4(p: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "ld.global.cg.v4.u32 {{{}, {}, {}, {}}}, [{}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p as u64
        )
    };
    [a, b, c, d]
}

/// One dependent step of a global pointer chase through L2: `ld.global.cg.u64` of the address
/// `p`, whose value is the next address.
///
/// # Safety
/// `p` is an 8-byte aligned global address holding the next one.
#[inline(always)]
pub unsafe fn chase_cg(mut p: u64) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { asm!("ld.global.cg.u64 {0}, [{0}];", inout(reg64) p) };
    p
}

/// [`chase_cg`] timed on its own: reads `%clock64`, loads, stores the loaded value to the
/// shared-memory word at `scratch` (the store needs the value, so it waits for the load), and
/// reads `%clock64` again. Returns the next address and the cycles between the clock reads:
/// the load's latency plus the store's issue (a few cycles).
///
/// # Safety
/// As for [`chase_cg`]; `scratch` is a shared-window address of 8 writable bytes.
#[inline(always)]
pub unsafe fn chase_cg_timed(mut p: u64, scratch: u32) -> (u64, u64) {
    let (t0, t1): (u64, u64);
    // SAFETY: the caller's contract; one asm block, so nothing is scheduled inside the window.
    unsafe {
        asm!(
            "mov.u64 {t0}, %clock64;",
            "ld.global.cg.u64 {p}, [{p}];",
            "st.shared.u64 [{s}], {p};",
            "mov.u64 {t1}, %clock64;",
            p = inout(reg64) p,
            s = in(reg32) scratch,
            t0 = out(reg64) t0,
            t1 = out(reg64) t1,
        )
    };
    (p, t1.wrapping_sub(t0))
}

/// The 32-bit shared-window address of a generic pointer into shared memory (PTX ISA, "cvta"):
/// what `ld.shared`/`st.shared` take.
#[inline(always)]
pub fn shared_address<T>(p: *const T) -> u32 {
    let a: u64;
    // SAFETY: `cvta.to.shared` only converts a number; the caller passes a shared pointer.
    unsafe { asm!("cvta.to.shared.u64 {}, {};", out(reg64) a, in(reg64) p as u64) };
    a as u32
}
