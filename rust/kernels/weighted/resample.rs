//! Resampling on fixed per-entry bins: the cells every resampler reads, and the bootstrap
//! (rows reweighted); consistency resampling (labels redrawn from the predicted distribution)
//! is [`crate::kernels::weighted::consistency`], on the same cells.
//!
//! The caller forms, once, a dense `(N, W)` table of *cells* (`group * nb + bin`, or
//! [`DROPPED`] for a score that is not kept) and the matching scores, plus one `hit` column per
//! row: the column whose outcome is 1 ([`DROPPED`] when none is). Top-label metrics use `W = 1`
//! (the row's top probability; `hit = 0` when the prediction is correct); all-probability
//! metrics use `W = K` (every column; `hit = label`).
//!
//! Sums are exact in grid units ([`sums`](crate::kernels::weighted::sums)): each row's count
//! and outcome units and each entry's score units at the row's base weight are computed once
//! per call (at the base weights' power-of-two scale, [`Scales::of_terms`]; with no base
//! weights, `2^50` per row and each score's own units), and a resample adds them times the
//! row's whole multiplicity in `i128`. So a resample's table is exactly the table of the data
//! with each row repeated as often as it is drawn, in any order of the rows: with no base
//! weights (or whole ones below 2^11) it is bitwise the table of the primitive
//! ([`grouped_bin_stats`]) on the resample's weights.
//!
//! Random numbers come from a counter-based generator: the draw of row `i` in resample `r` is a
//! hash of `(seed, r, i)` ([`uniform`]), so every resample is the same for any thread count,
//! any block size and any order of evaluation. Each resample is reduced sequentially by one
//! thread; resamples are spread over rayon threads, and the output is ordered by resample.

use rayon::prelude::*;

use crate::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
use crate::kernels::core::reduce::reduce;
use crate::kernels::core::spec::MAX_TABLE_CELLS;
use crate::kernels::core::units;
use crate::kernels::weighted::adaptive::Sorted;
use crate::kernels::weighted::sums::{count_units, less_bias, plain_chunk, term_sums, term_sums_lanes, weighted_units, Counts, Scales, UnitSums, BIAS, LANES as TERM_LANES, TERM_BIAS};
use crate::kernels::{BinStats, Binning, KernelError, Norm};

// The draws moved to their own module; their paths here stay (the glue and other modules use
// `resample::uniform` and friends).
pub use super::draws::*;

/// Cell value of an entry that is not kept (below the threshold, or no outcome).
pub const DROPPED: u32 = u32::MAX;

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
    pub(crate) fn rows(&self) -> usize {
        self.hit.len()
    }

    /// Checks every length and every cell index, so that the loops below can index freely.
    pub fn check(&self) -> Result<(), KernelError> {
        let n = self.rows();
        if self.groups == 0 || self.nb == 0 {
            return Err(KernelError::Parameter(format!(
                "a cell table of {} groups x {} bins: both must be at least 1 (the table of calibration_bins)",
                self.groups, self.nb
            )));
        }
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

    /// Each row's and entry's units at the row's base weight (module doc).
    pub(crate) fn terms(&self) -> Terms {
        let most = self.score.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let weight = self.base.map_or(1.0, |b| Scales::of_terms(b.iter().fold(0.0f64, |m, &x| m.max(x))));
        let sc = Scales { weight, score: Scales::of_values(most), outcome: 1.0 };
        let k = self.width;
        let (count, score) = match self.base {
            None => (vec![units::SCALE as i64; self.rows()], self.score.iter().map(|&x| sc.score_units(x)).collect()),
            Some(b) => (
                b.iter().map(|&w| count_units(w * weight) as i64).collect(),
                self.score.iter().enumerate().map(|(e, &x)| weighted_units(b.get(e / k).map_or(0.0, |w| w * weight), sc.score_units(x)) as i64).collect(),
            ),
        };
        Terms { sc, count, score }
    }

    /// Each entry's cell, read once (another thread may change the array during the call), out
    /// of range ones as [`DROPPED`]; and where each cell's entries start when they are grouped
    /// by cell (a counting sort: cell `c` holds positions `start[c]..start[c + 1]`).
    pub(crate) fn by_cell(&self) -> (Vec<u32>, Vec<usize>) {
        let nc = self.groups * self.nb;
        let cell: Vec<u32> = self.cell.iter().map(|&c| if (c as usize) < nc { c } else { DROPPED }).collect();
        let mut start = vec![0usize; nc + 1];
        for &c in cell.iter().filter(|&&c| c != DROPPED) {
            start[c as usize + 1] += 1;
        }
        for c in 0..nc {
            start[c + 1] += start[c];
        }
        (cell, start)
    }

    /// The unit sums of the data as given (base weights only).
    pub(crate) fn unit_sums(&self, t: &Terms) -> UnitSums {
        let mut acc = UnitSums::zeros(self.groups * self.nb);
        let k = self.width;
        for (i, (&h, &n)) in self.hit.iter().zip(&t.count).enumerate() {
            let row = &self.cell[i * k..(i + 1) * k];
            // `check` validated every cell and hit; `add_*` and the `get` keep an array changed
            // by another thread during the call from indexing out of bounds
            for (&c, &u) in row.iter().zip(&t.score[i * k..(i + 1) * k]) {
                acc.add_count_score(c as usize, n as i128, u as i128);
            }
            if let Some(&c) = row.get(h as usize) {
                acc.add_outcome(c as usize, n as i128);
            }
        }
        acc
    }

    /// The statistics of the data as given (base weights only).
    pub fn stats(&self) -> BinStats {
        let t = self.terms();
        let mut st = t.sc.table(self.groups, self.nb);
        self.unit_sums(&t).write(&t.sc, &mut st);
        st
    }
}

