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
//!
//! Rows of more than 16 classes take [`long_row`]: eight lanes of the value type (running
//! maximum with the strict `>`, the chunk where it was raised as a float, sum, minimum), in
//! two f64 AVX2 registers (one f32 register for maximum, index and minimum of f32 rows),
//! combined once per row ([`long_row_portable`] is its portable twin: bitwise the same
//! argmax, maximum, sum and bad-value flag, so checks and errors are unchanged).
//!
//! [`scan_rows`] is the row scan both top-label paths call ([`crate::kernels::gce::toplabel`]'s
//! summary and [`crate::kernels::gce::toplabel_even`]'s fused blocks): the vector scan where it
//! applies, else the scalar scan ([`summarise_rows`]), each row validated as it is read. It
//! lives here, below both, so that neither top-label module imports the other back.

use std::ops::Range;

use crate::kernels::core::validate::{self, first_failing_row, row_ok, Checks};
use crate::kernels::core::score::Wide;
use crate::kernels::{Inputs, Score};

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
    if crate::kernels::core::simd::avx2() {
        use crate::kernels::core::simd::{record, Kernel, Level};
        macro_rules! by_k {
            ($($k:literal)*) => {
                match k {
                    $($k => {
                        record(Kernel::TopLabelScan, Level::Avx2);
                        // SAFETY: AVX2 is present (checked above), the bounds were asserted
                        // above, and every load is inside a row of `rows`. Where the loads go
                        // depends on the shape only, so a concurrent writer changes at most the
                        // values (and so the results or the suspect flags the scalar checks
                        // then decide on), never makes a read go out of bounds.
                        return Some(unsafe { x86::scan::<T, $k>(probs, rows, conf, pred) });
                    })*
                    _ => {}
                }
            };
        }
        by_k!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    }
    crate::kernels::core::simd::record(crate::kernels::core::simd::Kernel::TopLabelScan, crate::kernels::core::simd::Level::Portable);
    None
}

/// Max, first argmax, sum and a bad-value flag of one row, in one vectorised read
/// ([`long_row`]: lanes of the value type, combined once per row; AVX2 where
/// the CPU has it, bitwise the portable scan).
#[inline(always)]
fn scan_row<T: Score>(row: &[T]) -> (usize, f64, f64, bool) {
    if row.len() <= 16 {
        return scan_short_row(row);
    }
    long_row(row)
}

/// [`scan_row`] for rows of a few classes, where lane bookkeeping would cost more than the row.
#[inline(always)]
fn scan_short_row<T: Score>(row: &[T]) -> (usize, f64, f64, bool) {
    let mut s = [0.0f64; 2];
    let mut bad = false;
    let mut mx = f64::NEG_INFINITY;
    let mut arg = 0usize;
    for (j, v) in row.iter().enumerate() {
        let v = v.to_f64();
        s[j & 1] += v;
        bad |= !validate::in_range(v);
        let gt = v > mx;
        mx = if gt { v } else { mx };
        arg = if gt { j } else { arg };
    }
    (arg, mx, s[0] + s[1], bad)
}

crate::kernels::core::simd::multiversion! {
    /// Scalar scan: fills prediction and confidence for the rows from `start`; false if a row
    /// fails a check. (Rows of up to 16 classes take the vector scan, [`scan`],
    /// where the CPU has AVX2; this is their portable fallback and the path of longer rows.)
    pub(crate) fn summarise_rows<T: Score>(x: &Inputs<T>, start: usize, p: &mut [u32], c: &mut [f64], check: &Checks) -> bool {
        let mut all_ok = true;
        for (j, (pj, cj)) in p.iter_mut().zip(c.iter_mut()).enumerate() {
            let (a, mx, s, bad) = scan_row(x.row(start + j));
            all_ok &= row_ok(s, bad, check);
            *pj = a as u32;
            *cj = mx;
        }
        all_ok
    }
}

