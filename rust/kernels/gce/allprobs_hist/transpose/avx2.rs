//! The AVX2 transposition of [`super`]: register blocks (4 x 4 for f64, 8 x 8 for f32), the
//! bucket slots counted and the row checks taken while the values are in registers; bitwise
//! the scalar transposition.

use std::arch::x86_64::*;
use std::ops::Range;

use super::{prefetch_row, Counter, RowSums, PREFETCH_ROWS};
use crate::kernels::core::validate::out_of_range_avx2 as out_of_range;

/// The bucket-slot computation of [`super::Keys::slot`] in vector registers, and the
/// count-table offsets of eight consecutive columns.
struct SlotConsts {
    shift: __m128i,
    max: __m256i,
    min: __m256i,
    thr: __m256d,
    drop: __m256i,
    /// `c * (keys.nkeys() + 1)` for c = 0..8.
    cols: __m256i,
    /// Slots per column, `keys.nkeys() + 1`.
    nk1: usize,
}

impl SlotConsts {
    #[target_feature(enable = "avx2")]
    fn new(c: &Counter) -> Self {
        let nk1 = c.keys.nkeys() + 1;
        let w = nk1 as i32;
        SlotConsts {
            shift: _mm_cvtsi32_si128(c.keys.shift as i32),
            max: _mm256_set1_epi32(c.keys.max as i32),
            min: _mm256_set1_epi32(c.keys.min as i32),
            thr: _mm256_set1_pd(c.thr),
            drop: _mm256_set1_epi32(c.keys.drop_slot() as i32),
            cols: _mm256_setr_epi32(0, w, 2 * w, 3 * w, 4 * w, 5 * w, 6 * w, 7 * w),
            nk1,
        }
    }
}

/// The four 64-bit lane masks of an f64 comparison as four 32-bit lane masks.
#[target_feature(enable = "avx2")]
#[inline]
fn narrow_mask(m: __m256d) -> __m128i {
    _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0)))
}

/// The running sums of rows ii..ii+4 and ii+4..ii+8 of the tile.
#[target_feature(enable = "avx2")]
#[inline]
fn load_sums(sums: &RowSums, ii: usize) -> [__m256d; 2] {
    let (lo, hi) = (&sums.sum[ii..ii + 4], &sums.sum[ii + 4..ii + 8]);
    // SAFETY: each load reads the four values of a (bounds-checked) 4-value slice.
    unsafe { [_mm256_loadu_pd(lo.as_ptr()), _mm256_loadu_pd(hi.as_ptr())] }
}

/// Stores what [`load_sums`] loaded, with the row group's values added.
#[target_feature(enable = "avx2")]
#[inline]
fn store_sums(sums: &mut RowSums, ii: usize, acc: [__m256d; 2]) {
    let (lo, hi) = sums.sum[ii..ii + 8].split_at_mut(4);
    // SAFETY: each store writes the four values of a (bounds-checked) 4-value slice.
    unsafe {
        _mm256_storeu_pd(lo.as_mut_ptr(), acc[0]);
        _mm256_storeu_pd(hi.as_mut_ptr(), acc[1]);
    }
}

/// Adds one to each count-table entry `idx` (`counter.cnt` indexes, bounds-checked).
#[inline(always)]
fn bump(idx: &[u32], counter: &mut Counter) {
    for &i in idx {
        counter.cnt[i as usize] += 1;
    }
}

/// Counts the slots of one row's four f64 values, of columns `j..j + 4`: the slots and
/// their count-table indexes are computed in a vector register, so that per value only
/// the increment is left.
#[target_feature(enable = "avx2")]
#[inline]
fn count_f64x4(r: __m256d, j: usize, sc: &SlotConsts, counter: &mut Counter) {
    // Key: the value rounded to f32 (as `Score::key_bits` does), bits >> shift, clamped to
    // min..=max, counted from min (as `Keys::of`); the drop slot unless above `thr`.
    let bits = _mm_castps_si128(_mm256_cvtpd_ps(r));
    let min = _mm256_castsi256_si128(sc.min);
    let key = _mm_min_epu32(_mm_srl_epi32(bits, sc.shift), _mm256_castsi256_si128(sc.max));
    let key = _mm_sub_epi32(_mm_max_epu32(key, min), min);
    let keep = narrow_mask(_mm256_cmp_pd::<_CMP_GT_OQ>(r, sc.thr));
    let slot = _mm_blendv_epi8(_mm256_castsi256_si128(sc.drop), key, keep);
    let base = _mm_set1_epi32((j * sc.nk1) as i32);
    let idx = _mm_add_epi32(slot, _mm_add_epi32(base, _mm256_castsi256_si128(sc.cols)));
    let mut q = [0u32; 4];
    // SAFETY: stores 16 bytes into `q`, which has 16.
    unsafe { _mm_storeu_si128(q.as_mut_ptr() as *mut __m128i, idx) };
    bump(&q, counter);
}