/// [`Cells`]' units at the base weights, once per call: count (and hit outcome) units per row,
/// score units per entry.
pub(crate) struct Terms {
    pub(crate) sc: Scales,
    pub(crate) count: Vec<i64>,
    pub(crate) score: Vec<i64>,
}

/// Resamples per rayon task: fixed, so the work split never depends on the thread count (and
/// the values never do in any case: each resample is computed whole by one task).
const BLOCK: usize = 8;

/// Most resamples of one native call: 2^32 - 1 (32 GB of values), a bound that does not depend
/// on how much memory the machine lets a process reserve. For direct calls of the native
/// module only: the public functions refuse more than `calibkit._params.MAX_RESAMPLES` (10^6)
/// first, with the memory budget's check.
pub(crate) const MAX_RESAMPLES: usize = u32::MAX as usize;

/// The values of resamples `0..n`, `block` at a time over rayon: `f(range, out)` writes the
/// values of resamples `range` into `out` (as long as the range). The output of every resampler
/// the Python layer reaches goes through here (the triples' oracle [`bootstrap_grouped`],
/// for tests and fuzzing, only for adaptive bins): it is reserved first, fallibly, so a count whose values memory cannot hold is
/// a [`KernelError::Memory`] and not an aborted process; and the blocks are fixed, never the
/// thread count's.
pub(crate) fn fill_blocks<F>(n: usize, block: usize, f: F) -> Result<Vec<f64>, KernelError>
where
    F: Fn(std::ops::Range<usize>, &mut [f64]) + Sync,
{
    if n > MAX_RESAMPLES {
        return Err(KernelError::Parameter(format!(
            "n_resamples = {n}: at most {MAX_RESAMPLES} resamples a call; ask for fewer"
        )));
    }
    let mut out: Vec<f64> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| {
        KernelError::Memory(format!(
            "n_resamples = {n}: its resampled values alone need {:.3e} bytes, which could not be \
             allocated; ask for fewer resamples",
            n as f64 * 8.0
        ))
    })?;
    out.resize(n, 0.0);
    out.par_chunks_mut(block.max(1)).enumerate().for_each(|(b, o)| {
        let first = b * block.max(1);
        f(first..first + o.len(), o)
    });
    Ok(out)
}

/// The values `f(r)` of resamples `0..n_resamples` ([`fill_blocks`] of [`BLOCK`]), each block
/// with its own scratch `S`.
pub(crate) fn run_blocks<S: Default, F>(n_resamples: usize, f: F) -> Result<Vec<f64>, KernelError>
where
    F: Fn(usize, &mut S) -> f64 + Sync,
{
    fill_blocks(n_resamples, BLOCK, |range, out| {
        let mut scratch = S::default();
        for (o, r) in out.iter_mut().zip(range) {
            *o = f(r, &mut scratch);
        }
    })
}

/// The kept entries of a [`Cells`] table grouped by cell (a counting sort, in row order within
/// a cell), with what a bootstrap resample sums of each: a cell's sums are then runs of this
/// order, summed in registers (no read-modify-write of table memory per entry).
struct CellRuns {
    /// Cell `c` holds positions `start[c]..start[c + 1]`.
    start: Vec<usize>,
    /// Row of the entry at each position.
    row: Vec<u32>,
    /// Each position's row as its [`tag`] (one entry per row: its multiplicity is drawn in
    /// place), else empty.
    tags: Vec<u64>,
    /// No base weights: every entry's count units are 2^50 ([`Counts::All`]).
    uniform: bool,
    /// The layout without base weights (the fields `biased` and `inc`: the drawn Poisson
    /// path); else `count` and `score` (with base weights, or for the lanes).
    plain: bool,
    /// No base weights: each entry's score units plus [`BIAS`] (below 2^53), and its count
    /// increment, 1 plus 2^32 when it is its row's outcome column ([`plain_run`]).
    biased: Vec<u64>,
    inc: Vec<u64>,
    /// Base weights: each entry's count units and score units plus [`TERM_BIAS`] (below 2^63)
    /// at its row's base weight.
    score: Vec<u64>,
    count: Vec<u64>,
    /// Within cell `c`, the entries that are their row's outcome column come first, at
    /// positions `start[c]..hits_end[c]`: a cell's outcome units are the count units of that
    /// prefix.
    hits_end: Vec<usize>,
}

impl CellRuns {
    /// `drawn`: one entry per row, multiplicities drawn in place ([`CellRuns::tags`]);
    /// `lanes`: the layout with base weights (`count`, `score`) even without them, for
    /// [`CellRuns::weighted_cell_lanes`] (every count then 2^50, [`CellRuns::uniform`]).
    fn new(cells: &Cells<'_>, t: &Terms, drawn: bool, lanes: bool) -> Self {
        let (n, k, nc) = (cells.rows(), cells.width, cells.groups * cells.nb);
        let (cell, start) = cells.by_cell();
        let m = start[nc];
        // the outcome columns first within each cell (each row's `hit` read once)
        let hit: Vec<usize> = (0..n).map(|i| cells.hit.get(i).map_or(usize::MAX, |&h| h as usize)).collect();
        let mut hits_end = start[..nc].to_vec();
        for (i, &h) in hit.iter().enumerate() {
            if let Some(&c) = (h < k).then(|| &cell[i * k + h]).filter(|&&c| c != DROPPED) {
                hits_end[c as usize] += 1;
            }
        }
        let mut fill = start.clone();
        let mut fill_hit = start.clone();
        let plain = cells.base.is_none() && !lanes;
        let (pm, wm) = if plain { (m, 0) } else { (0, m) };
        let mut runs = CellRuns {
            row: vec![0; m],
            tags: vec![0; if drawn { m } else { 0 }],
            biased: vec![0; pm],
            inc: vec![0; pm],
            score: vec![0; wm],
            count: vec![0; wm],
            start,
            hits_end: hits_end.clone(),
            plain,
            uniform: cells.base.is_none(),
        };
        // non-hits after the cell's hits
        fill[..nc].copy_from_slice(&hits_end);
        for i in 0..n {
            for (col, e) in (i * k..(i + 1) * k).enumerate() {
                let c = cell[e];
                if c == DROPPED {
                    continue;
                }
                let hit = hit[i] == col;
                let f = if hit { &mut fill_hit } else { &mut fill };
                let p = f[c as usize];
                f[c as usize] += 1;
                runs.row[p] = i as u32;
                if drawn {
                    runs.tags[p] = tag(i as u64);
                }
                if plain {
                    runs.biased[p] = t.score[e].wrapping_add(BIAS) as u64;
                    runs.inc[p] = 1 | (hit as u64) << 32;
                } else {
                    runs.count[p] = t.count[i] as u64;
                    runs.score[p] = t.score[e].wrapping_add(TERM_BIAS) as u64;
                }
            }
        }
        runs
    }