/// Prediction and confidence of rows `rows` (vector scan where available, else scalar), and
/// whether they all pass `check`.
pub(crate) fn scan_rows<T: Score>(x: &Inputs<T>, rows: Range<usize>, p: &mut [u32], c: &mut [f64], check: &Checks) -> bool {
    match scan(x.probs, x.k, rows.clone(), c, p) {
        // The vector scan only says where a row may fail; the scalar checks decide.
        Some(s) => !((s.values && check.values) || (s.sums && check.row_sums))
            || first_failing_row(x, rows, check).is_none(),
        None => summarise_rows(x, rows.start, p, c, check),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Suspect;
    use crate::kernels::core::score::Wide;
    use crate::kernels::core::validate::{out_of_range_avx2, ROW_SUM_TOL};
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// Row sums are flagged this much inside the tolerance: the scalar check sums in another
    /// order (K <= 16 values: the sums differ by ~1e-15).
    const SUM_MARGIN: f64 = 1e-9;

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
        // SAFETY: the loads read rows 0..4 of K values from p (the caller guarantees 4 * K
        // readable values), columns c0..c0+t of each row with t <= K - c0; AVX2 is available.
        // Offsets depend on K only, never on values, so a value changed during the call changes
        // the results, not where the reads go.
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
        // SAFETY: (`scan`'s dispatcher asserts rows.end * K <= probs.len() and conf, pred of
        // rows.len()) every group of four rows r..r+4 with r + 4 <= n lies in `rows`, so
        // `four_rows` reads inside `probs`, and the stores write conf[r..r+4] and pred[r..r+4];
        // the last rows are copied into the 64-value `pad` (4 * K <= 64 for K <= 16). Offsets
        // depend only on the shape, not on the values, so a concurrent writer cannot move
        // them; the predictions stored are columns < K whatever the values (the blend picks
        // one of the column constants 0..K), so later indexing by them stays in bounds.
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
            // The range rule on each lane's minimum and maximum: all its rows' values pass
            // exactly when both do (the minimum starts at 0 and the maximum at 0, so min <= max;
            // a NaN reaching either is flagged, as `non_finite` flags it anyway).
            let out = _mm256_or_pd(out_of_range_avx2(acc.min), out_of_range_avx2(acc.max));
            let values = _mm256_or_pd(out, acc.non_finite);
            Suspect { values: _mm256_movemask_pd(values) != 0, sums: _mm256_movemask_pd(acc.bad_sum) != 0 }
            }
    }
}

/// Lanes of the long-row scan: one 8-lane group is two AVX2 registers of f64 (or one of f32).
pub const LONG_LANES: usize = 8;

/// Per-lane state of the long-row scan, in the value type's lanes (widened exactly to f64):
/// running maximum (the strict `>` update), the chunk where it was last raised (as a float:
/// exact below 2^53 chunks), running sum and running minimum (the `<` update). NaN never raises
/// the maximum or lowers the minimum; it reaches the sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongLanes {
    pub max: [f64; LONG_LANES],
    pub at: [f64; LONG_LANES],
    pub sum: [f64; LONG_LANES],
    pub min: [f64; LONG_LANES],
}

/// Combines the lanes once per row and scans the ragged tail `rest` (starting at column
/// `base`): the row's first argmax (lowest column among equal maxima; 0 if no value is above
/// -inf), maximum, sum (lanes added in lane order, then the tail in column order) and whether
/// some value is outside [0, 1] +- `RANGE_TOL` or NaN. The last is exactly
/// [`validate::in_range`] failing for some value of the row: the rule is applied to the row's
/// minimum and maximum (a value below the range lowers the minimum, one above raises the
/// maximum; the minimum is at most the maximum), and a NaN (or +inf with -inf) makes the sum
/// NaN.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // lane j of several arrays
fn combine<T: Score>(l: &LongLanes, rest: &[T], base: usize) -> (usize, f64, f64, bool) {
    let mut sum = 0.0;
    let mut mx = f64::NEG_INFINITY;
    let mut mn = f64::INFINITY;
    let mut arg = usize::MAX;
    for j in 0..LONG_LANES {
        sum += l.sum[j];
        mn = if l.min[j] < mn { l.min[j] } else { mn };
        let col = l.at[j] as usize * LONG_LANES + j;
        if l.max[j] > mx || (l.max[j] == mx && col < arg) {
            mx = l.max[j];
            arg = col;
        }
    }
    for (j, v) in rest.iter().enumerate() {
        let v = v.to_f64();
        sum += v;
        mn = if v < mn { v } else { mn };
        if v > mx {
            mx = v;
            arg = base + j;
        }
    }
    let bad = !validate::in_range(mn) || !validate::in_range(mx) || sum.is_nan();
    (if arg == usize::MAX { 0 } else { arg }, mx, sum, bad)
}