/// Counts the slots of one row's eight f32 values, of columns `j..j + 8`.
#[target_feature(enable = "avx2")]
#[inline]
fn count_f32x8(r: __m256, j: usize, sc: &SlotConsts, counter: &mut Counter) {
    let key = _mm256_min_epu32(_mm256_srl_epi32(_mm256_castps_si256(r), sc.shift), sc.max);
    let key = _mm256_sub_epi32(_mm256_max_epu32(key, sc.min), sc.min);
    // The threshold test runs in f64, exactly as `Score::to_f64(v) > thr`.
    let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(r));
    let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(r));
    let keep = _mm256_set_m128i(
        narrow_mask(_mm256_cmp_pd::<_CMP_GT_OQ>(hi, sc.thr)),
        narrow_mask(_mm256_cmp_pd::<_CMP_GT_OQ>(lo, sc.thr)),
    );
    let slot = _mm256_blendv_epi8(sc.drop, key, keep);
    let idx = _mm256_add_epi32(slot, _mm256_add_epi32(_mm256_set1_epi32((j * sc.nk1) as i32), sc.cols));
    let mut q = [0u32; 8];
    // SAFETY: stores 32 bytes into `q`, which has 32.
    unsafe { _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, idx) };
    bump(&q, counter);
}

/// f64 transposition in 4 x 4 register blocks, two above each other, so that each column
/// receives one whole 64-byte line per 8 rows; leftover rows and columns go one at a time.
/// Each transposed column vector (four rows' values of one column) is added to those rows'
/// running sums, columns in order, so each row's sum adds its values one at a time in
/// column order, as the scalar loop does.
///
/// When `t` starts on a cache line and `stride` is a whole number of lines, those lines
/// are written with non-temporal stores: the tile is far larger than the caches and is
/// read back column by column later, so reading each destination line in before
/// overwriting it (as ordinary stores do) would only add memory traffic.
///
/// # Safety
/// The CPU must support AVX2; `rows.end * k <= p.len()`, `cols.end <= k`,
/// `rows.len() <= stride` and `cols.len() * stride <= t.len()`.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn transpose_f64(
    p: &[f64],
    k: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    stride: usize,
    t: &mut [f64],
    counter: &mut Counter,
    sums: &mut RowSums,
) {
    let (w, n) = (cols.len(), rows.len());
    let (w4, n8) = (w - w % 4, n - n % 8);
    let sc = SlotConsts::new(counter);
    let stream = (t.as_ptr() as usize).is_multiple_of(64) && stride.is_multiple_of(8);
    let mut bad = _mm256_setzero_pd();
    for ii in (0..n8).step_by(8) {
        let i = rows.start + ii;
        for r in 0..8 {
            if i + r + PREFETCH_ROWS < rows.end {
                prefetch_row(p, (i + r + PREFETCH_ROWS) * k, &cols);
            }
        }
        let mut acc = load_sums(sums, ii);
        for j in (0..w4).step_by(4) {
            for (half, acc) in acc.iter_mut().enumerate() {
                // SAFETY: rows i+4*half..+4 lie in `rows` and columns cols.start+j..+4 in
                // `cols`, so the loads stay within `p` (the caller's bounds). Offsets
                // depend only on the shape, never on values: a concurrent writer changes
                // what is read, not where.
                let (r0, r1, r2, r3) = unsafe {
                    let src = p.as_ptr().add((i + 4 * half) * k + cols.start + j);
                    (_mm256_loadu_pd(src), _mm256_loadu_pd(src.add(k)), _mm256_loadu_pd(src.add(2 * k)), _mm256_loadu_pd(src.add(3 * k)))
                };
                // (a0 b0 a2 b2), (a1 b1 a3 b3), (c0 d0 c2 d2), (c1 d1 c3 d3) for rows a..d.
                let lo01 = _mm256_unpacklo_pd(r0, r1);
                let hi01 = _mm256_unpackhi_pd(r0, r1);
                let lo23 = _mm256_unpacklo_pd(r2, r3);
                let hi23 = _mm256_unpackhi_pd(r2, r3);
                let out = [
                    _mm256_permute2f128_pd(lo01, lo23, 0x20),
                    _mm256_permute2f128_pd(hi01, hi23, 0x20),
                    _mm256_permute2f128_pd(lo01, lo23, 0x31),
                    _mm256_permute2f128_pd(hi01, hi23, 0x31),
                ];
                // SAFETY: the stores write t[(j+c) * stride + ii + 4*half..+4] with
                // j + c < w and ii + 8 <= n <= stride, so within w * stride <= t.len().
                // Streamed stores are 32-byte aligned: `t` is 64-byte aligned and stride
                // and ii are multiples of 8.
                unsafe {
                    let d = t.as_mut_ptr().add(j * stride + ii + 4 * half);
                    for (c, v) in out.into_iter().enumerate() {
                        if stream {
                            _mm256_stream_pd(d.add(c * stride), v);
                        } else {
                            _mm256_storeu_pd(d.add(c * stride), v);
                        }
                    }
                }
                for v in out {
                    *acc = _mm256_add_pd(*acc, v);
                }
                for r in [r0, r1, r2, r3] {
                    bad = _mm256_or_pd(bad, out_of_range(r));
                    count_f64x4(r, j, &sc, counter);
                }
            }
        }
        store_sums(sums, ii, acc);
        // The leftover columns of these rows, while the rows are in cache.
        transpose_part(p, k, i..i + 8, rows.start, cols.start + w4..cols.end, w4, stride, t, counter, sums);
    }
    sums.bad |= _mm256_movemask_pd(bad) != 0;
    let tail = rows.start + n8..rows.end;
    transpose_part(p, k, tail, rows.start, cols, 0, stride, t, counter, sums);
    if stream {
        // Streamed stores are weakly ordered: complete them before the tile is handed on.
        _mm_sfence();
    }
}

