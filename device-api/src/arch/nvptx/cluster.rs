//! The cluster's intrinsics: its special registers, `mapa`, `ld`/`st` in the `.shared::cluster`
//! state space and the cluster-wide barrier, as inline PTX on the GPU, and stand-ins on the host
//! (a cluster of one block, addresses that are offsets into the host's shared buffer).
//!
//! All of it is PTX ISA 7.8 and `sm_90` or newer (PTX ISA, "Special Registers: %cluster_ctarank",
//! "Data Movement and Conversion Instructions: mapa", "Parallel Synchronization and
//! Communication Instructions: barrier.cluster"; target ISA notes of each).
//!
//! Addresses are 32-bit `.shared::cluster` window addresses (PTX ISA, "State Spaces: Shared
//! State Space": a `.shared::cta` address is also a valid `.shared::cluster` address of the
//! executing block, and `mapa` gives the one of another block of the cluster).
//!
//! On the host the same functions are stand-ins: `arch/host/cluster.rs`.

use core::arch::asm;

/// Reads a 32-bit special register of the cluster.
macro_rules! special {
    ($(#[$doc:meta])* $name:ident, $reg:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            let v: u32;
            // SAFETY: reading a special register has no preconditions inside a kernel.
            unsafe { asm!(concat!("mov.u32 {}, ", $reg, ";"), out(reg32) v, options(pure, nomem, nostack)) };
            v
        }
    };
}

special!(
    /// `%cluster_ctarank`: this block's rank in its cluster, `0 .. cluster_nctarank()`, x
    /// fastest (`x + y * nx + z * nx * ny` of `%cluster_ctaid`).
    cluster_ctarank, "%cluster_ctarank"
);
special!(
    /// `%cluster_nctarank`: blocks in this block's cluster.
    cluster_nctarank, "%cluster_nctarank"
);
special!(
    /// `%cluster_ctaid.x`: this block's x index inside its cluster.
    cluster_ctaid_x, "%cluster_ctaid.x"
);
special!(
    /// `%cluster_ctaid.y`: this block's y index inside its cluster.
    cluster_ctaid_y, "%cluster_ctaid.y"
);
special!(
    /// `%cluster_nctaid.x`: the cluster's extent along x, in blocks.
    cluster_nctaid_x, "%cluster_nctaid.x"
);
special!(
    /// `%cluster_nctaid.y`: the cluster's extent along y, in blocks.
    cluster_nctaid_y, "%cluster_nctaid.y"
);
special!(
    /// `%clusterid.x`: the cluster's x index in the grid.
    cluster_id_x, "%clusterid.x"
);

/// The 32-bit `.shared` window address of a generic pointer into this block's shared memory
/// (`cvta.to.shared`; PTX ISA, "cvta"). Pure address arithmetic.
#[inline(always)]
pub fn shared_address<T>(p: *const T) -> u32 {
    let a: u64;
    // SAFETY: `cvta` converts an address and touches no memory.
    unsafe { asm!("cvta.to.shared.u64 {}, {};", out(reg64) a, in(reg64) p as u64, options(pure, nomem, nostack)) };
    a as u32
}

/// `mapa.shared::cluster.u32`: the `.shared::cluster` address of the location at shared
/// address `address` of this block, in the block of rank `rank` of the cluster. Pure
/// address arithmetic (nothing is read).
#[inline(always)]
pub fn map_shared_rank(address: u32, rank: u32) -> u32 {
    let d: u32;
    // SAFETY: `mapa` computes an address and touches no memory.
    unsafe {
        asm!("mapa.shared::cluster.u32 {}, {}, {};", out(reg32) d, in(reg32) address, in(reg32) rank, options(pure, nomem, nostack))
    };
    d
}

/// `ld.shared::cluster.u32`: the word at `.shared::cluster` address `address`.
///
/// # Safety
/// `address` is a 4-byte aligned word of the dynamic shared memory of a running block of
/// the cluster (`crate::cluster`'s invariants).
#[inline(always)]
pub unsafe fn load_remote(address: u32) -> u32 {
    let v: u32;
    unsafe { asm!("ld.shared::cluster.u32 {}, [{}];", out(reg32) v, in(reg32) address, options(readonly, nostack)) };
    v
}

/// `ld.shared::cluster.f32`: as [`load_remote`], for a float.
///
/// # Safety
/// As for [`load_remote`].
#[inline(always)]
pub unsafe fn load_remote_f32(address: u32) -> f32 {
    let v: f32;
    unsafe { asm!("ld.shared::cluster.f32 {}, [{}];", out(reg32) v, in(reg32) address, options(readonly, nostack)) };
    v
}

/// A 16-byte load `$op {x, y, z, w}, [address]` as four `u32`.
macro_rules! load4 {
    ($op:literal, $address:expr) => {{
        let (x, y, z, w): (u32, u32, u32, u32);
        asm!(
            concat!($op, " {{{}, {}, {}, {}}}, [{}];"),
            out(reg32) x, out(reg32) y, out(reg32) z, out(reg32) w, in(reg32) $address,
            options(readonly, nostack)
        );
        [x, y, z, w]
    }};
}

/// `ld.shared::cluster.v4.u32`: 16 bytes at `address` with one load.
///
/// # Safety
/// As for [`load_remote`], with `address` 16-byte aligned.
#[inline(always)]
pub unsafe fn load_remote4(address: u32) -> [u32; 4] {
    unsafe { load4!("ld.shared::cluster.v4.u32", address) }
}

/// `ld.shared.v4.u32`: 16 bytes of this block's own shared memory at `.shared` address
/// `address` (the local counterpart of [`load_remote4`]).
///
/// # Safety
/// `address` is a 16-byte aligned location of this block's dynamic shared memory.
#[inline(always)]
pub unsafe fn load_local4(address: u32) -> [u32; 4] {
    unsafe { load4!("ld.shared.v4.u32", address) }
}

/// `st.shared::cluster.u32`: writes `value` at `.shared::cluster` address `address`.
///
/// # Safety
/// As for [`load_remote`].
#[inline(always)]
pub unsafe fn store_remote(address: u32, value: u32) {
    unsafe { asm!("st.shared::cluster.u32 [{}], {};", in(reg32) address, in(reg32) value, options(nostack)) };
}

/// `barrier.cluster.arrive` then `barrier.cluster.wait` (`cluster.sync()` in CUDA C++):
/// release semantics at the arrive, acquire at the wait by default, so every shared and
/// global write of the cluster's threads before it is visible to all of them after it.
/// Without `.aligned`, so divergent threads may call it; it waits for every non-exited
/// thread of the cluster.
#[inline(always)]
pub fn cluster_sync() {
    // SAFETY: no operands; a thread that never arrives makes the others wait forever (a
    // hang, not undefined behaviour). The asm's implied memory clobber keeps accesses on
    // their side.
    unsafe { asm!("barrier.cluster.arrive;", options(nostack)) };
    // SAFETY: as above.
    unsafe { asm!("barrier.cluster.wait;", options(nostack)) };
}
