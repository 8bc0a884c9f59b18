//! What the measuring probes need from the SM: its clocks, its own number, global loads that
//! bypass L1 (`ld.global.cg`), and the dependent loads of a pointer chase through global,
//! shared, local and constant memory, each as one PTX instruction the probes' PTX shows.
//!
//! Every wrapper here has a safe signature. Soundness rests on the device API's launch
//! contract (`memlab-device-api`, invariant 1), extended to what the probes read:
//! - **Views the host sized.** A `.cg` load reads a [`Slice`] inside its length, as
//!   [`Slice::get`] does.
//! - **Chains the host wrote.** A chase follows values the host laid out (global addresses, or
//!   offsets and indices the kernel copies into shared or local memory): the host's chain
//!   builders (`host/src/probes/chain.rs`, the CPU references of the chains) keep
//!   every link inside its array, so every hop loads inside it. The release build trusts that;
//!   the `checked` build bounds every hop with its array's length (a global chain, whose extent
//!   the kernel is not told, by its alignment) and traps on a link outside.
//!
//! Timing order: each wrapper is one `asm!` block without `pure`, which LLVM never moves across
//! the other volatile asm blocks, so a clock read and the loads it times stay in program order.

use core::arch::{asm, global_asm};
use core::marker::PhantomData;

use memlab_contracts::hierarchy::CONST_CHAIN_WORDS;
use memlab_device_api::Param;
use memlab_device_api::global::Slice;
use memlab_device_api::shared::{Reading, SharedSlice, Writing};

/// The `checked` build's bounds check, as the device API's: traps unless the condition holds;
/// in the release build the condition is not compiled.
macro_rules! check {
    ($in_bounds:expr) => {
        #[cfg(feature = "checked")]
        if !$in_bounds {
            memlab_device_api::arch::trap();
        }
    };
}

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

/// 16-byte loads cached in L2, not in L1 (`ld.global.cg.v4.u32`; PTX ISA, "ld": `.cg` caches
/// at the global level), on a view of `u32` words.
pub trait LoadCg {
    /// Words `i..i + 4` with one `ld.global.cg.v4.u32`. The buffer is 16-byte aligned and `i`
    /// a multiple of 4 (checked, with the view's length, in the `checked` build).
    fn get4_cg(&self, i: usize) -> [u32; 4];
}

impl<A> LoadCg for Slice<u32, A> {
    #[inline(always)]
    fn get4_cg(&self, i: usize) -> [u32; 4] {
        check!(i.wrapping_add(4) <= self.len() && i.is_multiple_of(4));
        let p = self.as_ptr().wrapping_add(i);
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: four words inside the view (checked, or by the launch contract), 16-byte
        // aligned (the host's buffers are; `i` a multiple of 4).
        unsafe {
            asm!(
                "ld.global.cg.v4.u32 {{{}, {}, {}, {}}}, [{}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p as u64
            )
        };
        [a, b, c, d]
    }
}

/// An address on a pointer chain in global memory: a `u64` kernel parameter (`.param .u64`,
/// the chain's start, which the host passes as a device address) or a value loaded from the
/// chain. The host lays the chain out (every address on it is 8-byte aligned, inside one of
/// its buffers, and holds the next one): the launch contract that makes each hop sound. Only
/// a launch parameter or a hop makes one.
#[derive(Clone, Copy)]
pub struct ChainAddr(u64);

impl Param for ChainAddr {
    type Raw = u64;
    #[inline(always)]
    unsafe fn from_raw(raw: u64) -> Self {
        Self(raw)
    }
}

impl ChainAddr {
    /// The address, as a number (the probe records where the chain ended).
    #[inline(always)]
    pub fn address(self) -> u64 {
        self.0
    }

    // ANCHOR: chain_next
    /// One dependent hop with a plain `ld.global.u64` (cached in L1 and L2) when `L2_ONLY` is
    /// false, `ld.global.cg.u64` (L2 only) when it is true: the loaded value is the next address.
    #[inline(always)]
    pub fn next<const L2_ONLY: bool>(self) -> Self {
        check!(self.0.is_multiple_of(8));
        let mut p = self.0;
        // SAFETY: the chain invariant: `p` is on the host's chain, so it holds the next address.
        unsafe {
            if L2_ONLY {
                asm!("ld.global.cg.u64 {0}, [{0}];", inout(reg64) p);
            } else {
                asm!("ld.global.u64 {0}, [{0}];", inout(reg64) p);
            }
        }
        Self(p)
    }
    // ANCHOR_END: chain_next