/// The portable long-row scan (the production path without AVX2, and what the AVX2 twin is
/// compared to bitwise): first argmax, maximum, sum and bad-value flag of `row`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // lane j of several arrays
pub fn long_row_portable<T: Score>(row: &[T]) -> (usize, f64, f64, bool) {
    let mut l = LongLanes {
        max: [f64::NEG_INFINITY; LONG_LANES],
        at: [0.0; LONG_LANES],
        sum: [0.0; LONG_LANES],
        min: [f64::INFINITY; LONG_LANES],
    };
    let mut it = row.chunks_exact(LONG_LANES);
    let mut ci = 0.0f64;
    for c in &mut it {
        for j in 0..LONG_LANES {
            let v = c[j].to_f64();
            let gt = v > l.max[j];
            l.max[j] = if gt { v } else { l.max[j] };
            l.at[j] = if gt { ci } else { l.at[j] };
            l.sum[j] += v;
            l.min[j] = if v < l.min[j] { v } else { l.min[j] };
        }
        ci += 1.0;
    }
    let base = row.len() - it.remainder().len();
    combine(&l, it.remainder(), base)
}

/// First argmax (lowest column on ties, strict `>`), maximum, sum and bad-value flag of a long
/// row: the AVX2 twin where the CPU has it, else [`long_row_portable`]; bitwise the same.
#[inline]
pub fn long_row<T: Score>(row: &[T]) -> (usize, f64, f64, bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        use crate::kernels::core::simd::{record, Kernel, Level};
        if let Some(r) = T::as_f64s(row) {
            record(Kernel::LongRowScan, Level::Avx2);
            // SAFETY: AVX2 is present (checked above). `long_row_f64` reads only inside `r`
            // (bounds from its length, not from the values), so a concurrent writer can change
            // the results but not make a read go out of bounds.
            return unsafe { long_x86::long_row_f64(r) };
        }
        if let Some(r) = T::as_f32s(row) {
            // The f32 lane index is exact below 2^24 chunks.
            if r.len() / LONG_LANES < (1 << 24) {
                record(Kernel::LongRowScan, Level::Avx2);
                // SAFETY: as above, for `long_row_f32`.
                return unsafe { long_x86::long_row_f32(r) };
            }
        }
    }
    crate::kernels::core::simd::record(crate::kernels::core::simd::Kernel::LongRowScan, crate::kernels::core::simd::Level::Portable);
    long_row_portable(row)
}

/// The AVX2 twins of [`long_row_portable`], one per element type.
#[cfg(target_arch = "x86_64")]
pub mod long_x86 {
    use super::{combine, LongLanes, LONG_LANES};
    use std::arch::x86_64::*;

