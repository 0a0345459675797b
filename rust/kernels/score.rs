//! The element types the kernels accept: f32 and f64, always widened to f64 for comparisons
//! against edges and for accumulation (SPEC: exact widening, f64 sums).

/// A probability element type.
pub trait Score: Copy + Default + Send + Sync + 'static {
    /// Exact widening to f64.
    fn to_f64(self) -> f64;
    /// A bucket key that is monotone non-decreasing in the value for non-negative values:
    /// the top bits of the value's f32 bit pattern (8 exponent bits and 4 mantissa bits), so
    /// buckets are at most 6.25% wide relative to the value, over the whole float range, and
    /// a histogram over the keys of [0, 2] (2049 buckets) stays in L1 cache.
    fn key(self) -> u32;
}

/// Number of bit positions dropped from the f32 pattern to form a bucket key.
pub const KEY_SHIFT: u32 = 19;
/// Keys are clamped to this value (2.0's key); validated inputs never exceed 1 + tolerance.
pub const MAX_KEY: u32 = 0x4000_0000 >> KEY_SHIFT;

impl Score for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn key(self) -> u32 {
        (self.to_bits() >> KEY_SHIFT).min(MAX_KEY)
    }
}

impl Score for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn key(self) -> u32 {
        // Rounding to f32 is monotone non-decreasing, so the key is too.
        ((self as f32).to_bits() >> KEY_SHIFT).min(MAX_KEY)
    }
}