    /// [`ChainAddr::next`]`::<true>` timed on its own: reads `%clock64`, loads with
    /// `ld.global.cg.u64`, stores the loaded value to `scratch` (the store needs the value, so
    /// it waits for the load), and reads `%clock64` again. Returns the next address and the
    /// cycles between the clock reads: the load's latency plus the store's issue (a few cycles).
    #[inline(always)]
    pub fn next_cg_timed(self, scratch: &mut Scratch<'_>) -> (Self, u64) {
        check!(self.0.is_multiple_of(8));
        let mut p = self.0;
        let (t0, t1): (u64, u64);
        // SAFETY: the chain invariant; `scratch.address` is 8 writable bytes of this block's
        // shared memory ([`Scratch::of`]). One asm block, so nothing is scheduled inside the
        // window.
        unsafe {
            asm!(
                "mov.u64 {t0}, %clock64;",
                "ld.global.cg.u64 {p}, [{p}];",
                "st.shared.u64 [{s}], {p};",
                "mov.u64 {t1}, %clock64;",
                p = inout(reg64) p,
                s = in(reg32) scratch.address,
                t0 = out(reg64) t0,
                t1 = out(reg64) t1,
            )
        };
        (Self(p), t1.wrapping_sub(t0))
    }
}

/// One dependent hop of a chase as one `asm!` block (the shape every chase step here has):
/// `$load` reads the next link at the address the link `$link` gives, and the loaded value
/// replaces the link. `$link` is itself the address (`[{link}]`), or, after `at`, the address
/// is `{a}` computed from it by the instructions given (with their extra operands), in the same
/// block, so nothing is scheduled between the arithmetic and the load.
///
/// # Safety
/// (Of the expansion, an `unsafe` operation.) The address is inside the chain's memory and
/// aligned to the load: the chain invariant of the module. (`ChainAddr::next` keeps its two
/// loads written out: the book shows it as the example of a hop.)
macro_rules! hop {
    ($load:literal, $class:ident $link:ident) => {
        asm!(concat!($load, " {link}, [{link}];"), link = inout($class) $link)
    };
    ($load:literal, $link:ident at $($address:literal),+; $($operand:tt)*) => {
        asm!($($address,)+ concat!($load, " {link}, [{a}];"), link = inout(reg32) $link, a = out(reg32) _, $($operand)*)
    };
}

/// One `u64` of shared memory a timed hop stores its loaded value to (the store that closes
/// the timing window), borrowed from a writable shared slice for as long as it is used.
pub struct Scratch<'a> {
    address: u32,
    _slice: PhantomData<&'a mut SharedSlice<u64, Writing>>,
}

impl<'a> Scratch<'a> {
    /// The first word of `slice` (at least one word: checked in the `checked` build).
    #[inline(always)]
    pub fn of(slice: &'a mut SharedSlice<u64, Writing>) -> Self {
        check!(!slice.is_empty());
        Self { address: shared_address(slice.as_ptr()), _slice: PhantomData }
    }
}

/// A chain in a shared slice of `u32` words, followed one dependent `ld.shared.u32` per hop:
/// either each word holds the shared-window address of the next word (the address chase) or
/// its index (the index chase). Made from the slice in its write phase, before the words are
/// written ([`SharedChain::address`] gives what an address chase stores), and followed in its
/// read phase. The words are the host's chain copied in (every link names a word of the
/// slice): the launch contract each hop rests on; the `checked` build bounds every hop by the
/// slice's length.
#[derive(Clone, Copy)]
pub struct SharedChain {
    base: u32,
    #[cfg_attr(not(feature = "checked"), allow(dead_code))]
    words: u32,
}

impl SharedChain {
    /// The chain in `words` (its shared-window address, read once with `cvta.to.shared`).
    #[inline(always)]
    pub fn of(words: &SharedSlice<u32, Writing>) -> Self {
        Self { base: shared_address(words.as_ptr()), words: words.len() as u32 }
    }

    /// The shared-window address of the word at byte `offset` (what an address chase's word
    /// holds, and where it starts: `address(0)`).
    #[inline(always)]
    pub fn address(&self, offset: u32) -> u32 {
        self.base + offset
    }

    /// The byte offset of the shared-window address `p` (where an address chase ended).
    #[inline(always)]
    pub fn offset(&self, p: u32) -> u32 {
        p - self.base
    }