/// f32 transposition in 8 x 8 register blocks; leftover rows and columns go through the
/// scalar loop. Row sums as in [`transpose_f64`]: each column vector, widened exactly to
/// f64, is added to its rows' running sums, columns in order.
///
/// # Safety
/// As for [`transpose_f64`].
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn transpose_f32(
    p: &[f32],
    k: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    stride: usize,
    t: &mut [f32],
    counter: &mut Counter,
    sums: &mut RowSums,
) {
    let (w, n) = (cols.len(), rows.len());
    let (w8, n8) = (w - w % 8, n - n % 8);
    let sc = SlotConsts::new(counter);
    let mut bad = _mm256_setzero_pd();
    for ii in (0..n8).step_by(8) {
        let i = rows.start + ii;
        for r in 0..8 {
            if i + r + PREFETCH_ROWS < rows.end {
                prefetch_row(p, (i + r + PREFETCH_ROWS) * k, &cols);
            }
        }
        let mut acc = load_sums(sums, ii);
        // Element offsets of the 8 x 8 block's first row in `p` and first column in `t`.
        let (src, dst) = (i * k + cols.start, ii);
        for j in (0..w8).step_by(8) {
            // SAFETY: as in `transpose_f64`: rows i..i+8 lie in `rows` and columns
            // cols.start+j..+8 in `cols`, so each load of 8 values stays within `p`;
            // offsets depend only on the shape.
            let r = unsafe {
                let src = p.as_ptr().add(src + j);
                [
                    _mm256_loadu_ps(src),
                    _mm256_loadu_ps(src.add(k)),
                    _mm256_loadu_ps(src.add(2 * k)),
                    _mm256_loadu_ps(src.add(3 * k)),
                    _mm256_loadu_ps(src.add(4 * k)),
                    _mm256_loadu_ps(src.add(5 * k)),
                    _mm256_loadu_ps(src.add(6 * k)),
                    _mm256_loadu_ps(src.add(7 * k)),
                ]
            };
            // Interleave pairs of rows, then pairs of pairs: b_c (c < 4) holds column c of
            // rows 0..4 in its low lane and column c + 4 in its high lane; b_{c+4} the
            // same for rows 4..8 ...
            let a0 = _mm256_unpacklo_ps(r[0], r[1]);
            let a1 = _mm256_unpackhi_ps(r[0], r[1]);
            let a2 = _mm256_unpacklo_ps(r[2], r[3]);
            let a3 = _mm256_unpackhi_ps(r[2], r[3]);
            let a4 = _mm256_unpacklo_ps(r[4], r[5]);
            let a5 = _mm256_unpackhi_ps(r[4], r[5]);
            let a6 = _mm256_unpacklo_ps(r[6], r[7]);
            let a7 = _mm256_unpackhi_ps(r[6], r[7]);
            let b0 = _mm256_shuffle_ps::<0x44>(a0, a2);
            let b1 = _mm256_shuffle_ps::<0xEE>(a0, a2);
            let b2 = _mm256_shuffle_ps::<0x44>(a1, a3);
            let b3 = _mm256_shuffle_ps::<0xEE>(a1, a3);
            let b4 = _mm256_shuffle_ps::<0x44>(a4, a6);
            let b5 = _mm256_shuffle_ps::<0xEE>(a4, a6);
            let b6 = _mm256_shuffle_ps::<0x44>(a5, a7);
            let b7 = _mm256_shuffle_ps::<0xEE>(a5, a7);
            // ... and the lanes are joined: rows 0..4 from the first, 4..8 from the second.
            let out = [
                _mm256_permute2f128_ps::<0x20>(b0, b4),
                _mm256_permute2f128_ps::<0x20>(b1, b5),
                _mm256_permute2f128_ps::<0x20>(b2, b6),
                _mm256_permute2f128_ps::<0x20>(b3, b7),
                _mm256_permute2f128_ps::<0x31>(b0, b4),
                _mm256_permute2f128_ps::<0x31>(b1, b5),
                _mm256_permute2f128_ps::<0x31>(b2, b6),
                _mm256_permute2f128_ps::<0x31>(b3, b7),
            ];
            // SAFETY: writes t[(j+c) * stride + ii..+8] with j + c < w and
            // ii + 8 <= n <= stride: within w * stride <= t.len().
            unsafe {
                let d = t.as_mut_ptr().add(dst + j * stride);
                for (c, v) in out.into_iter().enumerate() {
                    _mm256_storeu_ps(d.add(c * stride), v);
                }
            }
            for v in out {
                let (lo, hi) = (_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)));
                acc[0] = _mm256_add_pd(acc[0], lo);
                acc[1] = _mm256_add_pd(acc[1], hi);
                bad = _mm256_or_pd(bad, _mm256_or_pd(out_of_range(lo), out_of_range(hi)));
            }
            for v in r {
                count_f32x8(v, j, &sc, counter);
            }
        }
        store_sums(sums, ii, acc);
        transpose_part(p, k, i..i + 8, rows.start, cols.start + w8..cols.end, w8, stride, t, counter, sums);
    }
    sums.bad |= _mm256_movemask_pd(bad) != 0;
    let tail = rows.start + n8..rows.end;
    transpose_part(p, k, tail, rows.start, cols, 0, stride, t, counter, sums);
}

/// The entries a register-block kernel leaves, one at a time: rows `rows` (of the tile
/// starting at row `row0`) and columns `cols`, which are columns `j0..` of the block.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn transpose_part<T: crate::kernels::Score>(
    p: &[T],
    k: usize,
    rows: Range<usize>,
    row0: usize,
    cols: Range<usize>,
    j0: usize,
    stride: usize,
    t: &mut [T],
    counter: &mut Counter,
    sums: &mut RowSums,
) {
    for i in rows {
        for (j, c) in (j0..).zip(cols.clone()) {
            let v = p[i * k + c];
            t[j * stride + (i - row0)] = v;
            counter.add(j, counter.keys.slot(v, counter.thr));
            sums.add(i - row0, v.to_f64());
        }
    }
}
