//! Resampling on fixed per-entry bins: the bootstrap (rows reweighted) and consistency
//! resampling (labels redrawn from the predicted distribution).
//!
//! The caller forms, once, a dense `(N, W)` table of *cells* (`group * nb + bin`, or
//! [`DROPPED`] for a score that is not kept) and the matching scores, plus one `hit` column per
//! row: the column whose outcome is 1 ([`DROPPED`] when none is). Top-label metrics use `W = 1`
//! (the row's top probability; `hit = 0` when the prediction is correct); all-probability
//! metrics use `W = K` (every column; `hit = label`).
//!
//! Random numbers come from a counter-based generator: the draw of row `i` in resample `r` is a
//! hash of `(seed, r, i)` ([`uniform`]), so every resample is the same for any thread count,
//! any block size and any order of evaluation. Each resample is reduced sequentially by one
//! thread; resamples are spread over rayon threads, and the output is ordered by resample.

use rayon::prelude::*;

use crate::kernels::core::spec::Grouping;
use crate::kernels::weighted::adaptive::Sorted;
use crate::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
use crate::kernels::core::reduce::reduce;
use crate::kernels::core::spec::MAX_TABLE_CELLS;
use crate::kernels::{BinStats, Binning, KernelError, Norm};

/// Cell value of an entry that is not kept (below the threshold, or no outcome).
pub const DROPPED: u32 = u32::MAX;

/// SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
#[inline(always)]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of counter stream `stream` (one per resample) under `seed`.
#[inline(always)]
pub fn stream_key(seed: u64, stream: u64) -> u64 {
    mix64(mix64(seed ^ 0x9e37_79b9_7f4a_7c15) ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03))
}

/// SplitMix64's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The 64 random bits of entry `index` of the stream with key `key`: SplitMix64's
/// `index`-th output from state `key`, so entry i of any stream is computed on its own.
#[inline(always)]
pub fn draw(key: u64, index: u64) -> u64 {
    mix64(key.wrapping_add(index.wrapping_add(1).wrapping_mul(GAMMA)))
}

/// The 64 random bits of counter `(seed, stream, index)`.
#[inline(always)]
pub fn bits(seed: u64, stream: u64, index: u64) -> u64 {
    draw(stream_key(seed, stream), index)
}

/// A uniform in [0, 1) with 53 random bits from 64 random bits.
#[inline(always)]
pub fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform in [0, 1) with 53 random bits, from counter `(seed, stream, index)`.
#[inline(always)]
pub fn uniform(seed: u64, stream: u64, index: u64) -> f64 {
    unit(bits(seed, stream, index))
}

/// Cumulative Poisson(1) probabilities P(X <= k), k = 0..16 (the tail beyond 16 is < 1e-15).
const POISSON1_CDF: [f64; 17] = {
    let mut c = [0.0f64; 17];
    let e = 0.367_879_441_171_442_33; // exp(-1)
    let mut term = e;
    let mut acc = 0.0;
    let mut k = 0;
    while k < 17 {
        acc += term;
        c[k] = acc;
        term /= (k + 1) as f64;
        k += 1;
    }
    c
};

/// A Poisson(1) draw by inverse CDF from a uniform: the number of CDF values <= u.
#[inline(always)]
pub fn poisson1(u: f64) -> f64 {
    let mut k = 0u32;
    for &c in POISSON1_CDF.iter() {
        k += (u >= c) as u32;
    }
    k as f64
}

/// Top bits of the random word that index [`POISSON_LUT`].
const LUT_BITS: u32 = 12;
const LUT_SIZE: usize = 1 << LUT_BITS;
/// `POISSON_LUT[j]` is the Poisson(1) draw of every uniform in [j/4096, (j+1)/4096), or
/// `MIXED` when a CDF value falls inside that range (then [`poisson1`] decides: 16 of the 4096
/// ranges, so the branch is almost always predicted).
const MIXED: u8 = u8::MAX;
const POISSON_LUT: [u8; LUT_SIZE] = {
    let mut t = [0u8; LUT_SIZE];
    let mut j = 0;
    while j < LUT_SIZE {
        let lo = j as f64 / LUT_SIZE as f64;
        let hi = (j + 1) as f64 / LUT_SIZE as f64;
        let mut klo = 0u8;
        let mut khi = 0u8;
        let mut k = 0;
        while k < 17 {
            klo += (lo >= POISSON1_CDF[k]) as u8;
            // the largest u in the range is just below hi
            khi += (hi > POISSON1_CDF[k]) as u8;
            k += 1;
        }
        t[j] = if klo == khi { klo } else { MIXED };
        j += 1;
    }
    t
};

