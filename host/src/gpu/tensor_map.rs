//! Tensor maps for TMA (`CUtensorMap`, built by `cuTensorMapEncodeTiled`, which cust's bindings
//! lack: declared in [`super::driver`]): a 2-D f32 matrix, the box one tensor copy moves, the
//! shared-memory swizzle. The kernels read a map from the module's constant memory
//! (`memlab_tma_maps`), so [`TensorMaps::place`] writes it into a slot there before the launch
//! and the launch passes the slot ([`MapSlot`]).
//!
//! What a map can describe is checked before the driver is asked ([`TiledSpec::check`]), each
//! limit named in one line. Limits: CUDA Driver API, `cuTensorMapEncodeTiled` (global address
//! 16-byte aligned; every global stride a multiple of 16 bytes (and below 2^40, which a
//! 2-D f32 matrix of at most 2^32 columns never reaches); dimensions 1 to
//! 2^32; box dimensions 1 to 256, the inner one a multiple of 16 bytes and, swizzled, no wider
//! than the swizzle span).

use std::cell::RefCell;
use std::ffi::{CStr, c_void};

use anyhow::Result;
use cust::memory::CopyDestination;
use cust::module::Module;
use memlab_contracts::tma::MAP_SLOTS;

pub use super::cuda_h::TensorMap;
use super::launch::{KernelArg, Param};
use super::result::{check, describe};
use crate::refuse;

/// The element type of a map (`CUtensorMapDataType`; CUDA Driver API, `cuTensorMapEncodeTiled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32`.
    F32,
    /// `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`.
    Bf16,
    /// FP8 e4m3 bytes, as `CU_TENSOR_MAP_DATA_TYPE_UINT8` (the copy engine moves bytes; only
    /// `wgmma` reads them as e4m3).
    E4m3,
}

impl Element {
    /// The driver's number for it.
    fn code(self) -> u32 {
        match self {
            Element::F32 => 7,
            Element::Bf16 => 9,
            Element::E4m3 => 0,
        }
    }

    /// Bytes of one element.
    pub fn bytes(self) -> u64 {
        match self {
            Element::F32 => 4,
            Element::Bf16 => 2,
            Element::E4m3 => 1,
        }
    }

    /// Its name in messages: `f32`, `bf16`, `e4m3`.
    pub fn name(self) -> &'static str {
        match self {
            Element::F32 => "f32",
            Element::Bf16 => "bf16",
            Element::E4m3 => "e4m3",
        }
    }

    /// The smallest row pitch, in elements, of at least `cols` elements that a map can
    /// describe: `cols` rounded up to whole [`STRIDE_GRANULE`]s.
    pub fn padded_pitch(self, cols: u64) -> u64 {
        let per_granule = STRIDE_GRANULE / self.bytes();
        cols.div_ceil(per_granule) * per_granule
    }
}
/// Global strides are multiples of this, bytes, and so is a box's inner dimension.
pub const STRIDE_GRANULE: u64 = 16;
/// Alignment of the global address, bytes (without interleave).
pub const ADDRESS_ALIGN: u64 = 16;
/// Largest box dimension, elements.
pub const MAX_BOX: u32 = 256;
/// Largest global dimension, elements.
pub const MAX_DIM: u64 = 1 << 32;

/// The tensor map's shared-memory swizzle (`CUtensorMapSwizzle`, same numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Rows land as they are.
    None = 0,
    /// 16-byte chunks XOR-permuted inside 32-byte spans.
    B32 = 1,
    /// Inside 64-byte spans.
    B64 = 2,
    /// Inside 128-byte spans.
    B128 = 3,
}

impl Swizzle {
    /// The four modes, in `CUtensorMapSwizzle` order.
    pub const ALL: [Swizzle; 4] = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];

    /// The mode number the kernels and `memlab_contracts::tma::swizzle` take.
    pub fn mode(self) -> u32 {
        self as u32
    }

    /// The span in bytes, `None` without swizzle.
    pub fn span(self) -> Option<u32> {
        (self != Swizzle::None).then(|| memlab_contracts::tma::swizzle_span(self.mode()))
    }

    /// Its name in tables: `none`, `32B`, `64B`, `128B`.
    pub fn name(self) -> String {
        self.span().map_or("none".into(), |s| format!("{s}B"))
    }
}

