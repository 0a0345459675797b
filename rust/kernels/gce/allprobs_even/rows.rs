//! The row pass of one chunk: the strategy chosen from its first row ([`choose`]), the
//! portable pass ([`accumulate_portable`], the production fallback) and its dispatcher
//! ([`accumulate`]: the AVX2 twin in `x86` where the CPU has it).

use std::ops::Range;

use crate::kernels::core::units;
use super::{Mode, Part, Pass, Scratch, LANES};
use crate::kernels::core::simd;
use crate::kernels::core::validate::{in_range, row_ok, row_sum_and_bad, Checks};
use crate::kernels::{Inputs, Score};

/// The strategy for a chunk starting with `row`, from its entries in the narrowest lane, and
/// kept: dense if at most 1/16 are not in the lane, sparse if at most 1/256 are kept (1/16
/// with several tables), else counted.
pub(super) fn choose<T: Score>(row: &[T], pass: &Pass) -> Mode {
    let (thr, u) = (pass.cut.thr, pass.narrow());
    let (mut fast, mut kept) = (0usize, 0usize);
    for v in row {
        let s = v.to_f64();
        fast += (s > thr && s < u) as usize;
        kept += (s > thr) as usize;
    }
    let k = row.len();
    // A kept entry costs one scattered update per table, a dense lane one masked add per entry
    // (measured 2026-11-28 at (50k, 1000) float32, threshold 0.01, 5 bin counts in a shared
    // lane: sparse up to 1/256 kept was 20% slower than up to 1/16).
    let sparse_at = if pass.lay.len() > 1 { 16 } else { 256 };
    if 16 * (k - fast) <= k {
        Mode::Dense
    } else if sparse_at * kept <= k {
        Mode::Sparse
    } else {
        Mode::Counted
    }
}

/// An entry `s` of column `col` flagged by a dense or counted chunk (outside the narrowest
/// lane, or above the raised threshold; counted chunks flag only kept entries): if kept,
/// logged for the tables' cells; if not, counted once in `dropped`. Whether it fails the range
/// check (the lanes' entries cannot).
#[inline(always)]
pub(super) fn outside(s: f64, col: usize, pass: &Pass, dropped: &mut [f64], sc: &mut Scratch) -> bool {
    if s > pass.cut.thr {
        sc.add(col, s);
    } else {
        dropped[pass.zero_slot(col)] += 1.0;
    }
    !in_range(s)
}

/// The outcomes of a row (`label < row.len()`) in every table of the pass, and in their raised
/// twins: its true-label score's cell, where kept.
#[inline(always)]
pub(super) fn outcomes<T: Score>(row: &[T], label: usize, pass: &Pass, part: &mut Part) {
    let s = row[label].to_f64();
    if s > pass.cut.thr {
        for (l, p) in pass.lay.iter().zip(part.tabs.iter_mut()) {
            let cell = l.outcome_cell(label, l.e.bin(s));
            p.outcome.push(cell);
            if s > pass.cut.raise {
                p.raised.push(cell);
            }
        }
    }
}

/// Runs `pass` over `rows` a run of lane adds at a time ([`Part::run_rows`], folded after
/// each: [`Part::ran`]): the first failing row, if any.
#[inline(always)]
fn in_runs(
    rows: Range<usize>,
    part: &mut Part,
    mut pass: impl FnMut(Range<usize>, &mut Part) -> Option<usize>,
) -> Option<usize> {
    let step = part.run_rows();
    let mut start = rows.start;
    while start < rows.end {
        let end = start + step.min(rows.end - start);
        if let Some(i) = pass(start..end, part) {
            return Some(i);
        }
        part.ran(end - start);
        start = end;
    }
    None
}

/// The portable row pass, as the production fallback runs it (tests compare the AVX2 pass to
/// it): accumulates `rows` into `part` and the scratch tables `sc`; the index of the first
/// row failing a check (or whose label is not a column: labels are checked beforehand, so
/// only if another thread changed it since), if any.
pub(crate) fn accumulate_portable<T: Score>(
    x: &Inputs<T>,
    rows: Range<usize>,
    pass: &Pass,
    part: &mut Part,
    sc: &mut Scratch,
    check: &Checks,
) -> Option<usize> {
    in_runs(rows, part, |rows, part| rows_portable(x, rows, pass, part, sc, check))
}