/// The Poisson(1) draw of 64 random bits: the same value as `poisson1(unit(x))`, mostly by a
/// table lookup on the top 12 bits.
#[inline(always)]
pub fn poisson_of_bits(x: u64) -> f64 {
    let v = POISSON_LUT[(x >> (64 - LUT_BITS)) as usize];
    if v != MIXED {
        v as f64
    } else {
        poisson1(unit(x))
    }
}

/// How rows are reweighted in one bootstrap resample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Independent Poisson(1) multiplicities per row (the "Poisson bootstrap").
    Poisson,
    /// Multinomial(N; 1/N, ..., 1/N) multiplicities: N row indices drawn uniformly.
    Multinomial,
}

impl Scheme {
    pub fn parse(s: &str) -> Result<Self, KernelError> {
        match s {
            "poisson" => Ok(Scheme::Poisson),
            "multinomial" => Ok(Scheme::Multinomial),
            _ => Err(KernelError::Parameter(format!("weights must be 'poisson' or 'multinomial', got {s:?}"))),
        }
    }
}

/// The per-entry table described in the module doc.
pub struct Cells<'a> {
    /// `n * width` cells, row-major.
    pub cell: &'a [u32],
    /// `n * width` scores.
    pub score: &'a [f64],
    /// `n` columns whose outcome is 1, or [`DROPPED`].
    pub hit: &'a [u32],
    /// Optional per-row base weights (sample weights), `n` entries.
    pub base: Option<&'a [f64]>,
    pub width: usize,
    pub groups: usize,
    pub nb: usize,
}

impl Cells<'_> {
    fn rows(&self) -> usize {
        self.hit.len()
    }

    /// Checks every length and every cell index, so that the loops below can index freely.
    pub fn check(&self) -> Result<(), KernelError> {
        let n = self.rows();
        // The table is allocated per resample block: refuse one beyond the metric kernels'
        // limit before allocating (an allocation failure aborts the process).
        let cells = self.groups.checked_mul(self.nb).filter(|&c| c <= MAX_TABLE_CELLS).ok_or_else(|| {
            KernelError::Parameter(format!(
                "a table of {} groups x {} bins is beyond the limit of {MAX_TABLE_CELLS} cells; use fewer bins",
                self.groups, self.nb
            ))
        })?;
        let entries = n.checked_mul(self.width);
        if self.width == 0 || entries != Some(self.cell.len()) || entries != Some(self.score.len()) {
            return Err(KernelError::Shape(format!(
                "cells and scores must hold {n} x {} entries, got {} and {}",
                self.width,
                self.cell.len(),
                self.score.len()
            )));
        }
        if let Some(b) = self.base {
            if b.len() != n {
                return Err(KernelError::Shape(format!("base weights must have {n} entries, got {}", b.len())));
            }
            crate::kernels::core::validate::weights(b, "base weights")?;
        }
        if let Some(i) = self.cell.iter().position(|&c| c != DROPPED && c as usize >= cells) {
            return Err(KernelError::Shape(format!("cell {} at entry {i} is outside the {cells} cells", self.cell[i])));
        }
        if let Some(i) = self.hit.iter().position(|&h| h != DROPPED && h as usize >= self.width) {
            return Err(KernelError::Shape(format!("hit column {} of row {i} is outside the width {}", self.hit[i], self.width)));
        }
        Ok(())
    }

    /// Adds row `i` with multiplicity `w` and outcome column `hit` into `st`.
    #[inline(always)]
    fn push_row(&self, st: &mut BinStats, i: usize, w: f64, hit: u32) {
        let row = &self.cell[i * self.width..(i + 1) * self.width];
        let sc = &self.score[i * self.width..(i + 1) * self.width];
        // `check` validated every cell and hit; the `get`s keep an array changed by another
        // thread during the call (the GIL is released) from indexing out of bounds.
        let nc = st.count.len();
        for (&c, &s) in row.iter().zip(sc) {
            let c = c as usize;
            if c < nc {
                st.count[c] += w;
                st.sum_score[c] += w * s;
            }
        }
        if let Some(&c) = row.get(hit as usize) {
            if let Some(x) = st.sum_outcome.get_mut(c as usize) {
                *x += w;
            }
        }
    }

    fn base(&self, i: usize) -> f64 {
        self.base.map_or(1.0, |b| b[i])
    }

    /// The statistics of the data as given (base weights only).
    pub fn stats(&self) -> BinStats {
        let mut st = BinStats::zeros(self.groups, self.nb);
        for i in 0..self.rows() {
            self.push_row(&mut st, i, self.base(i), self.hit[i]);
        }
        st
    }
}

