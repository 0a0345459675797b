//! The AVX2 twin of the row pass ([`rows`]): bitwise the portable pass
//! ([`super::rows::accumulate_portable`]) once a chunk's lane runs are folded (the same exact
//! unit sums, counts and logged entries), the same row checks, eight values at a time.

use std::arch::x86_64::*;
use std::ops::Range;

use super::rows::{outcomes, outside, BLOCK};
use super::{Mode, Part, Pass, Scratch};
use crate::kernels::core::units;
use crate::kernels::core::validate::{in_range, row_ok, Checks, RANGE_TOL};
use crate::kernels::{Inputs, Score};

/// [`super::rows::accumulate_portable`] with AVX2: the same adds into every cell, and the same
/// row checks (see the module doc). Eight values at a time: row-sum lanes as
/// [`crate::kernels::core::validate::row_sum_and_bad`] adds them, one comparison pair per lane
/// of the pass (masked adds of lane-biased units into the per-class run, or, pooled, into
/// registers holding the eight lane cells), and a bit mask sending the entries outside the
/// narrowest lane (and, with raised twins, those above the raised threshold) to the scattered
/// path.
///
/// Every table must have `x.k` classes, and `part`/`sc` be shaped by `pass` (asserted).
#[target_feature(enable = "avx2")]
pub(super) fn rows<T: Score>(
    x: &Inputs<T>,
    rows: Range<usize>,
    pass: &Pass,
    part: &mut Part,
    sc: &mut Scratch,
    check: &Checks,
) -> Option<usize> {
    let k = x.k;
    assert!(pass.k == k && pass.lay.iter().all(|l| l.k == k));
    assert!(part.tabs.len() == pass.lay.len() && !pass.bounds.is_empty());
    if part.mode != Mode::Sparse {
        let w = pass.width();
        assert!(part.lanes.len() == pass.bounds.len() && part.dropped.len() == w);
        assert!(part.lanes.iter().all(|lp| lp.run.len() >= w.next_multiple_of(8) && lp.count.len() == lp.run.len()));
    }
    let raised = pass.cut.raised();
    for i in rows {
        let row = x.row(i);
        let (sum, bad) = match part.mode {
            Mode::Dense if raised => dense_row::<T, false, true>(row, pass, part, sc),
            Mode::Dense => dense_row::<T, false, false>(row, pass, part, sc),
            Mode::Counted if raised => dense_row::<T, true, true>(row, pass, part, sc),
            Mode::Counted => dense_row::<T, true, false>(row, pass, part, sc),
            Mode::Sparse => sparse_row(row, pass, sc),
        };
        let label = x.labels[i] as u64 as usize;
        if !row_ok(sum, bad, check) || label >= k {
            return Some(i);
        }
        outcomes(row, label, pass, part);
        sc.flush_if_long(pass, part.mode);
    }
    None
}

/// The sum of the two lane vectors in lane order, then of the tail values, as
/// `row_sum_and_bad` adds them.
#[inline(always)]
fn lane_sum(s0: __m256d, s1: __m256d, tail: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    // SAFETY: stores 8 values into the 8-value array; AVX2 is available (inlined into
    // AVX2 code only).
    unsafe {
        _mm256_storeu_pd(lanes.as_mut_ptr(), s0);
        _mm256_storeu_pd(lanes.as_mut_ptr().add(4), s1);
    }
    let mut sum = 0.0;
    for l in lanes {
        sum += l;
    }
    for &v in tail {
        sum += v;
    }
    sum
}

/// The row's tail (columns `n8..k`, fewer than 8): its values as f64, zeros after them, as
/// an array and as two vectors
/// ([`Wide::load_tail`](crate::kernels::core::score::Wide::load_tail)), and its length.
#[inline(always)]
fn tail<T: Score>(row: &[T], n8: usize) -> ([f64; 8], __m256d, __m256d, usize) {
    let n = row.len() - n8;
    // SAFETY: AVX2 is available (inlined into AVX2 code only); row[n8..n8 + n] is the row's.
    let (t, t0, t1) = unsafe { T::load_tail(row.as_ptr().add(n8), n) };
    (t, t0, t1, n)
}

