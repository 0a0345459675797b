//! The top-label scan of short rows (K <= 16 classes) with AVX2: each row's maximum and first
//! argmax, and the input checks as cheap vector accumulations.
//!
//! Four rows are read four columns at a time (float32 widened exactly to f64 on load; the last
//! columns with a masked load, so nothing past a row is read), transposed in registers, and
//! scanned column by column with one row per lane: the strict `>` of the scalar scan in column
//! order, so maximum and argmax are exactly the scalar ones (NaN included). K is a compile-time
//! constant (one copy of the loop per K), so the column loop is fully unrolled.
//!
//! Checks are only a filter here: the scan reports whether some row of the range *may* fail
//! (values outside [0, 1] +- tol, non-finite values, row sums off by more than the tolerance
//! minus a margin covering the different summation order), and the caller re-checks a
//! suspicious range with the scalar row checks, which alone decide. So results and errors are
//! identical to the scalar path; only clean ranges skip the scalar work.

use std::ops::Range;

/// Which checks a scanned range may fail (conservatively: false means it certainly passes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Suspect {
    /// Some value may be non-finite or outside [0, 1] +- `RANGE_TOL`.
    pub values: bool,
    /// Some row sum may differ from 1 by more than `ROW_SUM_TOL`.
    pub sums: bool,
}

/// Scans rows `rows` of the row-major `probs` with `k` columns, writing each row's maximum to
/// `conf` and its first argmax to `pred` (both of length `rows.len()`). `None` when there is no
/// vector path for this row length or CPU: the caller scans with scalar code.
pub fn scan<T: Wide>(probs: &[T], k: usize, rows: Range<usize>, conf: &mut [f64], pred: &mut [u32]) -> Option<Suspect> {
    assert!(rows.start <= rows.end && rows.end * k <= probs.len());
    assert!(conf.len() == rows.len() && pred.len() == rows.len());
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::simd::avx2() {
        use crate::kernels::simd::{record, Kernel, Level};
        macro_rules! by_k {
            ($($k:literal)*) => {
                match k {
                    $($k => {
                        record(Kernel::TopLabelScan, Level::Avx2);
                        // SAFETY: AVX2 is present (checked above), the bounds were asserted
                        // above, and every load is inside a row of `rows`.
                        return Some(unsafe { x86::scan::<T, $k>(probs, rows, conf, pred) });
                    })*
                    _ => {}
                }
            };
        }
        by_k!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    }
    crate::kernels::simd::record(crate::kernels::simd::Kernel::TopLabelScan, crate::kernels::simd::Level::Portable);
    None
}