/// Per-row multiplicities of bootstrap resample `r` into `w` (length N).
pub fn bootstrap_weights(scheme: Scheme, seed: u64, r: u64, w: &mut [f64]) {
    let n = w.len();
    match scheme {
        Scheme::Poisson => {
            let key = stream_key(seed, r);
            for (i, x) in w.iter_mut().enumerate() {
                *x = poisson_of_bits(draw(key, i as u64));
            }
        }
        Scheme::Multinomial => {
            w.iter_mut().for_each(|x| *x = 0.0);
            let key = stream_key(seed, r);
            for j in 0..n {
                let idx = ((unit(draw(key, j as u64)) * n as f64) as usize).min(n - 1);
                w[idx] += 1.0;
            }
        }
    }
}

/// Resamples per rayon task: fixed, so the work split never depends on the thread count (and
/// the values never do in any case: each resample is computed whole by one task).
const BLOCK: usize = 8;

fn run_blocks<F>(n_resamples: usize, f: F) -> Vec<f64>
where
    F: Fn(usize, &mut BinStats, &mut Vec<f64>) -> f64 + Sync,
    {
    let blocks: Vec<Vec<f64>> = (0..n_resamples.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let mut scratch = Vec::new();
            let mut st = BinStats::zeros(0, 0);
            (b * BLOCK..((b + 1) * BLOCK).min(n_resamples)).map(|r| f(r, &mut st, &mut scratch)).collect()
        })
        .collect();
    blocks.into_iter().flatten().collect()
}