/// One row of a dense (`COUNT`: counted) chunk: (row sum, some value out of range).
/// Block by block of [`BLOCK`] groups of eight columns, and within a block lane by lane:
/// the first (narrowest) lane's pass over a block also sums and checks it and flags the
/// entries to scatter; the other lanes (one per other first edge) re-read it from L1. Each
/// lane cell takes one add per row (class-conditional) or per group of eight columns, the
/// tail's group padded (pooled), as in the portable pass; the caller folds the runs between
/// rows, but long rows' within the row ([`Part::reserve`]).
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is in no lane
fn dense_row<T: Score, const COUNT: bool, const RAISE: bool>(
    row: &[T],
    pass: &Pass,
    part: &mut Part,
    sc: &mut Scratch,
) -> (f64, bool) {
    let n8 = row.len() / 8 * 8;
    let thr = pass.cut.thr;
    let mut first = RowCheck::default();
    let raise = pass.cut.raise;
    for j0 in (0..n8).step_by(8 * BLOCK) {
        let cols = j0..(j0 + 8 * BLOCK).min(n8);
        if part.long {
            part.reserve(cols.len() / 8);
        }
        let mut masks = [0u8; BLOCK];
        let mut any = false;
        for (li, (lp, &u)) in part.lanes.iter_mut().zip(&pass.bounds).enumerate() {
            let (z, a, c) = (&mut lp.run[..], &mut lp.count[..], cols.clone());
            any |= match (li == 0, pass.cc) {
                (true, true) => lane_block::<T, true, RAISE, COUNT, false>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                (true, false) => lane_block::<T, true, RAISE, COUNT, true>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                (false, true) => lane_block::<T, false, false, COUNT, false>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                (false, false) => lane_block::<T, false, false, COUNT, true>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
            };
        }
        if any {
            first.bad |= exceptions(row, &masks[..cols.len() / 8], j0, pass, &mut part.dropped, sc);
        }
    }
    row_tail::<T, COUNT>(row, n8, pass, part, sc, first)
}

/// The tail of a dense (`COUNT`: counted) row (columns `n8..`, fewer than eight) into the
/// lanes and the scattered path, and the row's checks `first` completed: (row sum, some
/// value out of range).
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is in no lane
fn row_tail<T: Score, const COUNT: bool>(
    row: &[T],
    n8: usize,
    pass: &Pass,
    part: &mut Part,
    sc: &mut Scratch,
    mut first: RowCheck,
) -> (f64, bool) {
    let thr = pass.cut.thr;
    let (v, t0, t1, n) = tail(row, n8);
    let narrow = pass.narrow();
    if n > 0 {
        if !pass.cc && part.long {
            part.reserve(1);
        }
        tail_lanes::<COUNT>(t0, t1, n, n8, pass, part);
    }
    for (c, &s) in (n8..).zip(&v[..n]) {
        let fast = s > thr && s < narrow && !(s > pass.cut.raise);
        if COUNT && !(s > thr) {
            first.bad |= !(s >= -RANGE_TOL);
        } else if !fast {
            first.bad |= outside(s, c, pass, &mut part.dropped, sc);
        }
    }
    // SAFETY: AVX2 is available (inlined into `rows` only); register operations only.
    let low = unsafe { _mm256_movemask_pd(first.low) != 0 };
    (lane_sum(first.s0, first.s1, &v[..n]), first.bad || low)
}

