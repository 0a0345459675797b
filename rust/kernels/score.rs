//! The element types the kernels accept: f32 and f64, always widened to f64 for comparisons
//! against edges and for accumulation (SPEC: exact widening, f64 sums).

use crate::kernels::toplabel_scan::Wide;

/// A probability element type.
pub trait Score: Wide + Copy + Default + Send + Sync + 'static {
    /// Exact widening to f64.
    fn to_f64(self) -> f64;
    /// A bucket key that is monotone non-decreasing in the value for non-negative values: the
    /// value's f32 bit pattern (f64 values rounded to f32 first, which is monotone) shifted
    /// right by `shift`. With shift 19 buckets hold 8 exponent and 4 mantissa bits, so each is
    /// at most 6.25% wide relative to its values, over the whole float range.
    fn key_bits(self, shift: u32) -> u32;
    /// Whether [`Score::split`] can return a non-zero low part (f64; f32 values are their own
    /// high part).
    const HAS_LOW: bool;
    /// The value as `hi + lo` exactly, `hi` the value rounded to f32 (widened back), so that the
    /// high parts of values of one bucket (one f32 exponent, see [`Score::key_bits`]) add
    /// exactly in f64 (up to 2^29 of them), and the low parts are ~2^-24 of the value.
    fn split(self) -> (f64, f64);
    /// The slice as f64 values, if `Self` is f64 (for kernels written per element type).
    fn as_f64s(s: &[Self]) -> Option<&[f64]>;
    /// [`Score::as_f64s`], mutable.
    fn as_f64s_mut(s: &mut [Self]) -> Option<&mut [f64]>;
    /// The slice as f32 values, if `Self` is f32.
    fn as_f32s(s: &[Self]) -> Option<&[f32]>;
    /// [`Score::as_f32s`], mutable.
    fn as_f32s_mut(s: &mut [Self]) -> Option<&mut [f32]>;
}


impl Score for f32 {
    fn as_f64s(_: &[f32]) -> Option<&[f64]> {
        None
    }
    fn as_f64s_mut(_: &mut [f32]) -> Option<&mut [f64]> {
        None
    }
    fn as_f32s(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }
    fn as_f32s_mut(s: &mut [f32]) -> Option<&mut [f32]> {
        Some(s)
    }
    const HAS_LOW: bool = false;
    #[inline(always)]
    fn split(self) -> (f64, f64) {
        (self as f64, 0.0)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn key_bits(self, shift: u32) -> u32 {
        self.to_bits() >> shift
    }
}

impl Score for f64 {
    fn as_f64s(s: &[f64]) -> Option<&[f64]> {
        Some(s)
    }
    fn as_f64s_mut(s: &mut [f64]) -> Option<&mut [f64]> {
        Some(s)
    }
    fn as_f32s(_: &[f64]) -> Option<&[f32]> {
        None
    }
    fn as_f32s_mut(_: &mut [f64]) -> Option<&mut [f32]> {
        None
    }
    const HAS_LOW: bool = true;
    #[inline(always)]
    fn split(self) -> (f64, f64) {
        let hi = (self as f32) as f64;
        // Exact: hi is within half an f32 ulp of self.
        (hi, self - hi)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn key_bits(self, shift: u32) -> u32 {
        // Rounding to f32 is monotone non-decreasing, so the key is too.
        (self as f32).to_bits() >> shift
    }
}