    /// The table of one resample into `st`: `m_of(row)` the multiplicity of a row (given as
    /// its [`tag`] when the runs have tags), at most `max_m`.
    #[inline(always)]
    fn table(&self, sc: &Scales, max_m: u64, st: &mut BinStats, m_of: impl Fn(u64) -> u64) {
        if self.tags.is_empty() {
            self.table_by(&self.row, sc, max_m, st, m_of)
        } else {
            self.table_by(&self.tags, sc, max_m, st, m_of)
        }
    }

    /// [`CellRuns::table`] with each position's row as `rows` gives it.
    #[inline(always)]
    fn table_by<R: Copy + Into<u64>>(&self, rows: &[R], sc: &Scales, max_m: u64, st: &mut BinStats, m_of: impl Fn(u64) -> u64) {
        for c in 0..self.start.len() - 1 {
            let r = self.start[c]..self.start[c + 1];
            let (n, s, o) = if self.plain {
                let (rows, b, inc) = (&rows[r.clone()], &self.biased[r.clone()], &self.inc[r]);
                if max_m < 1 << 11 {
                    plain_run::<false, R>(rows, b, inc, plain_chunk(max_m), &m_of)
                } else {
                    plain_run::<true, R>(rows, b, inc, plain_chunk(max_m), &m_of)
                }
            } else {
                self.weighted_cell(rows, c, max_m, &m_of)
            };
            sc.write(st, c, n, s, o);
        }
    }

    /// Cell `c`'s positions, and where its hits (its first entries) end.
    #[inline(always)]
    fn runs_of(&self, c: usize) -> (std::ops::Range<usize>, usize) {
        let r = self.start[c]..self.start[c + 1];
        let h = self.hits_end[c].clamp(r.start, r.end);
        (r, h)
    }

    /// (count, score, outcome) units of cell `c` with base weights: the outcome units are the
    /// count units of the cell's hits (its first entries). Not inlined into
    /// [`CellRuns::table_by`], whose loop with no base weights is the hot one.
    #[inline(never)]
    fn weighted_cell<R: Copy + Into<u64>>(&self, rows: &[R], c: usize, max_m: u64, m_of: impl Fn(u64) -> u64) -> (i128, i128, i128) {
        let (r, h) = self.runs_of(c);
        let (n1, s1) = self.weighted_run(&rows[r.start..h], r.start, max_m, &m_of);
        let (n2, s2) = self.weighted_run(&rows[h..r.end], h, max_m, &m_of);
        (n1.wrapping_add(n2), s1.wrapping_add(s2), n1)
    }

    /// (count, score) units of the run of entries with base weights at positions
    /// `at..at + rows.len()`, each entry's multiplicity `m_of(row)` (at most `max_m`): the
    /// multiplicities of up to [`GATHER`] entries at a time gathered, then summed
    /// by halves ([`term_sums`]); multiplicities of 2^11 or more in whole `i128` products.
    #[inline(always)]
    fn weighted_run<R: Copy + Into<u64>>(&self, rows: &[R], at: usize, max_m: u64, m_of: impl Fn(u64) -> u64) -> (i128, i128) {
        let (mut n, mut s) = (0i128, 0i128);
        if max_m >= 1 << 11 {
            for (q, &i) in rows.iter().enumerate() {
                let p = at + q;
                let m = m_of(i.into()) as i128;
                n = n.wrapping_add(m * self.count[p] as i128);
                s = s.wrapping_add(m * (self.score[p] as i128 - TERM_BIAS as i128));
            }
            return (n, s);
        }
        let mut bm = [0u32; GATHER];
        for (q, part) in rows.chunks(GATHER).enumerate() {
            let p = at + q * GATHER..at + q * GATHER + part.len();
            for (b, &i) in bm.iter_mut().zip(part) {
                *b = m_of(i.into()) as u32;
            }
            let (a, b) = term_sums(&bm[..part.len()], &self.count[p.clone()], &self.score[p]);
            n = n.wrapping_add(a);
            s = s.wrapping_add(b);
        }
        (n, s)
    }
}