/// The tail of a dense (`COUNT`: counted) row (`n` columns from `n8`, 0 < `n` < 8, as
/// vectors `t0`, `t1` padded with zeros) into every lane, as a group of eight whose entries
/// past the tail are in no lane: class-conditional, cells n8..n8 + 8, the tail's and padding
/// cells (see [`LanePart`](super::LanePart)); pooled, the eight lane cells, those past the
/// tail taking the biased units of 0.0 as in the portable pass.
#[inline(always)]
fn tail_lanes<const COUNT: bool>(t0: __m256d, t1: __m256d, n: usize, n8: usize, pass: &Pass, part: &mut Part) {
    assert!(0 < n && n < 8);
    let at = if pass.cc { n8 } else { 0 };
    assert!(part.lanes.iter().all(|lp| lp.run.len() >= at + 8 && lp.count.len() >= at + 8));
    // SAFETY: AVX2 is available (inlined into `rows` only). The run and count cells read and
    // written are entries at..at + 8, within their lengths (asserted).
    unsafe {
        let count = _mm256_set1_epi64x(n as i64);
        let valid0 = _mm256_cmpgt_epi64(count, _mm256_setr_epi64x(0, 1, 2, 3));
        let valid1 = _mm256_cmpgt_epi64(count, _mm256_setr_epi64x(4, 5, 6, 7));
        let (thr, shift, one) = (_mm256_set1_pd(pass.cut.thr), _mm256_set1_pd(units::SHIFT), _mm256_set1_pd(1.0));
        for (lp, &u) in part.lanes.iter_mut().zip(&pass.bounds) {
            let up = _mm256_set1_pd(u);
            let f0 = _mm256_and_pd(_mm256_cmp_pd(t0, thr, _CMP_GT_OQ), _mm256_cmp_pd(t0, up, _CMP_LT_OQ));
            let f1 = _mm256_and_pd(_mm256_cmp_pd(t1, thr, _CMP_GT_OQ), _mm256_cmp_pd(t1, up, _CMP_LT_OQ));
            let (f0, f1) = (_mm256_and_pd(f0, _mm256_castsi256_pd(valid0)), _mm256_and_pd(f1, _mm256_castsi256_pd(valid1)));
            let (b0, b1) = (lane_biased4(_mm256_and_pd(f0, t0), shift), lane_biased4(_mm256_and_pd(f1, t1), shift));
            let (a0, a1) = (_mm256_and_pd(f0, one), _mm256_and_pd(f1, one));
            let (r, a) = (lp.run.as_mut_ptr().add(at) as *mut __m256i, lp.count.as_mut_ptr().add(at));
            _mm256_storeu_si256(r, _mm256_add_epi64(_mm256_loadu_si256(r), b0));
            _mm256_storeu_si256(r.add(1), _mm256_add_epi64(_mm256_loadu_si256(r.add(1)), b1));
            if COUNT {
                _mm256_storeu_pd(a, _mm256_add_pd(_mm256_loadu_pd(a), a0));
                _mm256_storeu_pd(a.add(4), _mm256_add_pd(_mm256_loadu_pd(a.add(4)), a1));
            }
        }
    }
}

/// The first lane's checks of a row, carried from block to block: the row-sum lanes, the
/// lanes below the range (counted chunks), and whether a scattered entry failed.
struct RowCheck {
    s0: __m256d,
    s1: __m256d,
    low: __m256d,
    bad: bool,
}

impl Default for RowCheck {
    fn default() -> Self {
        // SAFETY: SSE2/AVX register initialisation only (x86_64 code built for AVX2 use).
        unsafe { RowCheck { s0: _mm256_setzero_pd(), s1: _mm256_setzero_pd(), low: _mm256_setzero_pd(), bad: false } }
    }
}