/// How far the copy engine widens its L2 requests for a map's boxes (`CUtensorMapL2promotion`,
/// same numbering; CUDA Driver API, `cuTensorMapEncodeTiled`): not at all, or to 64, 128 or
/// 256 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Promotion {
    /// Requests as the box's rows make them.
    None = 0,
    /// To 64 bytes.
    B64 = 1,
    /// To 128 bytes.
    B128 = 2,
    /// To 256 bytes.
    B256 = 3,
}

impl L2Promotion {
    /// The four settings, in `CUtensorMapL2promotion` order.
    pub const ALL: [L2Promotion; 4] = [L2Promotion::None, L2Promotion::B64, L2Promotion::B128, L2Promotion::B256];

    /// Its name in tables: `none`, `64B`, `128B`, `256B`.
    pub fn name(self) -> String {
        match self {
            L2Promotion::None => "none".into(),
            p => format!("{}B", 32 << (p as u32)),
        }
    }
}

/// A 2-D row-major matrix as a tensor map describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledSpec {
    /// Device address of element `(0, 0)`.
    pub address: u64,
    /// The element type.
    pub element: Element,
    /// Rows and columns of the matrix.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Elements from one row's start to the next (`>= cols`): a matrix whose rows are not a
    /// multiple of 16 bytes is stored with a padded pitch ([`Element::padded_pitch`]).
    pub pitch: u64,
    /// Rows and columns of one box (the tile a copy moves).
    pub box_rows: u32,
    /// Columns of one box.
    pub box_cols: u32,
    /// Shared-memory layout of a box.
    pub swizzle: Swizzle,
    /// L2 request size for the boxes.
    pub l2_promotion: L2Promotion,
}

impl TiledSpec {
    /// Refuses what `cuTensorMapEncodeTiled` cannot describe, one line naming the first limit
    /// broken (see the module's limits).
    ///
    /// # Errors
    /// That line, as a refusal (exit 2).
    pub fn check(&self) -> Result<()> {
        let (bytes, name) = (self.element.bytes(), self.element.name());
        let pitch = self.pitch * bytes;
        let inner = self.box_cols as u64 * bytes;
        if self.rows == 0 || self.cols == 0 || self.rows > MAX_DIM || self.cols > MAX_DIM {
            refuse!(
                "a tensor map cannot describe a {}x{} matrix: each dimension must be 1 to 2^32",
                self.rows,
                self.cols
            );
        }
        if !self.address.is_multiple_of(ADDRESS_ALIGN) {
            refuse!("a tensor map needs its global address {ADDRESS_ALIGN}-byte aligned, got {:#x}", self.address);
        }
        if self.pitch < self.cols {
            refuse!("a tensor map's row pitch of {} elements is shorter than its {} columns", self.pitch, self.cols);
        }
        if self.rows > 1 && !pitch.is_multiple_of(STRIDE_GRANULE) {
            refuse!(
                "a tensor map cannot describe a row pitch of {} {name}: {pitch} bytes is not a multiple of {STRIDE_GRANULE} bytes (pad it to {})",
                self.pitch,
                self.element.padded_pitch(self.pitch)
            );
        }
        for (what, n) in [("rows", self.box_rows), ("columns", self.box_cols)] {
            if n == 0 || n > MAX_BOX {
                refuse!("a tensor map's box must have 1 to {MAX_BOX} {what}, got {n}");
            }
        }
        if !inner.is_multiple_of(STRIDE_GRANULE) {
            refuse!("a tensor map's box row of {inner} bytes is not a multiple of {STRIDE_GRANULE} bytes");
        }
        if let Some(span) = self.swizzle.span()
            && inner > span as u64
        {
            refuse!(
                "a tensor map's box row of {inner} bytes is wider than its {span}-byte swizzle span: swizzled boxes are at most {span} bytes wide"
            );
        }
        Ok(())
    }