impl CellRuns {
    /// (count, score, outcome) units of cell `c` with base weights in [`TERM_LANES`] resamples at
    /// once, `m` each row's multiplicities in them (all below 2^11): [`CellRuns::weighted_cell`]
    /// of each, bit for bit, from one pass over the cell's entries.
    fn weighted_cell_lanes(&self, c: usize, m: &[[u32; TERM_LANES]]) -> [(i128, i128, i128); TERM_LANES] {
        let (r, h) = self.runs_of(c);
        let count = |q: std::ops::Range<usize>| if self.uniform { Counts::All(units::SCALE as u64) } else { Counts::Each(&self.count[q]) };
        let (n1, s1) = term_sums_lanes(&self.row[r.start..h], m, count(r.start..h), &self.score[r.start..h]);
        let (n2, s2) = term_sums_lanes(&self.row[h..r.end], m, count(h..r.end), &self.score[h..r.end]);
        std::array::from_fn(|j| (n1[j].wrapping_add(n2[j]), s1[j].wrapping_add(s2[j]), n1[j]))
    }
}

/// [`bootstrap`] with multiplicities drawn per row (not in place), with or without base weights:
/// each block of [`BLOCK`] resamples takes its resamples [`TERM_LANES`] at a time through one pass
/// over the cell runs ([`CellRuns::weighted_cell_lanes`]), so the runs (20 bytes an entry: 20
/// MB at (10k, 100) for SCE) are streamed once per [`TERM_LANES`] resamples. A group with a
/// multiplicity of 2^11 or more, and tables of more than [`FAST_CELLS`] cells (whose lanes'
/// sums, 192 bytes a cell per task, would not be small), take the one-resample loop. Each
/// value is the one-resample loop's, bit for bit (exact sums), whatever the grouping.
fn bootstrap_lanes(cells: &Cells<'_>, t: &Terms, norm: Norm, class_conditional: bool, scheme: Scheme, seed: u64, n_resamples: usize) -> Result<Vec<f64>, KernelError> {
    let runs = &CellRuns::new(cells, t, false, true);
    let (n, nc) = (cells.rows(), cells.groups * cells.nb);
    let lanes_fit = nc <= FAST_CELLS;
    fill_blocks(n_resamples, BLOCK, |range, dst| {
        let (first, end) = (range.start, range.end);
        let mut st = t.sc.table(cells.groups, cells.nb);
        let mut one = vec![0u32; n];
        let mut m = vec![[0u32; TERM_LANES]; n];
        let mut sums = vec![[(0i128, 0i128, 0i128); TERM_LANES]; if lanes_fit { nc } else { 0 }];
        // each value goes straight to its resample's slot in the block
        let mut out = dst.iter_mut();
        let mut put = |v: f64| {
            if let Some(o) = out.next() {
                *o = v;
            }
        };
        for r0 in (first..end).step_by(TERM_LANES) {
            let lanes = TERM_LANES.min(end - r0);
            let mut most = 0u32;
            for j in 0..TERM_LANES {
                if j < lanes {
                    bootstrap_counts(scheme, seed, (r0 + j) as u64, &mut one);
                } else {
                    one.fill(0);
                }
                for (mi, &x) in m.iter_mut().zip(&one) {
                    mi[j] = x;
                    most = most.max(x);
                }
            }
            if most >= 1 << 11 || !lanes_fit {
                for j in 0..lanes {
                    for (x, mi) in one.iter_mut().zip(&m) {
                        *x = mi[j];
                    }
                    let most = one.iter().copied().max().unwrap_or(0) as u64;
                    runs.table(&t.sc, most, &mut st, |i| one.get(i as usize).map_or(0, |&x| x as u64));
                    put(reduce(&st, norm, class_conditional));
                }
                continue;
            }
            for (c, s) in sums.iter_mut().enumerate() {
                *s = runs.weighted_cell_lanes(c, &m);
            }
            for j in 0..lanes {
                for (c, s) in sums.iter().enumerate() {
                    let (count, score, outcome) = s[j];
                    t.sc.write(&mut st, c, count, score, outcome);
                }
                put(reduce(&st, norm, class_conditional));
            }
        }
    })
}

/// Entries whose multiplicities [`CellRuns::weighted_run`] gathers at a time (within
/// [`TERM_CHUNK`](crate::kernels::weighted::sums::TERM_CHUNK)).
const GATHER: usize = 256;

/// (count, score, outcome) units of a run of entries with no base weights ([`CellRuns`]), each
/// entry's multiplicity `m_of(row)`: `sum m * inc` holds the count and the outcome count (low
/// and high 32 bits; runs of `chunk` entries, [`plain_chunk`], keep each below 2^32) and
/// `sum m * biased` the score units plus `count * BIAS`, in `u128`. `WIDE`: multiplicities of
/// 2^11 or more, whose products with biased units need 128 bits.
#[inline(always)]
fn plain_run<const WIDE: bool, R: Copy + Into<u64>>(rows: &[R], biased: &[u64], inc: &[u64], chunk: usize, m_of: impl Fn(u64) -> u64) -> (i128, i128, i128) {
    let (mut count, mut score, mut outcome) = (0i128, 0i128, 0i128);
    for ((r, b), c) in rows.chunks(chunk).zip(biased.chunks(chunk)).zip(inc.chunks(chunk)) {
        let (mut no, mut s) = (0u64, 0u128);
        for ((&i, &u), &k) in r.iter().zip(b).zip(c) {
            let m = m_of(i.into());
            no = no.wrapping_add(m.wrapping_mul(k));
            let mu = if WIDE { m as u128 * u as u128 } else { m.wrapping_mul(u) as u128 };
            s = s.wrapping_add(mu);
        }
        let n = (no & 0xffff_ffff) as i128;
        count += n;
        outcome += (no >> 32) as i128;
        score += less_bias(s as i128, n, BIAS);
    }
    let one = units::SCALE as i128;
    (count * one, score, outcome * one)
}