    /// [`super::long_row_portable`] for f64 rows with AVX2: lanes 0..4 and 4..8 in two registers.
    ///
    /// # Safety
    /// AVX2 must be available.
    #[target_feature(enable = "avx2")]
    pub unsafe fn long_row_f64(row: &[f64]) -> (usize, f64, f64, bool) {
        let chunks = row.len() / LONG_LANES;
        let p = row.as_ptr();
        let mut l = LongLanes { max: [0.0; 8], at: [0.0; 8], sum: [0.0; 8], min: [0.0; 8] };
        // SAFETY: chunk c reads p[8c..8c+8] with c < row.len() / 8, inside `row`; the bounds
        // come from the slice length only, so a concurrent writer cannot move them. The stores
        // write the 8-element arrays of `l`. AVX2 is available (the function's contract).
        unsafe {
            let (mut m0, mut m1) = (_mm256_set1_pd(f64::NEG_INFINITY), _mm256_set1_pd(f64::NEG_INFINITY));
            let (mut a0, mut a1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            let (mut s0, mut s1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            let (mut n0, mut n1) = (_mm256_set1_pd(f64::INFINITY), _mm256_set1_pd(f64::INFINITY));
            let mut idx = _mm256_setzero_pd();
            let one = _mm256_set1_pd(1.0);
            for c in 0..chunks {
                let v0 = _mm256_loadu_pd(p.add(c * LONG_LANES));
                let v1 = _mm256_loadu_pd(p.add(c * LONG_LANES + 4));
                // max(v, m) is `v > m ? v : m` and min(v, n) is `v < n ? v : n`: the scalar
                // updates, NaN and signed zeros included.
                let g0 = _mm256_cmp_pd(v0, m0, _CMP_GT_OQ);
                let g1 = _mm256_cmp_pd(v1, m1, _CMP_GT_OQ);
                m0 = _mm256_max_pd(v0, m0);
                m1 = _mm256_max_pd(v1, m1);
                a0 = _mm256_blendv_pd(a0, idx, g0);
                a1 = _mm256_blendv_pd(a1, idx, g1);
                s0 = _mm256_add_pd(s0, v0);
                s1 = _mm256_add_pd(s1, v1);
                n0 = _mm256_min_pd(v0, n0);
                n1 = _mm256_min_pd(v1, n1);
                idx = _mm256_add_pd(idx, one);
            }
            _mm256_storeu_pd(l.max.as_mut_ptr(), m0);
            _mm256_storeu_pd(l.max.as_mut_ptr().add(4), m1);
            _mm256_storeu_pd(l.at.as_mut_ptr(), a0);
            _mm256_storeu_pd(l.at.as_mut_ptr().add(4), a1);
            _mm256_storeu_pd(l.sum.as_mut_ptr(), s0);
            _mm256_storeu_pd(l.sum.as_mut_ptr().add(4), s1);
            _mm256_storeu_pd(l.min.as_mut_ptr(), n0);
            _mm256_storeu_pd(l.min.as_mut_ptr().add(4), n1);
        }
        let base = chunks * LONG_LANES;
        combine(&l, &row[base..], base)
    }

    /// [`super::long_row_portable`] for f32 rows with AVX2: maximum, argmax and minimum in one
    /// f32 register (widening is exact and monotone, so they are the f64 ones), the sums in two
    /// f64 registers (each value widened exactly, as the portable scan adds them).
    ///
    /// # Safety
    /// AVX2 must be available, and `row.len() / 8 < 2^24` (the f32 lane index is exact).
    #[target_feature(enable = "avx2")]
    #[allow(clippy::needless_range_loop)] // lane j of several arrays
    pub unsafe fn long_row_f32(row: &[f32]) -> (usize, f64, f64, bool) {
        let chunks = row.len() / LONG_LANES;
        let p = row.as_ptr();
        let mut l = LongLanes { max: [0.0; 8], at: [0.0; 8], sum: [0.0; 8], min: [0.0; 8] };
        let (mut mx, mut at, mut mn) = ([0f32; 8], [0f32; 8], [0f32; 8]);
        // SAFETY: chunk c reads p[8c..8c+8] with c < row.len() / 8, inside `row`; the bounds
        // come from the slice length only, so a concurrent writer cannot move them. The stores
        // write 8-element arrays. AVX2 is available (the function's contract).
        unsafe {
            let mut m = _mm256_set1_ps(f32::NEG_INFINITY);
            let mut a = _mm256_setzero_ps();
            let (mut s0, mut s1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            let mut n = _mm256_set1_ps(f32::INFINITY);
            let mut idx = _mm256_setzero_ps();
            let one = _mm256_set1_ps(1.0);
            for c in 0..chunks {
                let v = _mm256_loadu_ps(p.add(c * LONG_LANES));
                let g = _mm256_cmp_ps(v, m, _CMP_GT_OQ);
                m = _mm256_max_ps(v, m);
                a = _mm256_blendv_ps(a, idx, g);
                n = _mm256_min_ps(v, n);
                s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
                s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
                idx = _mm256_add_ps(idx, one);
            }
            _mm256_storeu_ps(mx.as_mut_ptr(), m);
            _mm256_storeu_ps(at.as_mut_ptr(), a);
            _mm256_storeu_ps(mn.as_mut_ptr(), n);
            _mm256_storeu_pd(l.sum.as_mut_ptr(), s0);
            _mm256_storeu_pd(l.sum.as_mut_ptr().add(4), s1);
        }
        for j in 0..LONG_LANES {
            l.max[j] = mx[j] as f64;
            l.at[j] = at[j] as f64;
            l.min[j] = mn[j] as f64;
        }
        let base = chunks * LONG_LANES;
        combine(&l, &row[base..], base)
    }
}