    /// The map, from the driver (`cuTensorMapEncodeTiled`), after [`TiledSpec::check`]; no
    /// interleave, zeros for reads outside the matrix.
    ///
    /// # Errors
    /// The check's refusal, or the driver's.
    pub fn encode(&self) -> Result<TensorMap> {
        self.check()?;
        let dims = [self.cols, self.rows];
        let strides = [self.pitch * self.element.bytes()];
        let boxes = [self.box_cols, self.box_rows];
        let element_strides = [1u32, 1];
        let mut map = TensorMap([0; 16]);
        // SAFETY: the arrays hold rank (2) and rank - 1 entries, as the driver reads them.
        let r = unsafe {
            super::driver::raw::cuTensorMapEncodeTiled(
                &mut map,
                self.element.code(),
                2,
                self.address as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                0,
                self.swizzle.mode(),
                self.l2_promotion as u32,
                0,
            )
        };
        check("cuTensorMapEncodeTiled", r).map_err(|e| {
            e.during(format!(
                "encoding a {}x{} {} tensor map, box {}x{}, swizzle {}, L2 promotion {}",
                self.rows,
                self.cols,
                self.element.name(),
                self.box_rows,
                self.box_cols,
                self.swizzle.name(),
                self.l2_promotion.name()
            ))
        })?;
        Ok(map)
    }
}

/// The constant-memory array of tensor maps in the sm_90 PTX (kernels-gpu `device/tma.rs`) and
/// in `bench/twins.cu`.
pub const MAPS_SYMBOL: &CStr = c"memlab_tma_maps";

/// A tensor map's slot in [`MAPS_SYMBOL`], the kernel parameter that names it (`u32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapSlot(u32);

impl KernelArg for MapSlot {
    const PARAM: Param = Param::U32;
    fn bytes(&self) -> [u8; 8] {
        self.0.bytes()
    }
}

/// The tensor maps placed in [`MAPS_SYMBOL`] so far, in slot order: a map equal to one placed
/// before gets that slot, so one process needs at most as many slots as distinct maps.
#[derive(Default)]
pub struct TensorMaps {
    placed: RefCell<Vec<TensorMap>>,
}

impl TensorMaps {
    /// The slot of `map`, writing the array into each of `modules` (the lab's, and the CUDA C++
    /// twins' when `memlab bench` runs them) before any launch that uses it. No write overlaps
    /// a kernel: the copy (`cuMemcpyHtoD`) runs in the legacy default stream, which waits for
    /// the lab's blocking stream (`gpu/context.rs`) and which that stream's later launches wait
    /// for (CUDA Driver API, "Stream synchronization behavior"). A slot's bytes never change
    /// once placed: the array is rebuilt from the maps placed so far.
    ///
    /// # Errors
    /// Every slot holds another map ([`MAP_SLOTS`]), a module lacks the array, or the copy
    /// fails.
    pub fn place(&self, map: TensorMap, modules: &[&Module]) -> Result<MapSlot> {
        let mut placed = self.placed.borrow_mut();
        let slot = slot_for(&mut placed, map)?;
        let mut array = [TensorMap([0; 16]); MAP_SLOTS as usize];
        array[..placed.len()].copy_from_slice(&placed);
        for module in modules {
            let mut symbol = module
                .get_global::<[TensorMap; MAP_SLOTS as usize]>(MAPS_SYMBOL)
                .map_err(|e| anyhow::anyhow!("the tensor-map array `memlab_tma_maps`: {}", describe(e)))?;
            symbol.copy_from(&array).map_err(|e| anyhow::anyhow!("writing a tensor map: {}", describe(e)))?;
        }
        Ok(MapSlot(slot as u32))
    }
}