/// The metric on `n_resamples` bootstrap resamples (rows reweighted, bins fixed per entry).
///
/// Valid when the bin of an entry does not depend on the other rows: even binning. Resample
/// `r` uses counter stream `r`, so a prefix of resamples is the same whatever `n_resamples`.
/// Exact unit sums in one of two loops, the same numbers: one entry per row with Poisson
/// weights, each resample sums the runs of the entries grouped by cell (`CellRuns`), each
/// multiplicity drawn in place; otherwise the same runs, four resamples at a time
/// ([`bootstrap_lanes`]), each multiplicity read from the resamples' per-row multiplicities.
pub fn bootstrap(
    cells: &Cells<'_>,
    norm: Norm,
    class_conditional: bool,
    scheme: Scheme,
    seed: u64,
    n_resamples: usize,
) -> Result<Vec<f64>, KernelError> {
    cells.check()?;
    let t = cells.terms();
    let drawn = cells.width == 1 && scheme == Scheme::Poisson;
    if !drawn {
        return bootstrap_lanes(cells, &t, norm, class_conditional, scheme, seed, n_resamples);
    }
    let runs = CellRuns::new(cells, &t, true, false);
    run_blocks(n_resamples, |r, st: &mut Option<BinStats>| {
        let st = st.get_or_insert_with(|| t.sc.table(cells.groups, cells.nb));
        let key = stream_key(seed, r as u64);
        runs.table(&t.sc, POISSON_MAX, st, |g| poisson_count(draw_tagged(key, g)) as u64);
        reduce(st, norm, class_conditional)
    })
}

/// Largest table of the resamplers' per-task loops (`bootstrap_lanes`, and the calibration
/// test's `consistency_top`; one copy per resample task): larger tables, up to the metric
/// kernels' limit, take the general loops, with the same numbers.
pub(crate) const FAST_CELLS: usize = 1 << 16;

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