/// Element types the vector scan reads, widened exactly to f64 lanes.
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
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Suspect, Wide};
    use crate::kernels::validate::{RANGE_TOL, ROW_SUM_TOL};
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// Row sums are flagged this much inside the tolerance: the scalar check sums in another
    /// order (K <= 16 values: the sums differ by ~1e-15).
    const SUM_MARGIN: f64 = 1e-9;

    #[inline(always)]
    unsafe fn lane_mask(t: usize) -> __m256i {
        // SAFETY: register operations only; AVX2 is available (this is inlined into AVX2 code).
        unsafe {
            _mm256_cmpgt_epi64(_mm256_set1_epi64x(t as i64), _mm256_setr_epi64x(0, 1, 2, 3))
            }
    }

    impl Wide for f64 {
        const ONE: f64 = 1.0;
        #[inline(always)]
        unsafe fn load4(p: *const f64) -> __m256d {
            // SAFETY: reads p..p+4, readable by the caller's contract; AVX2 is available.
            unsafe {
                _mm256_loadu_pd(p)
                    }
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f64, t: usize) -> __m256d {
            // SAFETY: the masked load reads only lanes < t, p..p+t, readable by the caller's contract; AVX2 is available.
            unsafe {
                _mm256_maskload_pd(p, lane_mask(t))
                    }
        }
    }

    impl Wide for f32 {
        const ONE: f32 = 1.0;
        #[inline(always)]
        unsafe fn load4(p: *const f32) -> __m256d {
            // SAFETY: reads p..p+4, readable by the caller's contract; AVX2 is available.
            unsafe {
                _mm256_cvtps_pd(_mm_loadu_ps(p))
                    }
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

    /// Running state of the checks, one lane per row of a group of four.
    struct Acc {
        min: __m256d,
        max: __m256d,
        bad_sum: __m256d,
        non_finite: __m256d,
    }

    /// Four rows starting at `p` (row stride K): per row the maximum, the first column holding
    /// it, and the row sum, one row per lane. Columns are read four at a time from each row and
    /// transposed in registers, so that the scan over the columns is vertical, in column order,
    /// with the scalar scan's strict `>`: the same maximum and argmax, NaN included.
    #[inline(always)]
    unsafe fn four_rows<T: Wide, const K: usize>(p: *const T, acc: &mut Acc) -> (__m256d, __m256d) {
        // SAFETY: the loads read rows 0..4 of K values from p (the caller guarantees 4 * K readable values), columns c0..c0+t of each row with t <= K - c0; AVX2 is available. Offsets depend on K only, never on values.
        unsafe {
            let mut m = _mm256_set1_pd(f64::NEG_INFINITY);
            let mut arg = _mm256_setzero_pd();
            let mut sum = [_mm256_setzero_pd(); 2];
            let mut min = acc.min;
            let mut c0 = 0;
            while c0 < K {
                let t = if K - c0 >= 4 { 4 } else { K - c0 };
                let load = |r: usize| if t == 4 { T::load4(p.add(r * K + c0)) } else { T::load_first(p.add(r * K + c0), t) };
                let (r0, r1, r2, r3) = (load(0), load(1), load(2), load(3));
                let (a, b) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
                let (c, d) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
                let cols = [
                    _mm256_permute2f128_pd(a, c, 0x20),
                    _mm256_permute2f128_pd(b, d, 0x20),
                    _mm256_permute2f128_pd(a, c, 0x31),
                    _mm256_permute2f128_pd(b, d, 0x31),
                ];
                for (j, &col) in cols.iter().enumerate().take(t) {
                    let gt = _mm256_cmp_pd(col, m, _CMP_GT_OQ);
                    // max(col, m) is `col > m ? col : m`: the scalar update, NaN and ties included.
                    m = _mm256_max_pd(col, m);
                    arg = _mm256_blendv_pd(arg, _mm256_set1_pd((c0 + j) as f64), gt);
                    // Two partial sums halve the dependency chain.
                    sum[(c0 + j) & 1] = _mm256_add_pd(sum[(c0 + j) & 1], col);
                    min = _mm256_min_pd(min, col);
                }
                c0 += t;
            }
            acc.min = min;
            acc.max = _mm256_max_pd(acc.max, m);
            let sum = _mm256_add_pd(sum[0], sum[1]);
            let sign = _mm256_set1_pd(-0.0);
            let dev = _mm256_andnot_pd(sign, _mm256_sub_pd(sum, _mm256_set1_pd(1.0)));
            let tol = _mm256_set1_pd(ROW_SUM_TOL - SUM_MARGIN);
            acc.bad_sum = _mm256_or_pd(acc.bad_sum, _mm256_cmp_pd(dev, tol, _CMP_NLE_UQ));
            // A NaN or infinite value makes its row sum NaN or infinite.
            let inf = _mm256_set1_pd(f64::INFINITY);
            acc.non_finite = _mm256_or_pd(acc.non_finite, _mm256_cmp_pd(_mm256_andnot_pd(sign, sum), inf, _CMP_NLT_UQ));
            (m, arg)
            }
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn scan<T: Wide, const K: usize>(probs: &[T], rows: Range<usize>, conf: &mut [f64], pred: &mut [u32]) -> Suspect {
        // SAFETY: (`scan`'s dispatcher asserts rows.end * K <= probs.len() and conf, pred of rows.len()) every group of four rows r..r+4 with r + 4 <= n lies in `rows`, so `four_rows` reads inside `probs`, and the stores write conf[r..r+4] and pred[r..r+4]; the last rows are copied into the 64-value `pad` (4 * K <= 64 for K <= 16). Offsets depend only on the shape, not on the values, so a concurrent writer cannot move them; the predictions stored are columns < K.
        unsafe {
            let zero = _mm256_setzero_pd();
            let mut acc = Acc { min: zero, max: zero, bad_sum: zero, non_finite: zero };
            let n = rows.len();
            let base = probs.as_ptr().add(rows.start * K);
            let mut r = 0;
            while r + 4 <= n {
                let (m, arg) = four_rows::<T, K>(base.add(r * K), &mut acc);
                _mm256_storeu_pd(conf.as_mut_ptr().add(r), m);
                _mm_storeu_si128(pred.as_mut_ptr().add(r) as *mut __m128i, _mm256_cvttpd_epi32(arg));
                r += 4;
            }
            if r < n {
                // The last rows, copied into a group padded with rows of exactly [1, 0, ..., 0].
                let mut pad = [T::default(); 64];
                for q in 0..4 {
                    if r + q < n {
                        std::ptr::copy_nonoverlapping(base.add((r + q) * K), pad.as_mut_ptr().add(q * K), K);
                    } else {
                        pad[q * K] = T::ONE;
                    }
                }
                let (m, arg) = four_rows::<T, K>(pad.as_ptr(), &mut acc);
                let (mut cm, mut ca) = ([0.0f64; 4], [0u32; 4]);
                _mm256_storeu_pd(cm.as_mut_ptr(), m);
                _mm_storeu_si128(ca.as_mut_ptr() as *mut __m128i, _mm256_cvttpd_epi32(arg));
                conf[r..n].copy_from_slice(&cm[..n - r]);
                pred[r..n].copy_from_slice(&ca[..n - r]);
            }
            let lo = _mm256_cmp_pd(acc.min, _mm256_set1_pd(-RANGE_TOL), _CMP_NGE_UQ);
            let hi = _mm256_cmp_pd(acc.max, _mm256_set1_pd(1.0 + RANGE_TOL), _CMP_NLE_UQ);
            let values = _mm256_or_pd(_mm256_or_pd(lo, hi), acc.non_finite);
            Suspect { values: _mm256_movemask_pd(values) != 0, sums: _mm256_movemask_pd(acc.bad_sum) != 0 }
            }
    }
}