/// Columns `cols` (groups of eight, at most [`BLOCK`]) of a row into one lane (scores in
/// (`thr`, `u`)) of a dense (`COUNT`: counted) chunk, class-conditional or `POOLED`: each
/// entry adds its lane-biased units ([`units::biased`]) to its lane cell's run `run` if in the
/// lane, else those of 0.0, as the portable pass does. With `FIRST` (the narrowest lane),
/// also the row's checks in `first` and each group's mask of the entries to scatter in
/// `masks` (dense: all outside the lane; counted: the kept ones outside it, the dropped ones
/// being checked against the lower bound here; with `RAISE`, also those above `raise`): those
/// are all the entries that can fail. Whether any entry is to scatter (`FIRST` only).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lane_block<T: Score, const FIRST: bool, const RAISE: bool, const COUNT: bool, const POOLED: bool>(
    row: &[T],
    cols: Range<usize>,
    thr: f64,
    u: f64,
    raise: f64,
    run: &mut [i64],
    count: &mut [f64],
    first: &mut RowCheck,
    masks: &mut [u8; BLOCK],
) -> bool {
    let k = row.len();
    let groups = cols.len() / 8;
    let j0 = cols.start;
    // Pooled: the eight lanes; class-conditional: one entry per column (and padding).
    assert!(run.len() >= if POOLED { 8 } else { k } && count.len() == run.len());
    assert!(cols.end <= k && cols.len().is_multiple_of(8) && groups <= BLOCK);
    // SAFETY: AVX2 is available (inlined into `rows` only). Loads read row[j..j+8] with
    // j + 8 <= cols.end <= k (asserted); the vector loads/stores of `run` and `count`
    // touch entries j..j+8 (j + 8 <= k <= their length) or, pooled, 0..8 (within their
    // length, asserted above). Offsets depend only on k and `cols`, which no other thread can
    // change; values another thread may change are only compared and added, and the
    // scattered path reads them again and tests them again, with bins clamped into the
    // table.
    unsafe {
        let p = row.as_ptr();
        let (t, up, rise) = (_mm256_set1_pd(thr), _mm256_set1_pd(u), _mm256_set1_pd(raise));
        let (lo, one) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0));
        let every = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
        let shift = _mm256_set1_pd(units::SHIFT);
        let (mut s0, mut s1, mut low) = (first.s0, first.s1, first.low);
        let (zp, ap) = (run.as_mut_ptr(), count.as_mut_ptr());
        let (mut z0, mut z1, mut a0, mut a1) = if POOLED {
            let z = zp as *const __m256i;
            (_mm256_loadu_si256(z), _mm256_loadu_si256(z.add(1)), _mm256_loadu_pd(ap), _mm256_loadu_pd(ap.add(4)))
        } else {
            (_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_pd(), _mm256_setzero_pd())
        };
        // Each group's scatter mask is stored (no branch), and the block's scattered
        // entries are handled after it, in column order.
        let mut any = 0;
        for (g, mask) in masks[..groups].iter_mut().enumerate() {
            let j = j0 + 8 * g;
            let v0 = T::load4(p.add(j));
            let v1 = T::load4(p.add(j + 4));
            if FIRST {
                s0 = _mm256_add_pd(s0, v0);
                s1 = _mm256_add_pd(s1, v1);
            }
            // The entries in the lane (`f`), as values (`x`, 0.0 elsewhere), and the first
            // lane's scatter mask before the raised threshold's (`m`): dense, every entry
            // outside the lane, the complement of `f` (NaN included); counted, the kept ones.
            let (x0, x1, f0, f1, m0, m1) = if FIRST && !COUNT {
                let m0 = _mm256_or_pd(_mm256_cmp_pd(v0, t, _CMP_NGT_UQ), _mm256_cmp_pd(v0, up, _CMP_NLT_UQ));
                let m1 = _mm256_or_pd(_mm256_cmp_pd(v1, t, _CMP_NGT_UQ), _mm256_cmp_pd(v1, up, _CMP_NLT_UQ));
                (_mm256_andnot_pd(m0, v0), _mm256_andnot_pd(m1, v1), every, every, m0, m1)
            } else {
                let k0 = _mm256_cmp_pd(v0, t, _CMP_GT_OQ);
                let k1 = _mm256_cmp_pd(v1, t, _CMP_GT_OQ);
                let f0 = _mm256_and_pd(k0, _mm256_cmp_pd(v0, up, _CMP_LT_OQ));
                let f1 = _mm256_and_pd(k1, _mm256_cmp_pd(v1, up, _CMP_LT_OQ));
                (_mm256_and_pd(f0, v0), _mm256_and_pd(f1, v1), f0, f1, _mm256_andnot_pd(f0, k0), _mm256_andnot_pd(f1, k1))
            };
            if POOLED {
                z0 = _mm256_add_epi64(z0, lane_biased4(x0, shift));
                z1 = _mm256_add_epi64(z1, lane_biased4(x1, shift));
                if COUNT {
                    a0 = _mm256_add_pd(a0, _mm256_and_pd(f0, one));
                    a1 = _mm256_add_pd(a1, _mm256_and_pd(f1, one));
                }
            } else {
                let z = zp.add(j) as *mut __m256i;
                _mm256_storeu_si256(z, _mm256_add_epi64(_mm256_loadu_si256(z), lane_biased4(x0, shift)));
                _mm256_storeu_si256(z.add(1), _mm256_add_epi64(_mm256_loadu_si256(z.add(1)), lane_biased4(x1, shift)));
                if COUNT {
                    let a = ap.add(j);
                    _mm256_storeu_pd(a, _mm256_add_pd(_mm256_loadu_pd(a), _mm256_and_pd(f0, one)));
                    _mm256_storeu_pd(a.add(4), _mm256_add_pd(_mm256_loadu_pd(a.add(4)), _mm256_and_pd(f1, one)));
                }
            }
            if FIRST {
                if COUNT {
                    let out = _mm256_or_pd(_mm256_cmp_pd(v0, lo, _CMP_NGE_UQ), _mm256_cmp_pd(v1, lo, _CMP_NGE_UQ));
                    low = _mm256_or_pd(low, out);
                }
                // With `RAISE`, also those above the raised threshold.
                let (m0, m1) = if RAISE {
                    (_mm256_or_pd(m0, _mm256_cmp_pd(v0, rise, _CMP_GT_OQ)), _mm256_or_pd(m1, _mm256_cmp_pd(v1, rise, _CMP_GT_OQ)))
                } else {
                    (m0, m1)
                };
                let m = _mm256_movemask_pd(m0) | (_mm256_movemask_pd(m1) << 4);
                *mask = m as u8;
                any |= m;
            }
        }
        if POOLED {
            let z = zp as *mut __m256i;
            _mm256_storeu_si256(z, z0);
            _mm256_storeu_si256(z.add(1), z1);
            if COUNT {
                _mm256_storeu_pd(ap, a0);
                _mm256_storeu_pd(ap.add(4), a1);
            }
        }
        if FIRST {
            (first.s0, first.s1, first.low) = (s0, s1, low);
        }
        any != 0
    }
}