crate::kernels::core::simd::multiversion! {
    /// [`accumulate_portable`] over one run of rows.
    fn rows_portable<T: Score>(
        x: &Inputs<T>,
        rows: Range<usize>,
        pass: &Pass,
        part: &mut Part,
        sc: &mut Scratch,
        check: &Checks,
    ) -> Option<usize> {
        let thr = pass.cut.thr;
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = row_sum_and_bad(row);
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, bad, check) || label >= row.len() {
                return Some(i);
            }
            match part.mode {
                Mode::Dense => dense_row::<T, false>(row, pass, part, sc),
                Mode::Counted => dense_row::<T, true>(row, pass, part, sc),
                Mode::Sparse => {
                    for (c, v) in row.iter().enumerate() {
                        let v = v.to_f64();
                        if v > thr {
                            sc.add(c, v);
                        }
                    }
                }
            }
            outcomes(row, label, pass, part);
            sc.flush_if_long(pass, part.mode);
        }
        None
    }
}

/// One row of a dense (`COUNT`: counted) chunk, portable: each lane (masked adds of
/// lane-biased units, vectorised; see [`LanePart`](super::LanePart)), then the entries
/// outside the narrowest lane in column order. Pooled, the row is taken in blocks of
/// [`BLOCK`] groups of [`LANES`] columns and a tail group padded with entries out of every
/// lane, so that every lane cell takes one add per group, as in the AVX2 pass.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is in no lane
fn dense_row<T: Score, const COUNT: bool>(row: &[T], pass: &Pass, part: &mut Part, sc: &mut Scratch) {
    let thr = pass.cut.thr;
    let lane = |u: f64, z: &mut i64, a: &mut f64, v: &T| {
        let s = v.to_f64();
        let f = s > thr && s < u;
        *z = z.wrapping_add(units::biased(if f { s } else { 0.0 }));
        if COUNT {
            *a += if f { 1.0 } else { 0.0 };
        }
    };
    if pass.cc {
        for (lp, &u) in part.lanes.iter_mut().zip(&pass.bounds) {
            let (run, count) = (&mut lp.run[..row.len()], &mut lp.count[..row.len()]);
            for ((z, a), v) in run.iter_mut().zip(count.iter_mut()).zip(row) {
                lane(u, z, a, v);
            }
        }
    } else {
        let n8 = row.len() / LANES * LANES;
        for block in row[..n8].chunks(LANES * BLOCK) {
            if part.long {
                part.reserve(block.len() / LANES);
            }
            for (lp, &u) in part.lanes.iter_mut().zip(&pass.bounds) {
                let (run, count) = (&mut lp.run[..LANES], &mut lp.count[..LANES]);
                for c in block.chunks_exact(LANES) {
                    for ((z, a), v) in run.iter_mut().zip(count.iter_mut()).zip(c) {
                        lane(u, z, a, v);
                    }
                }
            }
        }
        let rest = &row[n8..];
        if !rest.is_empty() {
            if part.long {
                part.reserve(1);
            }
            for lp in part.lanes.iter_mut() {
                lp.run[rest.len()..LANES].iter_mut().for_each(|z| *z = z.wrapping_add(units::SHIFT_BITS));
            }
            for (lp, &u) in part.lanes.iter_mut().zip(&pass.bounds) {
                for ((z, a), v) in lp.run.iter_mut().zip(lp.count.iter_mut()).zip(rest) {
                    lane(u, z, a, v);
                }
            }
        }
    }
    let u = pass.narrow();
    for (c, v) in row.iter().enumerate() {
        let s = v.to_f64();
        let fast = s > thr && s < u;
        // Outside the narrowest lane, or above the raised threshold (the twins' entries).
        if (if COUNT { s > thr && !fast } else { !fast }) || s > pass.cut.raise {
            outside(s, c, pass, &mut part.dropped, sc);
        }
    }
}

/// Groups of [`LANES`] columns per block of a dense row (pooled, a lane cell takes one add per
/// group: the blocks bound the runs of long rows).
pub(super) const BLOCK: usize = 64;

/// [`accumulate_portable`], with AVX2 when available.
pub(crate) fn accumulate<T: Score>(
    x: &Inputs<T>,
    rows: Range<usize>,
    pass: &Pass,
    part: &mut Part,
    sc: &mut Scratch,
    check: &Checks,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        simd::record(simd::Kernel::SceRows, simd::Level::Avx2);
        // SAFETY: the CPU has AVX2, the only feature `x86::rows` is compiled for (it asserts
        // the shapes of the part and scratch tables itself).
        return in_runs(rows, part, |rows, part| unsafe { super::x86::rows(x, rows, pass, part, sc, check) });
    }
    simd::record(simd::Kernel::SceRows, simd::Level::Portable);
    accumulate_portable(x, rows, pass, part, sc, check)
}