/// The slot of `map` among the maps `placed` in slot order: an equal one's, else the next free
/// one, which it takes.
fn slot_for(placed: &mut Vec<TensorMap>, map: TensorMap) -> Result<usize> {
    match placed.iter().position(|m| *m == map) {
        Some(slot) => Ok(slot),
        None if placed.len() < MAP_SLOTS as usize => {
            placed.push(map);
            Ok(placed.len() - 1)
        }
        None => refuse!("more than {MAP_SLOTS} distinct tensor maps in one run: the module holds {MAP_SLOTS}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_maps_share_a_slot_and_the_array_has_a_limit() {
        let map = |b: u64| TensorMap([b; 16]);
        let mut placed = Vec::new();
        assert_eq!(slot_for(&mut placed, map(1)).unwrap(), 0);
        assert_eq!(slot_for(&mut placed, map(2)).unwrap(), 1);
        assert_eq!(slot_for(&mut placed, map(1)).unwrap(), 0, "an equal map reuses its slot");
        for b in 3..=u64::from(MAP_SLOTS) {
            slot_for(&mut placed, map(b)).unwrap();
        }
        assert_eq!(placed.len(), MAP_SLOTS as usize);
        assert_eq!(slot_for(&mut placed, map(2)).unwrap(), 1);
        assert_eq!(
            slot_for(&mut placed, map(0)).unwrap_err().to_string(),
            "more than 128 distinct tensor maps in one run: the module holds 128"
        );
        assert_eq!(MapSlot(7).bytes(), [7, 0, 0, 0, 0, 0, 0, 0]);
    }

    fn spec() -> TiledSpec {
        TiledSpec {
            address: 0x7f00_0000_0000,
            element: Element::F32,
            rows: 8192,
            cols: 8192,
            pitch: 8192,
            box_rows: 64,
            box_cols: 64,
            swizzle: Swizzle::None,
            l2_promotion: L2Promotion::None,
        }
    }

    fn refusal(s: TiledSpec) -> String {
        s.check().unwrap_err().to_string()
    }

    #[test]
    fn maps_the_lesson_uses_pass() {
        assert!(spec().check().is_ok());
        for sw in Swizzle::ALL {
            let cols = memlab_contracts::tma::box_cols(sw.mode());
            assert!(TiledSpec { box_cols: cols, swizzle: sw, ..spec() }.check().is_ok(), "{sw:?}");
        }
        // Odd rows are fine; a single row has no pitch to check.
        assert!(TiledSpec { rows: 4099, cols: 1, pitch: 1, ..spec() }.check().is_err());
        assert!(TiledSpec { rows: 1, cols: 3, pitch: 3, box_cols: 4, ..spec() }.check().is_ok());
        assert!(TiledSpec { rows: 4099, cols: 4100, pitch: 4100, ..spec() }.check().is_ok());
        // A width a pitch cannot have is stored padded: 33 f32 in 36, 263 bf16 in 264.
        assert!(TiledSpec { rows: 31, cols: 33, pitch: 36, ..spec() }.check().is_ok());
        assert_eq!((Element::F32.padded_pitch(33), Element::Bf16.padded_pitch(263)), (36, 264));
        assert_eq!((Element::Bf16.padded_pitch(8), Element::Bf16.padded_pitch(1)), (8, 8));
    }

    #[test]
    fn shapes_a_map_cannot_describe_are_refused_with_the_limit() {
        assert_eq!(
            refusal(TiledSpec { cols: 1001, pitch: 1001, ..spec() }),
            "a tensor map cannot describe a row pitch of 1001 f32: 4004 bytes is not a multiple of 16 bytes (pad it to 1004)"
        );
        assert_eq!(
            refusal(TiledSpec { element: Element::Bf16, cols: 263, pitch: 263, ..spec() }),
            "a tensor map cannot describe a row pitch of 263 bf16: 526 bytes is not a multiple of 16 bytes (pad it to 264)"
        );
        assert_eq!(
            refusal(TiledSpec { cols: 100, pitch: 96, ..spec() }),
            "a tensor map's row pitch of 96 elements is shorter than its 100 columns"
        );
        assert_eq!(
            refusal(TiledSpec { address: 0x7f00_0000_0004, ..spec() }),
            "a tensor map needs its global address 16-byte aligned, got 0x7f0000000004"
        );
        assert_eq!(
            refusal(TiledSpec { box_rows: 257, ..spec() }),
            "a tensor map's box must have 1 to 256 rows, got 257"
        );
        assert_eq!(
            refusal(TiledSpec { box_cols: 0, ..spec() }),
            "a tensor map's box must have 1 to 256 columns, got 0"
        );
        assert_eq!(
            refusal(TiledSpec { box_cols: 6, ..spec() }),
            "a tensor map's box row of 24 bytes is not a multiple of 16 bytes"
        );
        assert_eq!(
            refusal(TiledSpec { swizzle: Swizzle::B128, ..spec() }),
            "a tensor map's box row of 256 bytes is wider than its 128-byte swizzle span: swizzled boxes are at most 128 bytes wide"
        );
        assert_eq!(
            refusal(TiledSpec { rows: 0, ..spec() }),
            "a tensor map cannot describe a 0x8192 matrix: each dimension must be 1 to 2^32"
        );
    }

    #[test]
    fn swizzle_names_and_spans() {
        let names: Vec<String> = Swizzle::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["none", "32B", "64B", "128B"]);
        assert_eq!(Swizzle::B64.span(), Some(64));
        assert_eq!(Swizzle::None.span(), None);
        let names: Vec<String> = L2Promotion::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["none", "64B", "128B", "256B"]);
    }
}