/// The lane-biased units ([`units::biased`], `shift` holding [`units::SHIFT`]) of four values:
/// the same rounding as the portable pass.
#[inline(always)]
fn lane_biased4(x: __m256d, shift: __m256d) -> __m256i {
    // SAFETY: AVX2 is available (inlined into `rows` only); register operations only.
    unsafe { _mm256_castpd_si256(_mm256_add_pd(x, shift)) }
}

/// The entries of `row` flagged in `masks` (one byte per group of eight columns from
/// column `j0`), in column order, through [`outside`]: whether one fails the range check.
/// The values are read again from the row (in L1): if another thread changed one
/// meanwhile, it lands in the cell of its new value (a wrong value, never an access
/// outside the tables).
#[inline(never)]
fn exceptions<T: Score>(row: &[T], masks: &[u8], j0: usize, pass: &Pass, dropped: &mut [f64], sc: &mut Scratch) -> bool {
    let mut bad = false;
    for (w, word) in masks.chunks(8).enumerate() {
        let mut bytes = [0u8; 8];
        bytes[..word.len()].copy_from_slice(word);
        let mut m = u64::from_le_bytes(bytes);
        while m != 0 {
            let col = j0 + 64 * w + m.trailing_zeros() as usize;
            bad |= outside(row[col].to_f64(), col, pass, dropped, sc);
            m &= m - 1;
        }
    }
    bad
}

/// One row of a sparse chunk: (row sum, some value out of range).
#[inline(always)]
fn sparse_row<T: Score>(row: &[T], pass: &Pass, sc: &mut Scratch) -> (f64, bool) {
    let thr = pass.cut.thr;
    let k = row.len();
    let n8 = k / 8 * 8;
    let mut bad = false;
    // SAFETY: AVX2 is available (inlined into `rows` only). Loads read row[j..j+8] with
    // j + 8 <= n8 <= k; the kept values are taken from the registers, and their slots are
    // bounds-checked indexes with bins clamped into the table.
    let (s0, s1, low) = unsafe {
        let p = row.as_ptr();
        let t = _mm256_set1_pd(thr);
        let lo = _mm256_set1_pd(-RANGE_TOL);
        let (mut s0, mut s1, mut low) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
        for j in (0..n8).step_by(8) {
            let v0 = T::load4(p.add(j));
            let v1 = T::load4(p.add(j + 4));
            s0 = _mm256_add_pd(s0, v0);
            s1 = _mm256_add_pd(s1, v1);
            // Dropped entries are <= threshold < 1: only the lower bound (or NaN) can fail.
            low = _mm256_or_pd(low, _mm256_or_pd(_mm256_cmp_pd(v0, lo, _CMP_NGE_UQ), _mm256_cmp_pd(v1, lo, _CMP_NGE_UQ)));
            let m = _mm256_movemask_pd(_mm256_cmp_pd(v0, t, _CMP_GT_OQ))
                | (_mm256_movemask_pd(_mm256_cmp_pd(v1, t, _CMP_GT_OQ)) << 4);
            if m != 0 {
                let mut v = [0.0f64; 8];
                _mm256_storeu_pd(v.as_mut_ptr(), v0);
                _mm256_storeu_pd(v.as_mut_ptr().add(4), v1);
                bad |= kept(&v, m as u32, j, sc);
            }
        }
        (s0, s1, _mm256_movemask_pd(low) != 0)
    };
    let (v, _, _, n) = tail(row, n8);
    for (c, &s) in (n8..).zip(&v[..n]) {
        bad |= !in_range(s);
        if s > thr {
            sc.add(c, s);
        }
    }
    (lane_sum(s0, s1, &v[..n]), bad || low)
}

/// The kept lanes `m` (scores above the threshold >= 0) of a sparse chunk, in lane order,
/// into every table; whether one is above the range.
#[inline(never)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is out of range
fn kept(v: &[f64; 8], mut m: u32, j: usize, sc: &mut Scratch) -> bool {
    let mut bad = false;
    while m != 0 {
        let i = m.trailing_zeros() as usize;
        let s = v[i];
        bad |= !(s <= 1.0 + RANGE_TOL);
        sc.add(j + i, s);
        m &= m - 1;
    }
    bad
}