fn reset(st: &mut BinStats, groups: usize, nb: usize) {
    if st.count.len() != groups * nb {
        *st = BinStats::zeros(groups, nb);
    } else {
        st.count.iter_mut().for_each(|x| *x = 0.0);
        st.sum_score.iter_mut().for_each(|x| *x = 0.0);
        st.sum_outcome.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// The metric on `n_resamples` bootstrap resamples (rows reweighted, bins fixed per entry).
///
/// Valid when the bin of an entry does not depend on the other rows: even binning. Resample
/// `r` uses counter stream `r`, so a prefix of resamples is the same whatever `n_resamples`.
pub fn bootstrap(
    cells: &Cells<'_>,
    norm: Norm,
    class_conditional: bool,
    scheme: Scheme,
    seed: u64,
    n_resamples: usize,
) -> Result<Vec<f64>, KernelError> {
    cells.check()?;
    if cells.width == 1 && scheme == Scheme::Poisson && cells.groups * cells.nb <= FAST_CELLS {
        return Ok(bootstrap_top(cells, norm, class_conditional, seed, n_resamples));
    }
    let n = cells.rows();
    Ok(run_blocks(n_resamples, |r, st, w| {
        reset(st, cells.groups, cells.nb);
        w.resize(n, 0.0);
        bootstrap_weights(scheme, seed, r as u64, w);
        for (i, &wi) in w.iter().enumerate() {
            let m = wi * cells.base(i);
            if m != 0.0 {
                cells.push_row(st, i, m, cells.hit[i]);
            }
        }
        reduce(st, norm, class_conditional)
    }))
}

/// Resamples sharing one pass over the rows in [`bootstrap_top`].
const LANES: usize = 8;
/// Largest table of the one-entry-per-row loops ([`bootstrap_top`], [`consistency_top`]): they
/// hold `LANES` copies of it per block, so larger tables (up to the metric kernels' limit) take
/// the general loops, which hold one (same numbers either way).
const FAST_CELLS: usize = 1 << 16;

/// [`bootstrap`] for one entry per row and Poisson weights: `LANES` resamples share each read
/// of a row (independent accumulators, so the adds of different resamples overlap), each row's
/// cell is read once per block, and a dropped row goes to a spare cell instead of a branch.
/// Same numbers as the general loop: each resample's sums are taken in row order.
fn bootstrap_top(cells: &Cells<'_>, norm: Norm, class_conditional: bool, seed: u64, n_resamples: usize) -> Vec<f64> {
    let n = cells.rows();
    let nc = cells.groups * cells.nb;
    // DROPPED (and anything out of range) goes to the spare cell `nc`.
    let cell: Vec<u32> = cells.cell.iter().map(|&c| if c as usize >= nc { nc as u32 } else { c }).collect();
    let out: Vec<f64> = cells.hit.iter().map(|&h| if h == 0 { 1.0 } else { 0.0 }).collect();
    let blocks: Vec<Vec<f64>> = (0..n_resamples.div_ceil(LANES))
        .into_par_iter()
        .map(|b| {
            let r0 = b * LANES;
            let lanes = LANES.min(n_resamples - r0);
            let mut keys = [0u64; LANES];
            for (j, k) in keys.iter_mut().enumerate() {
                *k = stream_key(seed, (r0 + j) as u64);
            }
            // acc[(cell * LANES + j) * 3 + {count, score, outcome}]
            let mut acc = vec![0.0f64; (nc + 1) * LANES * 3];
            for i in 0..n {
                let c = cell[i] as usize;
                let (s, o, base) = (cells.score[i], out[i], cells.base(i));
                let a = &mut acc[c * LANES * 3..(c + 1) * LANES * 3];
                for j in 0..LANES {
                    let w = poisson_of_bits(draw(keys[j], i as u64)) * base;
                    a[3 * j] += w;
                    a[3 * j + 1] += w * s;
                    a[3 * j + 2] += w * o;
                }
            }
            let mut st = BinStats::zeros(cells.groups, cells.nb);
            (0..lanes)
                .map(|j| {
                    for c in 0..nc {
                        let a = &acc[(c * LANES + j) * 3..(c * LANES + j) * 3 + 3];
                        st.count[c] = a[0];
                        st.sum_score[c] = a[1];
                        st.sum_outcome[c] = a[2];
                    }
                    reduce(&st, norm, class_conditional)
                })
                .collect()
        })
        .collect();
    blocks.into_iter().flatten().collect()
}

/// [`consistency`] for one entry per row (top-label): `LANES` resamples share each read of a
/// row; counts and score sums are the data's, only the outcome sums are redrawn. Same numbers
/// as the general loop (each resample's outcome sums are taken in row order).
fn consistency_top(cells: &Cells<'_>, norm: Norm, class_conditional: bool, seed: u64, n_resamples: usize) -> Vec<f64> {
    let nc = cells.groups * cells.nb;
    // DROPPED (and anything out of range) goes to the spare cell `nc`.
    let cell: Vec<u32> = cells.cell.iter().map(|&c| if c as usize >= nc { nc as u32 } else { c }).collect();
    let base = cells.stats();
    let blocks: Vec<Vec<f64>> = (0..n_resamples.div_ceil(LANES))
        .into_par_iter()
        .map(|b| {
            let r0 = b * LANES;
            let lanes = LANES.min(n_resamples - r0);
            let mut keys = [0u64; LANES];
            for (j, k) in keys.iter_mut().enumerate() {
                *k = stream_key(seed, (r0 + j) as u64);
            }
            let mut acc = vec![0.0f64; (nc + 1) * LANES];
            for (i, &ci) in cell.iter().enumerate() {
                let c = ci as usize;
                let (s, w) = (cells.score[i], cells.base(i));
                let a = &mut acc[c * LANES..(c + 1) * LANES];
                for j in 0..LANES {
                    let hit = redraw(&[s], unit(draw(keys[j], i as u64))) == 0;
                    a[j] += if hit { w } else { 0.0 };
                }
            }
            let mut st = base.clone();
            (0..lanes)
                .map(|j| {
                    for c in 0..nc {
                        st.sum_outcome[c] = acc[c * LANES + j];
                    }
                    reduce(&st, norm, class_conditional)
                })
                .collect()
        })
        .collect();
    blocks.into_iter().flatten().collect()
}

/// The metric on `n_resamples` consistency resamples: every row's label redrawn from its own
/// predicted distribution, scores and bins unchanged.
///
/// `width == 1` (top-label): the outcome is a Bernoulli(score) draw. `width == K`: a class is
/// drawn by inverse CDF over the row's cumulative sum of scores (the row's full probability
/// vector must be in `score`, kept or not). Bins are fixed per entry: exact for even bins, and
/// for adaptive bins too, since their edges depend on the scores only.
pub fn consistency(
    cells: &Cells<'_>,
    norm: Norm,
    class_conditional: bool,
    seed: u64,
    n_resamples: usize,
) -> Result<Vec<f64>, KernelError> {
    cells.check()?;
    if cells.width == 1 && cells.groups * cells.nb <= FAST_CELLS {
        return Ok(consistency_top(cells, norm, class_conditional, seed, n_resamples));
    }
    let n = cells.rows();
    let k = cells.width;
    let base = cells.stats();
    Ok(run_blocks(n_resamples, |r, st, _| {
        if st.count.len() != base.count.len() {
            *st = base.clone();
        } else {
            st.count.copy_from_slice(&base.count);
            st.sum_score.copy_from_slice(&base.sum_score);
        }
        st.sum_outcome.iter_mut().for_each(|x| *x = 0.0);
        let key = stream_key(seed, r as u64);
        for i in 0..n {
            let hit = redraw(&cells.score[i * k..(i + 1) * k], unit(draw(key, i as u64)));
            if (hit as usize) < k {
                let c = cells.cell[i * k + hit as usize] as usize;
                if let Some(x) = st.sum_outcome.get_mut(c) {
                    *x += cells.base(i);
                }
            }
        }
        reduce(st, norm, class_conditional)
    }))
}

/// The outcome a consistency resample draws for one row from the uniform `u`: a top-label row
/// (one score, the confidence) is correct (column 0) when `u < score`, else [`DROPPED`]; a row of
/// K probabilities gives the class whose running sum first exceeds `u * total` (inverse CDF; a
/// target past the last sum, by rounding, takes the last class).
#[inline(always)]
fn redraw(row: &[f64], u: f64) -> u32 {
    if row.len() == 1 {
        return if u < row[0] { 0 } else { DROPPED };
    }
    let total: f64 = row.iter().sum();
    let target = u * total;
    let mut acc = 0.0;
    for (j, &p) in row.iter().enumerate() {
        acc += p;
        if target < acc {
            return j as u32;
        }
    }
    (row.len() - 1) as u32
}

/// The labels [`consistency`] draws, for callers that recompute a metric themselves (a Python
/// callable): resamples `r0..r0 + count` of `n = score.len() / width` rows, row-major
/// `(count, n)`, by [`redraw`] with the same uniforms (keyed by (seed, resample, row)), so
/// the same seed gives the same draws as [`consistency`] on the same scores, for any thread
/// count. `width == K`: each row's redrawn class in `0..K` (the row's probabilities in `score`;
/// a top-label metric of the matrix redraws only "correct" from the confidence, which is the
/// same law but not the same draw); `width == 1`: 1 when the prediction is redrawn correct,
/// else 0 (the confidence in `score`). The scores must be validated probabilities; a
/// non-finite one is refused.
pub fn consistency_draws(score: &[f64], width: usize, seed: u64, r0: usize, count: usize) -> Result<Vec<i64>, KernelError> {
    if width == 0 || !score.len().is_multiple_of(width) {
        return Err(KernelError::Shape(format!(
            "scores hold {} values, not rows of {width}; pass an (N, K) matrix",
            score.len()
        )));
    }
    if let Some(i) = score.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFinite { row: i / width, col: i % width, value: score[i] });
    }
    let n = score.len() / width;
    let too_many = || KernelError::Parameter(format!("{count} resamples of {n} rows are too many labels to hold; draw fewer at a time"));
    let len = count.checked_mul(n).ok_or_else(too_many)?;
    let mut out: Vec<i64> = Vec::new();
    out.try_reserve_exact(len).map_err(|_| too_many())?;
    out.resize(len, 0);
    if n == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(n).enumerate().for_each(|(j, labels)| {
        let key = stream_key(seed, r0.wrapping_add(j) as u64);
        for (i, label) in labels.iter_mut().enumerate() {
            let hit = redraw(&score[i * width..(i + 1) * width], unit(draw(key, i as u64)));
            *label = if width == 1 { i64::from(hit == 0) } else { i64::from(hit) };
        }
    });
    Ok(out)
}