    /// One hop of the address chase, `ld.shared.u32 p, [p]`: the loaded word is the next
    /// address as it is (no arithmetic between two loads).
    #[inline(always)]
    pub fn next_address(&self, _words: &SharedSlice<u32, Reading>, mut p: u32) -> u32 {
        check!(p.wrapping_sub(self.base) < 4 * self.words && p.is_multiple_of(4));
        // SAFETY: `p` is the address of a word of the slice (checked, or by the chain
        // invariant), which is in its read phase: no thread writes it.
        unsafe { hop!("ld.shared.u32", reg32 p) };
        p
    }

    /// One hop of the index chase, `j = s[j]` as CUDA C++ writes it: `shl.b32` and `add.u32`
    /// turn the index into an address before the `ld.shared.u32`, all in one asm block.
    #[inline(always)]
    pub fn next_index(&self, _words: &SharedSlice<u32, Reading>, mut j: u32) -> u32 {
        check!(j < self.words);
        // SAFETY: as for `next_address`: `j` indexes a word of the slice.
        unsafe {
            hop!("ld.shared.u32", j at "shl.b32 {a}, {link}, 2;", "add.u32 {a}, {a}, {base};"; base = in(reg32) self.base)
        };
        j
    }
}

/// A chain of `N` words in a per-thread array in local memory, each holding the local-window
/// address of the next: [`local_chain`] fills it and hands it to the chase.
pub struct LocalChain<'a, const N: usize> {
    base: u32,
    _array: PhantomData<&'a [u32; N]>,
}

/// Fills a per-thread array of `N` words in local memory with the local-window addresses of
/// the words `next(w)` names (`cvta.to.local` of the array, then `base + 4 * next(w)` for
/// `w = 0..N`, in order), then runs `chase` on it. `next(w) < N` is the launch contract (the
/// host's chain; checked in the `checked` build).
#[inline(always)]
pub fn local_chain<const N: usize, R>(next: impl Fn(usize) -> u32, chase: impl FnOnce(&LocalChain<'_, N>) -> R) -> R {
    // Uninitialised: every word is written below, and a zeroing loop would only add stores.
    let mut array = core::mem::MaybeUninit::<[u32; N]>::uninit();
    let words = array.as_mut_ptr() as *mut u32;
    let base: u64;
    // SAFETY: `array` lives on the thread's stack, in the local window `cvta.to.local` maps to.
    unsafe { asm!("cvta.to.local.u64 {}, {};", out(reg64) base, in(reg64) words as u64) };
    let base = base as u32;
    for w in 0..N {
        let to = next(w);
        check!((to as usize) < N);
        // SAFETY: `w < N`, inside the array.
        unsafe { words.add(w).write(base + 4 * to) };
    }
    chase(&LocalChain { base, _array: PhantomData })
}

impl<const N: usize> LocalChain<'_, N> {
    /// The address of word 0, where the chase starts.
    #[inline(always)]
    pub fn first(&self) -> u32 {
        self.base
    }

    /// The word index of the local-window address `p` (where the chase ended).
    #[inline(always)]
    pub fn index(&self, p: u32) -> u32 {
        (p - self.base) / 4
    }

    /// One hop, `ld.local.u32 p, [p]`: the loaded word is the next address.
    #[inline(always)]
    pub fn next(&self, mut p: u32) -> u32 {
        check!(((p.wrapping_sub(self.base)) as usize) < 4 * N && p.is_multiple_of(4));
        // SAFETY: `p` is the address of a word of the array (checked, or as `local_chain`
        // wrote it); the asm reads memory, so the array's stores stay before it.
        unsafe { hop!("ld.local.u32", reg32 p) };
        p
    }
}

// The constant-memory chain: Rust has no `__constant__`, so the array is declared in the PTX
// `.const` state space here and the host fills it with `cuModuleGetGlobal` + a copy (what
// `cudaMemcpyToSymbol` does). Word `w` holds the byte offset of word `(w + 32) mod 256`.
global_asm!(".visible .const .align 4 .b32 memlab_const_chain[{}];", const CONST_CHAIN_WORDS);

/// One hop of the constant-memory chain (`memlab_const_chain`): `ld.const.u32` of the word at
/// byte offset `off`, whose value is the next offset. The host fills the chain with offsets of
/// its own words (the launch contract); the `checked` build bounds `off` by the chain's length.
#[inline(always)]
pub fn const_chain_next(mut off: u32) -> u32 {
    check!((off as usize) < 4 * CONST_CHAIN_WORDS && off.is_multiple_of(4));
    // SAFETY: `off` is a word of the chain (checked, or by the launch contract).
    unsafe { hop!("ld.const.u32", off at "mov.u32 {a}, memlab_const_chain;", "add.u32 {a}, {a}, {link};";) };
    off
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