/// The metric on `n_resamples` bootstrap resamples of triples, with bins that move with the
/// weights: each triple weighted by its row's multiplicity (times its base weight), the bins
/// those of the weighted primitive ([`grouped_bin_stats`]: per resample for even bins, from
/// one sorted order for adaptive ones, [`Sorted::new`]). Same weights as [`bootstrap`] and
/// [`weights_matrix`].
///
/// Not exported to Python: `confidence_interval` resamples adaptive metrics from the cell
/// table ([`Sorted::from_cells`], tested equal to [`Sorted::new`] field by field). This is the
/// oracle the Rust tests and the `resample` fuzz target check against the primitive.
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
            bootstrap_weights(scheme, seed, first.wrapping_add(r) as u64, &mut w);
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
fn bootstrap_grouped_range(
    t: &Triples<'_>,
    num_bins: usize,
    norm: Norm,
    class_conditional: bool,
    scheme: Scheme,
    seed: u64,
    first: usize,
    n: usize,
) -> Result<Vec<f64>, KernelError> {
    // the checks of the primitive, once: groups, finite values (the bin count, the table's
    // size and the base weights: `Sorted::resample`)
    let rows = GroupedRows { groups: Some(t.groups), scores: t.scores, outcomes: t.outcomes, weights: None, num_groups: t.num_groups };
    rows.check()?;
    let sorted = Sorted::new(t.groups, t.scores, t.outcomes, t.rows, t.num_groups, t.n_rows)?;
    sorted.resample(num_bins, norm, class_conditional, scheme, seed, t.base, first, n)
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
pub(crate) mod tests {
    use super::*;
    use crate::kernels::weighted::consistency::consistency;



    /// The per-row and per-run sums take any multiplicity, large ones included (a multinomial
    /// resample may draw a row thousands of times): the exact sums of multiplicity times units.
    /// The table of `cells` with row `i` taken `m[i]` times, from exact `i128` sums of the
    /// terms (the oracle of the cell runs' arithmetic).
    fn exact_table(cells: &Cells<'_>, t: &Terms, m: &[u32]) -> BinStats {
        let (k, nc) = (cells.width, cells.groups * cells.nb);
        let (mut c, mut s, mut o) = (vec![0i128; nc], vec![0i128; nc], vec![0i128; nc]);
        for (e, &ce) in cells.cell.iter().enumerate() {
            let i = e / k;
            if ce != DROPPED {
                let j = ce as usize;
                c[j] += m[i] as i128 * t.count[i] as i128;
                s[j] += m[i] as i128 * t.score[e] as i128;
                if cells.hit[i] as usize == e - i * k {
                    o[j] += m[i] as i128 * t.count[i] as i128;
                }
            }
        }
        let mut st = t.sc.table(cells.groups, cells.nb);
        for j in 0..nc {
            t.sc.write(&mut st, j, c[j], s[j], o[j]);
        }
        st
    }

    #[test]
    fn long_cell_runs_sum_exactly() {
        // cells of far more entries than a gather block (and, for the plain sums, many chunks):
        // every run boundary of the cell runs against exact i128 sums
        let (n, k, groups, nb) = (3000usize, 2usize, 1usize, 3usize);
        let mut bits = crate::kernels::tests::xorshift_bits(7);
        let mut next = |m: u64| bits() % m;
        let cell: Vec<u32> = (0..n * k).map(|_| if next(9) == 0 { DROPPED } else { next(nb as u64) as u32 }).collect();
        let score: Vec<f64> = (0..n * k).map(|_| next(1 << 30) as f64 / (1u64 << 30) as f64).collect();
        let hit: Vec<u32> = (0..n).map(|_| next(k as u64 + 1) as u32).map(|h| if h as usize == k { DROPPED } else { h }).collect();
        let base: Vec<f64> = (0..n).map(|_| 0.25 + next(4000) as f64 / 1000.0).collect();
        let m: Vec<u32> = (0..n).map(|_| next(18) as u32).collect();
        let most = *m.iter().max().unwrap() as u64;
        for b in [None, Some(&base[..])] {
            let cells = Cells { cell: &cell, score: &score, hit: &hit, base: b, width: k, groups, nb };
            let t = cells.terms();
            let want = exact_table(&cells, &t, &m);
            let runs = CellRuns::new(&cells, &t, false, false);
            let mut got = t.sc.table(groups, nb);
            runs.table(&t.sc, most, &mut got, |i| m[i as usize] as u64);
            assert_eq!(got, want, "base weights: {}", b.is_some());
            // the lanes' layout (counts of 2^50 without base weights), one resample at a time
            let mut lanes = t.sc.table(groups, nb);
            CellRuns::new(&cells, &t, false, true).table(&t.sc, most, &mut lanes, |i| m[i as usize] as u64);
            assert_eq!(lanes, want, "lanes' layout, base weights: {}", b.is_some());
            // the same multiplicities through the cell runs with a tiny plain chunk
            if b.is_none() {
                let r = runs.start[0]..runs.start[1];
                let whole = plain_run::<false, u32>(&runs.row[r.clone()], &runs.biased[r.clone()], &runs.inc[r.clone()], 1 << 20, |i| m[i as usize] as u64);
                let small = plain_run::<false, u32>(&runs.row[r.clone()], &runs.biased[r.clone()], &runs.inc[r], 7, |i| m[i as usize] as u64);
                assert_eq!(whole, small);
            }
        }
    }

    #[test]
    fn large_multiplicities_sum_exactly() {
        let (k, groups, nb) = (3usize, 2usize, 3usize);
        let cell = [0u32, 4, DROPPED, 1, 1, 5, 2, 3, 0, DROPPED, 5, 4];
        let score = [0.9, 0.05, 0.05, 0.3, 0.3, 0.4, 1.0, 0.0, 0.0, 0.2, 0.7, 0.1];
        let hit = [0u32, 2, DROPPED, 1];
        let cells = Cells { cell: &cell, score: &score, hit: &hit, base: None, width: k, groups, nb };
        let t = cells.terms();
        for m in [[3u32, 0, 17, 1], [5000, 70_000, 1, 2047], [u32::MAX >> 8, 0, 2048, 9]] {
            let nc = groups * nb;
            let (mut c, mut s, mut o) = (vec![0i128; nc], vec![0i128; nc], vec![0i128; nc]);
            for i in 0..4 {
                for e in i * k..(i + 1) * k {
                    if cell[e] != DROPPED {
                        c[cell[e] as usize] += m[i] as i128;
                        s[cell[e] as usize] += m[i] as i128 * units::units(score[e]) as i128;
                        if hit[i] as usize == e - i * k {
                            o[cell[e] as usize] += m[i] as i128;
                        }
                    }
                }
            }
            let one = units::SCALE as i128;
            let check = |st: &BinStats| {
                for j in 0..nc {
                    assert_eq!((st.count[j], st.units[j], st.sum_outcome[j]), (units::value(c[j] * one), s[j], units::value(o[j] * one)), "{m:?} cell {j}");
                }
            };
            // the lanes' layout, four resamples of these multiplicities at once (below 2^11)
            if m.iter().all(|&x| x < 1 << 11) {
                let lanes = CellRuns::new(&cells, &t, false, true);
                let m4: Vec<[u32; TERM_LANES]> = m.iter().map(|&x| [x; TERM_LANES]).collect();
                for j in 0..nc {
                    let mut st = t.sc.table(groups, nb);
                    let s4 = lanes.weighted_cell_lanes(j, &m4);
                    t.sc.write(&mut st, j, s4[0].0, s4[0].1, s4[0].2);
                    assert_eq!((st.count[j], st.units[j], st.sum_outcome[j]), (units::value(c[j] * one), s[j], units::value(o[j] * one)), "{m:?} cell {j} lanes");
                    assert!(s4.iter().all(|q| *q == s4[0]), "{m:?} cell {j}: lanes of the same multiplicities differ");
                }
            }
            // and one resample at a time through the lanes' layout (any multiplicity)
            let mut st = t.sc.table(groups, nb);
            let most = *m.iter().max().unwrap() as u64;
            CellRuns::new(&cells, &t, false, true).table(&t.sc, most, &mut st, |i| m[i as usize] as u64);
            check(&st);
            let runs = CellRuns::new(&cells, &t, false, false);
            let mut st = t.sc.table(groups, nb);
            let most = *m.iter().max().unwrap() as u64;
            runs.table(&t.sc, most, &mut st, |i| m[i as usize] as u64);
            check(&st);
            // with base weights: the cell runs' sums by halves (or whole i128 products from
            // 2^11 on) equal the exact sums of multiplicity times the terms
            let base = [0.3, 1.7, 2.0, 2047.5];
            let wc = Cells { base: Some(&base), ..cells };
            let wt = wc.terms();
            let runs = CellRuns::new(&wc, &wt, false, false);
            let mut got = wt.sc.table(groups, nb);
            runs.table(&wt.sc, most, &mut got, |i| m[i as usize] as u64);
            assert_eq!(got, exact_table(&wc, &wt, &m), "{m:?} with base weights");
        }
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
    fn bootstrap_tables_are_the_repeated_rows() {
        let (c, s, h) = toy();
        let base = [1.0, 2.0, 0.0, 1.5, 1.0, 3.0];
        for b in [None, Some(&base[..])] {
            let cells = Cells { cell: &c, score: &s, hit: &h, base: b, width: 1, groups: 1, nb: 3 };
            let fast = bootstrap(&cells, Norm::L2, false, Scheme::Poisson, 9, 21).unwrap();
            for (r, v) in fast.iter().enumerate() {
                let mut w = vec![0.0; 6];
                bootstrap_weights(Scheme::Poisson, 9, r as u64, &mut w);
                assert_eq!(reduce(&repeated(&cells, &w).stats(), Norm::L2, false), *v, "resample {r}");
                // the table on the weights m * b: the same up to the rounding of m * b * units
                let m: Vec<f64> = w.iter().zip(0..6).map(|(x, i)| x * b.map_or(1.0, |b| b[i])).collect();
                let one = Cells { base: Some(&m), ..Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 3 } };
                assert!((reduce(&one.stats(), Norm::L2, false) - v).abs() <= 1e-15, "resample {r}");
            }
        }
    }

    /// The rows of `cells` repeated as often as the multiplicities `m` say, each with its base
    /// weight (owned arrays leaked: test only).
    fn repeated(cells: &Cells<'_>, m: &[f64]) -> Cells<'static> {
        let k = cells.width;
        let (mut c, mut s, mut h, mut b) = (vec![], vec![], vec![], vec![]);
        for (i, &mi) in m.iter().enumerate() {
            for _ in 0..mi as usize {
                c.extend_from_slice(&cells.cell[i * k..(i + 1) * k]);
                s.extend_from_slice(&cells.score[i * k..(i + 1) * k]);
                h.push(cells.hit[i]);
                b.push(cells.base.map_or(1.0, |b| b[i]));
            }
        }
        let leak = |v: Vec<f64>| &*Box::leak(v.into_boxed_slice());
        Cells {
            cell: Box::leak(c.into_boxed_slice()),
            score: leak(s),
            hit: Box::leak(h.into_boxed_slice()),
            base: cells.base.map(|_| leak(b)),
            width: k,
            groups: cells.groups,
            nb: cells.nb,
        }
    }

    /// Every bootstrap loop gives each resample the table of the rows repeated as drawn
    /// (exact unit sums), whatever the base weights; unit base weights are no base weights, for
    /// the bootstrap and for consistency resampling.
    #[test]
    fn resamples_are_the_repeated_rows() {
        let mut bits = crate::kernels::tests::xorshift_bits(5);
        let mut next = |n: u64| bits() % n;
        let n = 60;
        for k in [1usize, 3] {
            let (groups, nb) = (2, 4);
            let cell: Vec<u32> = (0..n * k).map(|_| if next(7) == 0 { DROPPED } else { next((groups * nb) as u64) as u32 }).collect();
            let score: Vec<f64> = (0..n * k).map(|_| next(1 << 40) as f64 / (1u64 << 40) as f64).collect();
            let hit: Vec<u32> = (0..n).map(|_| if next(4) == 0 { DROPPED } else { next(k as u64) as u32 }).collect();
            let frac: Vec<f64> = (0..n).map(|_| 0.5 + next(1000) as f64 / 331.0).collect();
            let ones = vec![1.0; n];
            for scheme in [Scheme::Poisson, Scheme::Multinomial] {
                let none = Cells { cell: &cell, score: &score, hit: &hit, base: None, width: k, groups, nb };
                let plain = bootstrap(&none, Norm::L1, true, scheme, 3, 12).unwrap();
                assert_eq!(plain, bootstrap(&Cells { base: Some(&ones), ..none }, Norm::L1, true, scheme, 3, 12).unwrap());
                for b in [None, Some(&frac[..])] {
                    let cells = Cells { base: b, ..none };
                    let v = bootstrap(&cells, Norm::L1, true, scheme, 3, 12).unwrap();
                    // a count that ends inside a group of lanes: the same prefix
                    assert_eq!(bootstrap(&cells, Norm::L1, true, scheme, 3, 10).unwrap(), v[..10]);
                    let w = weights_matrix(scheme, 3, 0, 12, n);
                    for r in 0..12 {
                        let want = reduce(&repeated(&cells, &w[r * n..(r + 1) * n]).stats(), Norm::L1, true);
                        assert_eq!(v[r], want, "k {k} {scheme:?} resample {r}");
                    }
                }
            }
            let none = Cells { cell: &cell, score: &score, hit: &hit, base: None, width: k, groups, nb };
            let c = consistency(&none, Norm::L2, true, 8, 10).unwrap();
            assert_eq!(c, consistency(&Cells { base: Some(&ones), ..none }, Norm::L2, true, 8, 10).unwrap());
            let st = none.stats();
            assert_eq!(st, Cells { base: Some(&ones), ..none }.stats());
            assert_eq!(st.units.len(), st.count.len());
            assert!(Cells { base: Some(&frac), ..none }.stats().units.len() == st.count.len());
        }
    }



    /// The case the `resample` fuzz target found (its oracle, not the kernel, was wrong): one
    /// row of base weight 1.5 drawn 5 times. The resample is the table of the row repeated 5
    /// times, bit for bit; the primitive's table at weight 7.5 rounds 7.5 x the score's units
    /// once where the repeated rows round 1.5 x them, so it may differ in the last bits, as the
    /// module doc says of fractional base weights.
    #[test]
    fn fractional_base_weights_give_the_repeated_rows_not_the_product() {
        let (cell, score, hit, base) = ([0u32], [0.3568627450980392], [0u32], [1.5]);
        let cells = Cells { cell: &cell, score: &score, hit: &hit, base: Some(&base), width: 1, groups: 1, nb: 7 };
        let seed = 6582955728264957184;
        let v = bootstrap(&cells, Norm::L2, true, Scheme::Poisson, seed, 2).unwrap();
        let m = weights_matrix(Scheme::Poisson, seed, 1, 1, 1);
        assert_eq!(m, vec![5.0]);
        assert_eq!(v[1], reduce(&repeated(&cells, &m).stats(), Norm::L2, true));
        let product = [7.5];
        let at_product = reduce(&Cells { base: Some(&product), ..cells }.stats(), Norm::L2, true);
        assert!((v[1] - at_product).abs() <= 4.0 * f64::EPSILON * at_product, "{} vs {at_product}", v[1]);
    }

    /// Tables of more than `FAST_CELLS` cells take the lanes' one-resample loop (as a group with
    /// a multiplicity of 2^11 or more does): each resample still the repeated rows' table.
    #[test]
    fn bootstrap_of_a_large_table_is_the_repeated_rows() {
        let (n, k, nb) = (30usize, 2usize, FAST_CELLS + 5);
        let cell: Vec<u32> = (0..n * k).map(|e| ((e * 7919) % nb) as u32).collect();
        let score: Vec<f64> = (0..n * k).map(|e| (e % 13) as f64 / 13.0).collect();
        let hit: Vec<u32> = (0..n).map(|i| (i % k) as u32).collect();
        let frac: Vec<f64> = (0..n).map(|i| 0.5 + i as f64 / 7.0).collect();
        for b in [None, Some(&frac[..])] {
            let cells = Cells { cell: &cell, score: &score, hit: &hit, base: b, width: k, groups: 1, nb };
            let v = bootstrap(&cells, Norm::L1, false, Scheme::Poisson, 5, 6).unwrap();
            let w = weights_matrix(Scheme::Poisson, 5, 0, 6, n);
            for (r, x) in v.iter().enumerate() {
                assert_eq!(*x, reduce(&repeated(&cells, &w[r * n..(r + 1) * n]).stats(), Norm::L1, false), "resample {r}");
            }
        }
    }

    /// With whole base weights, each resample is the primitive on the resample's weights,
    /// bitwise; with fractional ones, the primitive on the rows repeated as drawn (bitwise), and
    /// the primitive on the weights to rounding.
    #[test]
    fn grouped_bootstrap_equals_the_primitive_with_the_weights() {
        let groups = [0i64, 0, 1, 1, 1, 0];
        let scores = [0.2, 0.6, 0.3, 0.9, 0.5, 0.7];
        let outcomes = [0.0, 1.0, 1.0, 1.0, 0.0, 1.0];
        let rows = [0i64, 1, 2, 3, 4, 5];
        for base in [[1.0f64, 2.0, 0.0, 1.0, 3.0, 1.0], [1.0, 2.0, 0.5, 1.0, 3.0, 1.0]] {
            let whole = base.iter().all(|x| x.fract() == 0.0);
            let t = Triples { groups: &groups, scores: &scores, outcomes: &outcomes, rows: &rows, base: Some(&base), n_rows: 6, num_groups: 2 };
            let v = bootstrap_grouped(&t, Binning::Adaptive, 2, Norm::L1, true, Scheme::Poisson, 3, 9).unwrap();
            for (r, x) in v.iter().enumerate() {
                let w = weights_matrix(Scheme::Poisson, 3, r, 1, 6);
                let tw: Vec<f64> = (0..6).map(|i| w[i] * base[i]).collect();
                let g = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: Some(&tw), num_groups: 2 };
                let on_weights = reduce(&grouped_bin_stats(&g, Binning::Adaptive, 2).unwrap(), Norm::L1, true);
                if whole {
                    assert_eq!(on_weights, *x);
                    continue;
                }
                assert!((on_weights - x).abs() <= 1e-15, "{on_weights} vs {x}");
                let rep: Vec<usize> = (0..6).flat_map(|i| std::iter::repeat_n(i, w[i] as usize)).collect();
                let pick = |v: &[f64]| rep.iter().map(|&i| v[i]).collect::<Vec<f64>>();
                let rg: Vec<i64> = rep.iter().map(|&i| groups[i]).collect();
                let (rs, ro, rw) = (pick(&scores), pick(&outcomes), pick(&base));
                let g = GroupedRows { groups: Some(&rg), scores: &rs, outcomes: &ro, weights: Some(&rw), num_groups: 2 };
                assert_eq!(reduce(&grouped_bin_stats(&g, Binning::Adaptive, 2).unwrap(), Norm::L1, true), *x);
            }
        }
    }

    #[test]
    fn multinomial_sums_to_n() {
        let mut w = vec![0.0; 1000];
        bootstrap_weights(Scheme::Multinomial, 1, 2, &mut w);
        assert_eq!(w.iter().sum::<f64>(), 1000.0);
    }

    /// Six rows, top-label, one group of three bins (`Cells`' cell, score and hit columns).
    pub(crate) fn toy() -> (Vec<u32>, Vec<f64>, Vec<u32>) {
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
    fn bad_cells_are_errors() {
        let c = vec![5u32];
        let s = vec![0.5];
        let h = vec![0u32];
        let cells = Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 2 };
        assert!(bootstrap(&cells, Norm::L1, false, Scheme::Poisson, 1, 2).is_err());
    }

    #[test]
    fn fill_blocks_covers_every_resample_once_and_refuses_too_many() {
        for (n, block) in [(0, 8), (1, 8), (17, 8), (16, 4), (5, 1)] {
            let out = fill_blocks(n, block, |range, o| {
                assert_eq!(range.len(), o.len());
                assert!(o.len() <= block && o.iter().all(|&x| x == 0.0));
                for (x, r) in o.iter_mut().zip(range) {
                    *x = r as f64;
                }
            })
            .unwrap();
            assert_eq!(out, (0..n).map(|r| r as f64).collect::<Vec<_>>());
        }
        let err = fill_blocks(MAX_RESAMPLES + 1, 8, |_, _| panic!("no block runs")).unwrap_err();
        assert!(matches!(err, KernelError::Parameter(ref m) if m.contains("at most")));
    }
}
