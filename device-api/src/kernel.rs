//! Kernel entry points: [`crate::kernel!`] turns a kernel written on the API into a PTX entry
//! whose parameters are the raw ones the host passes (a pointer is `.param .u64`, so the typed
//! launches and `host/tests/launch_params.rs` see the same entry), and wraps them.

/// A kernel parameter: its raw PTX form and how the entry wraps it.
pub trait Param {
    /// What the launch passes (`*const T`, `*mut T`, `u32`, `f32`).
    type Raw;
    /// Wraps the raw parameter.
    ///
    /// # Safety
    /// `raw` is the launch's parameter, under the crate's invariant 1.
    #[doc(hidden)]
    unsafe fn from_raw(raw: Self::Raw) -> Self;
}

impl Param for u32 {
    type Raw = u32;
    #[inline(always)]
    unsafe fn from_raw(raw: u32) -> u32 {
        raw
    }
}

impl Param for f32 {
    type Raw = f32;
    #[inline(always)]
    unsafe fn from_raw(raw: f32) -> f32 {
        raw
    }
}

impl<T> Param for crate::global::GlobalIn<T> {
    type Raw = *const T;
    #[inline(always)]
    unsafe fn from_raw(raw: *const T) -> Self {
        // SAFETY: forwarded.
        unsafe { Self::from_raw(raw) }
    }
}

impl<T> Param for crate::global::GlobalOut<T> {
    type Raw = *mut T;
    #[inline(always)]
    unsafe fn from_raw(raw: *mut T) -> Self {
        // SAFETY: forwarded.
        unsafe { Self::from_raw(raw) }
    }
}

/// The running block, given to a kernel declared with `block: Block` as its first parameter:
/// its dynamic shared memory, carved once ([`Block::carve`]), and its barrier. Not a PTX
/// parameter, not `Clone`: one per kernel run, so each tile has exactly one handle per thread.
pub struct Block {
    _one: (),
}

impl Block {
    /// The kernel's block.
    ///
    /// # Safety
    /// Called once per kernel run, by [`crate::kernel!`].
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn new() -> Self {
        Self { _one: () }
    }
}

/// Declares a kernel: a PTX entry point (`#[no_mangle] extern "ptx-kernel"`) with the given
/// name whose body is safe code on the API. Parameters are `GlobalIn<T>` (a `const T*`),
/// `GlobalOut<T>` (a `T*`), `u32` and `f32`; a first parameter `block: Block` is the block
/// (not passed by the launch). On the host the entry is a plain `unsafe fn`, so kernels
/// type-check in host tests.
///
/// ```ignore
/// kernel! {
///     /// Doc comment: launch shape, shared bytes, preconditions, memory level.
///     pub fn copy(input: GlobalIn<f32>, output: GlobalOut<f32>, len: u32) {
///         let (input, mut output) = (input.slice(len as usize), output.slice(len as usize));
///         ...
///     }
/// }
/// ```
#[macro_export]
macro_rules! kernel {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($block:ident: Block $(, $p:ident: $t:ty)* $(,)?) $body:block) => {
        $crate::kernel!(@entry [$(#[$attr])*] $vis $name
            [let $block = unsafe { $crate::Block::new() };] ($($p: $t),*) $body);
    };
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($p:ident: $t:ty),* $(,)?) $body:block) => {
        $crate::kernel!(@entry [$(#[$attr])*] $vis $name [] ($($p: $t),*) $body);
    };
    (@entry [$($attr:tt)*] $vis:vis $name:ident [$($block:tt)*] ($($p:ident: $t:ty),*) $body:block) => {
        $($attr)*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        $vis unsafe extern "ptx-kernel" fn $name($($p: <$t as $crate::Param>::Raw),*) {
            // SAFETY: the parameters are the launch's (the crate's invariant 1).
            $(let $p = unsafe { <$t as $crate::Param>::from_raw($p) };)*
            $($block)*
            $body
        }

        $($attr)*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(clippy::missing_safety_doc)]
        $vis unsafe fn $name($($p: <$t as $crate::Param>::Raw),*) {
            $(let $p = unsafe { <$t as $crate::Param>::from_raw($p) };)*
            $($block)*
            $body
        }
    };
}
