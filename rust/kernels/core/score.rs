//! The element types the kernels accept: f32 and f64, always widened to f64 for comparisons
//! against edges and for accumulation (SPEC: exact widening, f64 sums).

/// A probability element type.
pub trait Score: Wide + Copy + Default + Send + Sync + 'static {
    /// Exact widening to f64.
    fn to_f64(self) -> f64;
    /// A bucket key that is monotone non-decreasing in the value for non-negative values: the
    /// value's f32 bit pattern (f64 values rounded to f32 first, which is monotone) shifted
    /// right by `shift`. With shift 19 buckets hold 8 exponent and 4 mantissa bits, so each is
    /// at most 6.25% wide relative to its values, over the whole float range.
    fn key_bits(self, shift: u32) -> u32;
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

/// Element types the AVX2 kernels read, widened exactly to f64 lanes (every vector kernel
/// loads its values through these).
pub trait Wide: Copy + Default {
    const ONE: Self;
    /// Loads 4 consecutive values.
    ///
    /// # Safety
    /// `p..p+4` must be readable and AVX2 available.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load4(p: *const Self) -> std::arch::x86_64::__m256d;
    /// Loads the first `t` (< 4) values, zeros in the other lanes; reads nothing past `p+t`.
    ///
    /// # Safety
    /// `p..p+t` must be readable and AVX2 available.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load_first(p: *const Self, t: usize) -> std::arch::x86_64::__m256d;

    /// The last `t` (< 8) values of a row from `p`, as an array of f64 and as its two halves
    /// (zeros after the values); reads nothing past `p+t`. Masked loads stored whole: an array
    /// filled value by value (a `memcpy` for f64) and read back as vectors stalls on store
    /// forwarding (a tenth of SCE's time at K = 10).
    ///
    /// # Safety
    /// `p..p+t` must be readable and AVX2 available.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load_tail(p: *const Self, t: usize) -> ([f64; 8], std::arch::x86_64::__m256d, std::arch::x86_64::__m256d) {
        use std::arch::x86_64::*;
        assert!(t < 8);
        // SAFETY: `load4` reads p..p+4 when t >= 4, `load_first` only lanes below its count,
        // so nothing past p+t (readable by the caller's contract); the stores write the
        // 8-value array; AVX2 is available.
        unsafe {
            let (v0, v1) = if t >= 4 {
                (Self::load4(p), Self::load_first(p.add(4), t - 4))
            } else {
                (Self::load_first(p, t), _mm256_setzero_pd())
            };
            let mut a = [0.0f64; 8];
            _mm256_storeu_pd(a.as_mut_ptr(), v0);
            _mm256_storeu_pd(a.as_mut_ptr().add(4), v1);
            (a, v0, v1)
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Wide;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn lane_mask(t: usize) -> __m256i {
        // SAFETY: register operations only; AVX2 is available (this is inlined into AVX2 code).
        unsafe { _mm256_cmpgt_epi64(_mm256_set1_epi64x(t as i64), _mm256_setr_epi64x(0, 1, 2, 3)) }
    }

    impl Wide for f64 {
        const ONE: f64 = 1.0;
        #[inline(always)]
        unsafe fn load4(p: *const f64) -> __m256d {
            // SAFETY: reads p..p+4, readable by the caller's contract; AVX2 is available.
            unsafe { _mm256_loadu_pd(p) }
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f64, t: usize) -> __m256d {
            // SAFETY: the masked load reads only lanes < t, p..p+t, readable by the caller's contract; AVX2 is available.
            unsafe { _mm256_maskload_pd(p, lane_mask(t)) }
        }
    }

    impl Wide for f32 {
        const ONE: f32 = 1.0;
        #[inline(always)]
        unsafe fn load4(p: *const f32) -> __m256d {
            // SAFETY: reads p..p+4, readable by the caller's contract; AVX2 is available.
            unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, t: usize) -> __m256d {
            // SAFETY: the masked load reads only lanes < t, p..p+t, readable by the caller's contract; AVX2 is available.
            unsafe {
                let m = _mm_cmpgt_epi32(_mm_set1_epi32(t as i32), _mm_setr_epi32(0, 1, 2, 3));
                _mm256_cvtps_pd(_mm_maskload_ps(p, m))
            }
        }
    }
}