/// Already-grouped kept scores with the row each came from (for [`bootstrap_grouped`]).
pub struct Triples<'a> {
    pub groups: &'a [i64],
    pub scores: &'a [f64],
    pub outcomes: &'a [f64],
    /// Row of each triple, in `0..n_rows`.
    pub rows: &'a [i64],
    /// Optional per-row base weights (sample weights), `n_rows` entries.
    pub base: Option<&'a [f64]>,
    pub n_rows: usize,
    pub num_groups: usize,
}

/// The metric on `n_resamples` bootstrap resamples with bins that move with the weights
/// (adaptive binning): per resample, the weighted primitive ([`grouped_bin_stats`]) recomputes
/// the weighted equal-mass bins of the shared triples, each weighted by its row's multiplicity
/// (times its base weight). Same weights as [`bootstrap`] and [`weights_matrix`].
#[allow(clippy::too_many_arguments)]
pub fn bootstrap_grouped(
    t: &Triples<'_>,
    binning: Binning,
    num_bins: usize,
    norm: Norm,
    class_conditional: bool,
    scheme: Scheme,
    seed: u64,
    n_resamples: usize,
) -> Result<Vec<f64>, KernelError> {
    bootstrap_grouped_from(t, binning, num_bins, norm, class_conditional, scheme, seed, 0, n_resamples)
}

