//! Probes (`kernels-gpu/src/probes.rs`): strided reads, the bank probe, register pressure.

/// Threads per block the host launches every one-dimensional probe with.
pub const BLOCK: u32 = 256;

/// Loads per thread in `strided_read`: independent, so 8 are in flight per thread.
pub const STRIDED_READS_PER_THREAD: usize = 8;

/// Loads per thread in `misaligned_read`: independent, as in `strided_read`.
pub const MISALIGNED_READS_PER_THREAD: usize = 8;
/// The largest word offset `misaligned_read` takes: its input holds this many words past the
/// `8 * threads` it reads at offset 0.
pub const MISALIGNED_MAX_OFFSET: u32 = 32;

/// Words of the shared-memory array in `shared_bank_probe` (16 KiB).
pub const BANK_PROBE_WORDS: usize = 4096;
/// The window (in words, a power of two) the bank probe's step offset wraps in; with the
/// largest lane base (`31 * 33`) and unrolled offset (`7 * 32`) the highest word stays below
/// [`BANK_PROBE_WORDS`].
pub const BANK_PROBE_WINDOW: usize = 2048;
/// Loads per unrolled step of `shared_bank_probe`: independent, to keep the banks busy; the
/// loads per thread must be a multiple of it.
pub const BANK_PROBE_UNROLL: usize = 8;
/// Dynamic shared bytes of `shared_bank_probe`.
pub const BANK_PROBE_SMEM: u32 = (BANK_PROBE_WORDS * 4) as u32;

/// Bytes of the dynamic shared array of `shared_bank_probe_8` and `shared_bank_probe_16`.
pub const WIDE_PROBE_SMEM: u32 = 32768;
/// Lane offsets of the wide bank probes are below this many bytes.
pub const WIDE_PROBE_MAX_OFFSET: u32 = 16384;
/// The window, in bytes, that the wide probes' step offset wraps in (a power of two); with the
/// largest lane offset and unrolled offset (`7 * 128`) the highest byte stays inside the array.
pub const WIDE_PROBE_WINDOW: usize = 8192;
/// Bytes between the unrolled loads of a wide probe step: one full row of 32 banks, so every
/// load keeps the lane pattern's banks.
pub const WIDE_PROBE_ROW: usize = 128;

/// The value stored in word `w` of the bank probe's array; the host uses it for the checksum.
#[inline(always)]
pub const fn bank_probe_word(w: u32) -> u32 {
    w.wrapping_mul(0x9E37_79B9)
}

/// Accumulators per thread in `register_pressure`: enough live values that the natural
/// register count is well above 128, so a JIT register cap below it forces spills.
pub const PRESSURE_ACCUMULATORS: usize = 128;