/// [`bootstrap_grouped`] for resamples `first..first + n_resamples`: those of one call with
/// `first + n_resamples`.
#[allow(clippy::too_many_arguments)]
pub fn bootstrap_grouped_from(
    t: &Triples<'_>,
    binning: Binning,
    num_bins: usize,
    norm: Norm,
    class_conditional: bool,
    scheme: Scheme,
    seed: u64,
    first: usize,
    n_resamples: usize,
) -> Result<Vec<f64>, KernelError> {
    let m = t.scores.len();
    if t.groups.len() != m || t.outcomes.len() != m || t.rows.len() != m {
        return Err(KernelError::Shape(format!(
            "groups, scores, outcomes and rows must have one length, got {}, {m}, {}, {}",
            t.groups.len(),
            t.outcomes.len(),
            t.rows.len()
        )));
    }
    if let Some(i) = t.rows.iter().position(|&r| r < 0 || r as usize >= t.n_rows) {
        return Err(KernelError::Shape(format!("rows[{i}] = {} is outside [0, {})", t.rows[i], t.n_rows)));
    }
    if let Some(b) = t.base {
        if b.len() != t.n_rows {
            return Err(KernelError::Shape(format!("base weights must have {} entries, got {}", t.n_rows, b.len())));
        }
        crate::kernels::core::validate::weights(b, "base weights")?;
    }
    if binning == Binning::Adaptive {
        return bootstrap_grouped_range(t, num_bins, norm, class_conditional, scheme, seed, first, n_resamples);
    }
    let values: Result<Vec<f64>, KernelError> = (0..n_resamples)
        .into_par_iter()
        .map(|r| {
            let mut w = vec![0.0; t.n_rows];
            bootstrap_weights(scheme, seed, (first + r) as u64, &mut w);
            if let Some(b) = t.base {
                w.iter_mut().zip(b).for_each(|(x, y)| *x *= y);
            }
            // rows were checked; `get` keeps a row array changed during the call in bounds
            let tw: Vec<f64> = t.rows.iter().map(|&i| w.get(i as usize).copied().unwrap_or(0.0)).collect();
            let rows = GroupedRows { groups: Some(t.groups), scores: t.scores, outcomes: t.outcomes, weights: Some(&tw), num_groups: t.num_groups };
            let st = grouped_bin_stats(&rows, binning, num_bins)?;
            Ok(reduce(&st, norm, class_conditional))
        })
        .collect();
    values
}

/// [`bootstrap_grouped`] for adaptive bins, resamples `first..first + n` (the values of those
/// resamples in a call with `first + n`): each group sorted once, each resample's edges from
/// cumulative weights ([`crate::kernels::weighted::adaptive`]). The caller has checked the
/// lengths, rows and base weights ([`bootstrap_grouped`] does).
#[allow(clippy::too_many_arguments)]
pub fn bootstrap_grouped_range(
    t: &Triples<'_>,
    num_bins: usize,
    norm: Norm,
    class_conditional: bool,
    scheme: Scheme,
    seed: u64,
    first: usize,
    n: usize,
) -> Result<Vec<f64>, KernelError> {
    // the checks of the primitive, once: bin count and table limits, groups, finite values
    let limits = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: true, threshold: 0.0 };
    limits.check(num_bins)?;
    limits.check_table(t.num_groups, num_bins)?;
    let rows = GroupedRows { groups: Some(t.groups), scores: t.scores, outcomes: t.outcomes, weights: None, num_groups: t.num_groups };
    rows.check()?;
    let sorted = Sorted::new(t.groups, t.scores, t.outcomes, t.rows, t.num_groups, t.n_rows)?;
    Ok(sorted.bootstrap(num_bins, norm, class_conditional, scheme, seed, t.base, first, n))
}

/// Per-row bootstrap multiplicities of resamples `r0..r0 + count`, row-major (count, n): the
/// same numbers [`bootstrap`] uses, for resampling through other kernels (adaptive bins,
/// binning-free estimators).
pub fn weights_matrix(scheme: Scheme, seed: u64, r0: usize, count: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; count * n];
    if n == 0 {
        return out;
    }
    out.par_chunks_mut(n).enumerate().for_each(|(j, w)| bootstrap_weights(scheme, seed, (r0 + j) as u64, w));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistency_draws_follow_the_redraw_rule() {
        // Top-label: the draws are Bernoulli(confidence), the same u as `consistency`.
        let conf = [0.9, 0.1, 0.5, 1.0, 0.0];
        let d = consistency_draws(&conf, 1, 11, 3, 2).unwrap();
        for j in 0..2 {
            let key = stream_key(11, (3 + j) as u64);
            for (i, &c) in conf.iter().enumerate() {
                let want = i64::from(unit(draw(key, i as u64)) < c);
                assert_eq!(d[j * conf.len() + i], want);
            }
        }
        // K classes: every label in range, frequencies follow the row.
        let row = [0.2, 0.0, 0.8];
        let probs: Vec<f64> = row.iter().copied().cycle().take(3 * 20_000).collect();
        let d = consistency_draws(&probs, 3, 5, 0, 1).unwrap();
        assert!(d.iter().all(|&l| (0..3).contains(&l) && l != 1));
        let share = d.iter().filter(|&&l| l == 2).count() as f64 / d.len() as f64;
        assert!((share - 0.8).abs() < 0.01, "{share}");
        // A block of resamples gives each resample's own draws (keyed by (seed, r, row)).
        let all = consistency_draws(&probs, 3, 5, 0, 4).unwrap();
        let one = consistency_draws(&probs, 3, 5, 2, 1).unwrap();
        assert_eq!(&all[2 * 20_000..3 * 20_000], &one[..]);
        assert!(consistency_draws(&[0.5, f64::NAN], 1, 0, 0, 1).is_err());
        assert!(consistency_draws(&[0.5, 0.5, 0.2], 2, 0, 0, 1).is_err());
        assert!(consistency_draws(&[0.5; 4], 1, 0, 0, usize::MAX).is_err());
        assert!(consistency_draws(&[0.5; 4], 1, 0, 0, 1 << 60).is_err());
    }

    #[test]
    fn poisson_mean_and_variance() {
        let n = 200_000u64;
        let xs: Vec<f64> = (0..n).map(|i| poisson1(uniform(7, 3, i))).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!((m - 1.0).abs() < 0.01, "{m}");
        assert!((v - 1.0).abs() < 0.02, "{v}");
    }

    #[test]
    fn lookup_table_gives_the_inverse_cdf() {
        for i in 0..200_000u64 {
            let x = bits(3, 1, i);
            assert_eq!(poisson_of_bits(x), poisson1(unit(x)));
        }
        // the edges of every table range
        for j in 0..LUT_SIZE as u64 {
            let sh = 64 - LUT_BITS;
            for x in [j << sh, (j << sh) | ((1u64 << sh) - 1)] {
                assert_eq!(poisson_of_bits(x), poisson1(unit(x)), "{j}");
            }
        }
    }

    #[test]
    fn fast_top_label_loop_equals_general_loop() {
        let (c, s, h) = toy();
        let base = [1.0, 2.0, 0.0, 1.5, 1.0, 3.0];
        for b in [None, Some(&base[..])] {
            let cells = Cells { cell: &c, score: &s, hit: &h, base: b, width: 1, groups: 1, nb: 3 };
            let fast = bootstrap(&cells, Norm::L2, false, Scheme::Poisson, 9, 21).unwrap();
            for (r, v) in fast.iter().enumerate() {
                let mut w = vec![0.0; 6];
                bootstrap_weights(Scheme::Poisson, 9, r as u64, &mut w);
                let m: Vec<f64> = w.iter().zip(0..6).map(|(x, i)| x * b.map_or(1.0, |b| b[i])).collect();
                let one = Cells { base: Some(&m), ..Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 3 } };
                assert_eq!(reduce(&one.stats(), Norm::L2, false), *v, "resample {r}");
            }
        }
    }

    #[test]
    fn fast_consistency_equals_a_direct_redraw() {
        let (c, s, h) = toy();
        let cells = Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 3 };
        let fast = consistency(&cells, Norm::L1, false, 4, 19).unwrap();
        for (r, v) in fast.iter().enumerate() {
            let key = stream_key(4, r as u64);
            let hit: Vec<u32> = (0..6).map(|i| if unit(draw(key, i as u64)) < s[i] { 0 } else { DROPPED }).collect();
            let one = Cells { cell: &c, score: &s, hit: &hit, base: None, width: 1, groups: 1, nb: 3 };
            assert_eq!(reduce(&one.stats(), Norm::L1, false), *v, "resample {r}");
        }
    }

    #[test]
    fn grouped_bootstrap_equals_the_primitive_with_the_weights() {
        let groups = [0i64, 0, 1, 1, 1, 0];
        let scores = [0.2, 0.6, 0.3, 0.9, 0.5, 0.7];
        let outcomes = [0.0, 1.0, 1.0, 1.0, 0.0, 1.0];
        let rows = [0i64, 1, 2, 3, 4, 5];
        let base = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0];
        let t = Triples { groups: &groups, scores: &scores, outcomes: &outcomes, rows: &rows, base: Some(&base), n_rows: 6, num_groups: 2 };
        let v = bootstrap_grouped(&t, Binning::Adaptive, 2, Norm::L1, true, Scheme::Poisson, 3, 9).unwrap();
        for (r, x) in v.iter().enumerate() {
            let w = weights_matrix(Scheme::Poisson, 3, r, 1, 6);
            let tw: Vec<f64> = (0..6).map(|i| w[i] * base[i]).collect();
            let g = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: Some(&tw), num_groups: 2 };
            assert_eq!(reduce(&grouped_bin_stats(&g, Binning::Adaptive, 2).unwrap(), Norm::L1, true), *x);
        }
    }

    #[test]
    fn multinomial_sums_to_n() {
        let mut w = vec![0.0; 1000];
        bootstrap_weights(Scheme::Multinomial, 1, 2, &mut w);
        assert_eq!(w.iter().sum::<f64>(), 1000.0);
    }

    fn toy() -> (Vec<u32>, Vec<f64>, Vec<u32>) {
        // 6 rows, top-label, 1 group x 3 bins.
        (vec![0, 0, 1, 1, 2, DROPPED], vec![0.2, 0.3, 0.5, 0.6, 0.9, 0.0], vec![0, DROPPED, 0, 0, DROPPED, 0])
    }

    #[test]
    fn bootstrap_independent_of_threads_and_matches_weights() {
        let (c, s, h) = toy();
        let cells = Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 3 };
        let a = bootstrap(&cells, Norm::L1, false, Scheme::Poisson, 5, 37).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let b = pool.install(|| bootstrap(&cells, Norm::L1, false, Scheme::Poisson, 5, 37).unwrap());
        assert_eq!(a, b);
        // resample 4 by hand from the weights matrix
        let w = weights_matrix(Scheme::Poisson, 5, 4, 1, 6);
        let base = Cells { base: Some(&w), ..cells };
        assert_eq!(reduce(&base.stats(), Norm::L1, false), a[4]);
    }

    #[test]
    fn consistency_of_certain_predictions_is_zero() {
        let c = vec![0u32, 1, 1];
        let s = vec![0.0, 1.0, 1.0];
        let h = vec![DROPPED; 3];
        let cells = Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 2 };
        let v = consistency(&cells, Norm::L1, false, 1, 10).unwrap();
        assert!(v.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn bad_cells_are_errors() {
        let c = vec![5u32];
        let s = vec![0.5];
        let h = vec![0u32];
        let cells = Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 2 };
        assert!(bootstrap(&cells, Norm::L1, false, Scheme::Poisson, 1, 2).is_err());
    }
}
