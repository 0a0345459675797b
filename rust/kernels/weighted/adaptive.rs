//! Bootstrap resamples of adaptive (weighted equal-mass) bins from one sorted order.
//!
//! A bootstrap resample reweights rows; it never changes a score. So each group's entries are
//! sorted once (by score, then entry index: the order [`grouped_bin_stats`] sorts them in),
//! and each resample is passes over weights in that order:
//! 1. gather the group's weights in sorted order (row multiplicity times base weight);
//! 2. the ranks of the B-1 edges from the cumulative weights ([`edge_ranks`], the rule of
//!    [`grouped_bin_stats`], written once);
//! 3. each bin is a contiguous run of the sorted order: an entry goes to the number of edges
//!    `<=` its score, so bin j starts at the first entry whose score equals edge j (the start of
//!    the edge's run of ties, found once); its count, score and outcome sums are exact sums of
//!    grid units over that run ([`sums`](crate::kernels::weighted::sums)).
//!
//! No sort per resample. The edges are bitwise those of [`grouped_bin_stats`] on the same
//! weights (same cumulative sums in the same order), so every entry falls in the same cell.
//! Each entry's units at the base weight are computed once per call (score and outcome units,
//! times the base weight when there is one, at the base weights' power-of-two scale
//! [`Scales::of_terms`]); a resample adds them times the row's whole multiplicity, exactly in
//! `i128`. So a resample's table is that of the data with each row repeated as often as the
//! resample draws it: with no base weights, or whole ones (below 2^11), every count, score and
//! outcome sum is bitwise that of [`grouped_bin_stats`] on the resample's weights; with
//! fractional base weights the primitive rounds `multiplicity * weight * units` once where a
//! resample rounds `weight * units` and multiplies: each rounding of a float product is within
//! a relative 2^-53 of it plus half a unit ([`weighted_units`]), so the two differ by about
//! `2^-52 * weight * |units|` per repeated entry (up to a few hundred units, a relative 2^-52,
//! for a score near 2 at the largest scaled weight). `tests` checks both against the primitive.
//!
//! Resample `r` uses counter stream `r` ([`bootstrap_counts`]), so resamples `first..first + n`
//! are those of one call with `first + n` resamples, and the values never depend on the thread
//! count or on how the resamples are split into calls (a caller can wrap chunks of resamples in
//! a progress bar).

use std::borrow::Cow;

use rayon::prelude::*;

use crate::kernels::core::reduce::reduce;
use crate::kernels::core::units;
use crate::kernels::core::order::{order_key, score_of_key};
use crate::kernels::weighted::grouped::{edge_ranks, sort_keyed};
use crate::kernels::weighted::resample::{fill_blocks, Cells, DROPPED};
use crate::kernels::weighted::draws::{bootstrap_counts, Scheme, POISSON_MAX};
use crate::kernels::weighted::sums::{count_units, plain_chunk, plain_sums, run_sums, split, weighted_units, BlockSum, Multiplicity, Scales, BIAS};
use crate::kernels::core::spec::Grouping;
use crate::kernels::{BinStats, Binning, KernelError, Norm};

#[cfg(doc)]
use crate::kernels::weighted::grouped::grouped_bin_stats;

/// Resamples per rayon task (fixed: the split never depends on the thread count). A task of
/// the general path holds each of its resamples' multiplicities and weights (12 bytes a row
/// each) ...
const BLOCK: usize = 4;
/// ... and one of the byte path (no base weights) a byte a row each, packed by row into one
/// `u64` ([`pack`]): one gather serves the task's resamples.
const PACKED_BLOCK: usize = 8;

/// Entries of every group in sorted order, with what a resample needs of each.
pub struct Sorted {
    /// Group `g` holds positions `start[g]..start[g + 1]`.
    start: Vec<usize>,
    /// Row of the entry at each position (indexes the per-row weights).
    row: Vec<u32>,
    /// Score units of each position (at `scales.score`) plus [`BIAS`], in two halves: the low
    /// 32 bits and the rest (below 2^21), so that a multiplicity times each is a 32 x 32-bit
    /// product ([`plain_sums`]).
    lo: Vec<u32>,
    hi: Vec<u32>,
    /// Outcome units of each position (at `scales.outcome`).
    outcome: Vec<i64>,
    /// All ones where the outcome is 1, zero where it is 0; empty unless every outcome is 0 or 1.
    hit: Vec<u32>,
    /// The first position of each position's run of equal scores (within its group).
    tie_start: Vec<u32>,
    num_groups: usize,
    n_rows: usize,
    /// The value scales of the entries (weight scale 1: each call sets its own).
    scales: Scales,
}

/// Each position's units at its row's base weight, for one call ([`Sorted::terms`]).
struct Terms<'a> {
    sc: Scales,
    /// Count units per position; `None` with no base weights (every entry counts its row's
    /// multiplicity).
    count: Option<Vec<i64>>,
    score: Cow<'a, [i64]>,
    outcome: Cow<'a, [i64]>,
}

impl Sorted {
    /// Sorts the entries `(groups[i], scores[i], outcomes[i], rows[i])` by (group, score, i).
    /// The caller has checked the lengths, the groups (in `0..num_groups`) and the rows (in
    /// `0..n_rows`); scores are finite.
    pub fn new(groups: &[i64], scores: &[f64], outcomes: &[f64], rows: &[i64], num_groups: usize, n_rows: usize) -> Result<Self, KernelError> {
        let each = |f: &mut dyn FnMut(u64, usize, f64, f64)| {
            for (i, ((&g, &s), &y)) in groups.iter().zip(scores).zip(outcomes).enumerate() {
                f(i as u64, (g.max(0) as usize).min(num_groups.saturating_sub(1)), s, y);
            }
        };
        let at = |i: u64| (rows.get(i as usize).map_or(0, |&r| r as u32), outcomes.get(i as usize).copied().unwrap_or(0.0));
        Self::build(num_groups, n_rows, each, at)
    }

    /// The sorted order of the kept entries of a cell table (`trust/cells.py`'s layout): the
    /// entry at row i, column c (its cell not [`DROPPED`]) is in group `cell / nb`, with score
    /// `score[i * width + c]` and outcome 1 where c is row i's `hit`, 0 elsewhere. These are the
    /// triples `calibkit.trust.cells.triples` forms, in the same order, so this is their
    /// `Sorted` (tested), without the triple arrays (at (50k, 1000) they took 1.6 GB and
    /// seconds to form).
    pub fn from_cells(c: &Cells<'_>) -> Result<Self, KernelError> {
        c.check()?;
        let w = c.width;
        if let Some(pos) = (0..c.cell.len()).find(|&pos| c.cell[pos] != DROPPED && !c.score[pos].is_finite()) {
            return Err(KernelError::Parameter(format!("score[{}, {}] is {}: scores must be finite", pos / w, pos % w, c.score[pos])));
        }
        let outcome = |pos: usize| ((pos % w) as u32 == c.hit[pos / w]) as u32 as f64;
        let each = |f: &mut dyn FnMut(u64, usize, f64, f64)| {
            for (pos, &cell) in c.cell.iter().enumerate() {
                if cell != DROPPED {
                    f(pos as u64, cell as usize / c.nb, c.score[pos], outcome(pos));
                }
            }
        };
        Self::build(c.groups, c.rows(), each, |pos| ((pos as usize / w) as u32, outcome(pos as usize)))
    }

    /// The sorted order of the entries that `each` gives as (id, group, score, outcome), ids
    /// increasing, with `at(id)` an entry's (row, outcome): each group's entries sorted by
    /// (score, id), the primitive's order, and each position's row, units and tie start. The
    /// scores are read back from the sort keys ([`score_of_key`]; -0.0 comes back as +0.0, of
    /// the same units), so only the row and the outcome are gathered by id.
    ///
    /// `each` runs twice (a counting pass, then the placing pass). An input another thread
    /// changes between them gives some order, never an index out of bounds: a group out of
    /// range is skipped, and a group's entries past its count are not placed.
    fn build(
        num_groups: usize,
        n_rows: usize,
        each: impl Fn(&mut dyn FnMut(u64, usize, f64, f64)),
        at: impl Fn(u64) -> (u32, f64) + Sync,
    ) -> Result<Self, KernelError> {
        let mut start = vec![0usize; num_groups + 1];
        let (mut most_score, mut most_outcome) = (0.0f64, 0.0f64);
        each(&mut |_, g, s, y| {
            if g < num_groups {
                start[g + 1] += 1;
                most_score = most_score.max(s.abs());
                most_outcome = most_outcome.max(y.abs());
            }
        });
        for g in 0..num_groups {
            start[g + 1] += start[g];
        }
        let m = start[num_groups];
        if m >= u32::MAX as usize || n_rows >= u32::MAX as usize {
            return Err(KernelError::Parameter(format!("{m} entries of {n_rows} rows: at most 2^32 - 1 each")));
        }
        let mut fill = start.clone();
        let mut keys = vec![0u128; m];
        each(&mut |id, g, s, _| {
            if g < num_groups && fill[g] < start[g + 1] {
                keys[fill[g]] = ((order_key(s) as u128) << 64) | id as u128;
                fill[g] += 1;
            }
        });
        {
            let mut slices: Vec<&mut [u128]> = Vec::with_capacity(num_groups);
            let mut rest = &mut keys[..];
            for g in 0..num_groups {
                let (head, tail) = rest.split_at_mut(start[g + 1] - start[g]);
                slices.push(head);
                rest = tail;
            }
            slices.par_iter_mut().for_each_init(Vec::new, |scratch, s| sort_keyed(s, scratch));
        }
        let scales = Scales { weight: 1.0, score: Scales::of_values(most_score), outcome: Scales::of_values(most_outcome) };
        let (row, outcome): (Vec<u32>, Vec<i64>) = keys
            .par_iter()
            .map(|&k| {
                let (r, y) = at(k as u64);
                (r, scales.outcome_units(y))
            })
            .unzip();
        let (lo, hi): (Vec<u32>, Vec<u32>) = keys.par_iter().map(|&k| split(scales.score_units(score_of_key((k >> 64) as u64)))).unzip();
        let one = units::SCALE as i64;
        let binary = outcome.iter().all(|&y| y == 0 || y == one);
        let hit: Vec<u32> = if binary { outcome.iter().map(|&y| if y == one { u32::MAX } else { 0 }).collect() } else { Vec::new() };
        let mut tie_start = vec![0u32; m];
        for g in 0..num_groups {
            for p in start[g]..start[g + 1] {
                let tied = p > start[g] && keys[p] >> 64 == keys[p - 1] >> 64;
                tie_start[p] = if tied { tie_start[p - 1] } else { p as u32 };
            }
        }
        Ok(Sorted { start, row, lo, hi, outcome, hit, tie_start, num_groups, n_rows, scales })
    }

    #[inline(always)]
    fn score_units(&self, p: usize) -> i64 {
        (((self.hi[p] as u64) << 32) | self.lo[p] as u64).wrapping_sub(BIAS as u64) as i64
    }

    /// Each position's units at its row's base weight `base` (scaled by
    /// [`Scales::of_terms`]), or the plain units with no base weights.
    fn terms(&self, base: Option<&[f64]>) -> Terms<'_> {
        let m = self.row.len();
        let Some(b) = base else {
            let score = (0..m).map(|p| self.score_units(p)).collect();
            return Terms { sc: self.scales, count: None, score: Cow::Owned(score), outcome: Cow::Borrowed(&self.outcome) };
        };
        let sc = Scales { weight: Scales::of_terms(b.iter().fold(0.0f64, |m, &x| m.max(x))), ..self.scales };
        // rows were checked; `get` keeps a row array changed during the call in bounds
        let ws = |p: usize| b.get(self.row[p] as usize).copied().unwrap_or(0.0) * sc.weight;
        let count = (0..m).map(|p| count_units(ws(p)) as i64).collect();
        let score = (0..m).map(|p| weighted_units(ws(p), self.score_units(p)) as i64).collect();
        let outcome = (0..m)
            .map(|p| match self.outcome[p] {
                0 => 0,
                y if y == units::SCALE as i64 => count_units(ws(p)) as i64,
                y => weighted_units(ws(p), y) as i64,
            })
            .collect();
        Terms { sc, count: Some(count), score: Cow::Owned(score), outcome: Cow::Owned(outcome) }
    }

    /// The table of one resample with per-row multiplicities `mult` and base weights `base`
    /// (per-row lengths `n_rows`), `gw` scratch. `whole`: every weight is an integer and every
    /// cumulative sum below 2^53, so sums of weights are exact in any order: then the total
    /// takes independent partial sums, and the walk to each edge skips whole blocks of
    /// [`SKIP`] rows (the same cumulative values, so the same edges).
    #[cfg(test)]
    fn table(&self, mult: &[f64], base: Option<&[f64]>, num_bins: usize, whole: bool, gw: &mut Vec<f64>) -> BinStats {
        let terms = self.terms(base);
        let w: Vec<f64> = match base {
            Some(b) => mult.iter().zip(b).map(|(x, y)| x * y).collect(),
            None => mult.to_vec(),
        };
        let m: Vec<u32> = mult.iter().map(|&x| x as u32).collect();
        let mut st = terms.sc.table(self.num_groups, num_bins);
        for g in 0..self.num_groups {
            self.group_table(g, &w, &m, &terms, num_bins, whole, &mut st, gw);
        }
        st
    }

    /// Group `g`'s cells of `Sorted::table` (the tests' oracle): `w` the resample's per-row weights (for the
    /// edges), `mult` its per-row multiplicities.
    #[allow(clippy::too_many_arguments)]
    fn group_table(&self, g: usize, w: &[f64], mult: &[u32], terms: &Terms<'_>, num_bins: usize, whole: bool, st: &mut BinStats, gw: &mut Vec<f64>) {
        let nb = num_bins;
        let r = self.start[g]..self.start[g + 1];
        gw.clear();
        // rows were checked; `get` keeps a row array changed during the call in bounds
        gw.extend(self.row[r.clone()].iter().map(|&i| w.get(i as usize).copied().unwrap_or(0.0)));
        let ranks = if whole { whole_edge_ranks(gw, nb) } else {
            let total = gw.iter().fold(0.0, |c, &x| c + x);
            edge_ranks(gw, total, nb)
        };
        let cells = g * nb..(g + 1) * nb;
        if ranks.len() + 1 < nb {
            // no positive weight (no edges although B > 1): every sum is 0
            for c in cells {
                terms.sc.write(st, c, 0, 0, 0);
            }
            return;
        }
        let mut lo = 0usize;
        // bin b ends where edge b + 1's run of ties starts; the last bin at the group's end
        let ends = ranks.iter().map(|&p| self.tie_start[r.start + p] as usize - r.start).chain(std::iter::once(r.len()));
        for (b, hi) in ends.enumerate() {
            let hi = hi.max(lo);
            let run = r.start + lo..r.start + hi;
            let count = terms.count.as_ref().map(|c| &c[run.clone()]);
            let (c, s, o) = run_sums(&self.row[run.clone()], mult, count, &terms.score[run.clone()], &terms.outcome[run]);
            terms.sc.write(st, g * nb + b, c, s, o);
            lo = hi;
        }
    }

    /// Group `g`'s cells of one resample with no base weights and 0/1 outcomes
    /// ([`Sorted::resample`]'s common case): the group's multiplicities gathered from `mult`
    /// into `gm` (bytes when they fit), then [`Sorted::group_cells`]. The same table as
    /// [`Sorted::group_table`].
    #[allow(clippy::too_many_arguments)]
    fn group_table_plain<M: Multiplicity>(&self, g: usize, mult: &[M], chunk: usize, num_bins: usize, st: &mut BinStats, gm: &mut Vec<M>) {
        let r = self.start[g]..self.start[g + 1];
        gm.clear();
        // rows were checked; `get` keeps a row array changed during the call in bounds
        gm.extend(self.row[r].iter().map(|&i| mult.get(i as usize).copied().unwrap_or_default()));
        let blocks: Vec<u64> = gm.chunks(SKIP).map(M::block_sum).collect();
        self.group_cells(g, gm, &blocks, chunk, num_bins, st);
    }

    /// [`Sorted::group_table_plain`] for the resamples of one block, every one's multiplicities
    /// bytes, packed by row (resample j in byte j of `packed[row]`, [`pack`]): one gather of
    /// the group's rows serves the whole block (one per resample was half of an ACE interval),
    /// and the block sums of [`whole_edge_ranks`] are taken for every resample at once, in
    /// 16-bit lanes; each resample's bytes are then taken out. The same tables.
    #[allow(clippy::too_many_arguments)]
    fn group_tables_packed(&self, g: usize, packed: &[u64], num_bins: usize, sts: &mut [BinStats], gp: &mut Vec<u64>, gm: &mut Vec<u8>, sums: &mut Vec<[u64; 2]>) {
        const EVEN: u64 = 0x00FF_00FF_00FF_00FF;
        const _: () = assert!(SKIP * u8::MAX as usize <= u16::MAX as usize, "a block's byte sum fits a 16-bit lane");
        let r = self.start[g]..self.start[g + 1];
        gp.clear();
        gp.extend(self.row[r].iter().map(|&i| packed.get(i as usize).copied().unwrap_or_default()));
        // per block of SKIP rows: the even bytes' sums and the odd bytes' sums, each lane below
        // 16 * 255 < 2^16
        sums.clear();
        sums.extend(gp.chunks(SKIP).map(|c| c.iter().fold([0u64; 2], |[e, o], &x| [e + (x & EVEN), o + (x >> 8 & EVEN)])));
        let mut blocks = Vec::with_capacity(sums.len());
        for (j, st) in sts.iter_mut().enumerate() {
            let (half, shift) = (j % 2, 8 * (j - j % 2));
            blocks.clear();
            blocks.extend(sums.iter().map(|s| s[half] >> shift & 0xFFFF));
            gm.clear();
            gm.extend(gp.iter().map(|&x| (x >> (8 * j)) as u8));
            self.group_cells(g, gm, &blocks, plain_chunk(u8::MAX as u64), num_bins, st);
        }
    }

    /// Group `g`'s cells of one resample given the group's multiplicities in sorted order
    /// (`gm`) and their sums by block of [`SKIP`] (`blocks`): the edges of [`whole_edge_ranks`],
    /// and each bin's sums by [`plain_sums`] (runs of at most `chunk` entries).
    fn group_cells<M: Multiplicity>(&self, g: usize, gm: &[M], blocks: &[u64], chunk: usize, num_bins: usize, st: &mut BinStats) {
        let nb = num_bins;
        let r = self.start[g]..self.start[g + 1];
        let ranks = edge_walk(gm, blocks, nb);
        if ranks.len() + 1 < nb {
            for c in g * nb..(g + 1) * nb {
                self.scales.write(st, c, 0, 0, 0);
            }
            return;
        }
        let (lo_u, hi_u, hit) = (&self.lo[r.clone()], &self.hi[r.clone()], &self.hit[r.clone()]);
        let mut lo = 0usize;
        // every edge's tie start read before any sum: independent loads, whose cache misses
        // overlap (read one per bin, between the sums, they took a fifth of the group's time)
        let ends: Vec<usize> = ranks.iter().map(|&p| self.tie_start[r.start + p] as usize - r.start).chain(std::iter::once(r.len())).collect();
        for (b, &hi) in ends.iter().enumerate() {
            let hi = hi.max(lo);
            let (c, s, o) = plain_sums(&gm[lo..hi], &lo_u[lo..hi], &hi_u[lo..hi], &hit[lo..hi], chunk);
            self.scales.write(st, g * nb + b, c, s, o);
            lo = hi;
        }
    }

    /// The metric on bootstrap resamples `first..first + n` (module doc), resample `r` weighted
    /// by [`bootstrap_counts`] of stream `r` times `base` (per row, when given), after the
    /// checks of the arguments: the bin count and the table's size (the primitive's limits),
    /// and the base weights (one per row, finite, >= 0). One sorted order serves any number of
    /// calls (a progress bar's blocks of resamples).
    #[allow(clippy::too_many_arguments)]
    pub fn resample(
        &self,
        num_bins: usize,
        norm: Norm,
        class_conditional: bool,
        scheme: Scheme,
        seed: u64,
        base: Option<&[f64]>,
        first: usize,
        n: usize,
    ) -> Result<Vec<f64>, KernelError> {
        let limits = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: true, threshold: 0.0 };
        limits.check(num_bins)?;
        limits.check_table(self.num_groups, num_bins)?;
        if let Some(b) = base {
            if b.len() != self.n_rows {
                return Err(KernelError::Shape(format!("base weights must have {} entries, got {}", self.n_rows, b.len())));
            }
            crate::kernels::core::validate::weights(b, "base weights")?;
        }
        let whole = whole_weights(scheme, base, self.n_rows);
        if base.is_none() && whole && !self.hit.is_empty() {
            return self.bootstrap_plain(num_bins, norm, class_conditional, scheme, seed, first, n, u8::MAX as u32);
        }
        let terms = self.terms(base);
        fill_blocks(n, BLOCK, |block, out| {
            // The block's resamples share each group's pass: its sorted entries are read
            // from memory once per block, not once per resample.
            let mut gw = Vec::new();
            let mults: Vec<Vec<u32>> = block
                .clone()
                .map(|j| {
                    let mut m = vec![0u32; self.n_rows];
                    bootstrap_counts(scheme, seed, first.wrapping_add(j) as u64, &mut m);
                    m
                })
                .collect();
            // the weights of the edges: multiplicity times base weight, as the primitive
            // takes them
            let ws: Vec<Vec<f64>> = mults
                .iter()
                .map(|m| match base {
                    Some(b) => m.iter().zip(b).map(|(&x, y)| x as f64 * y).collect(),
                    None => m.iter().map(|&x| x as f64).collect(),
                })
                .collect();
            let mut sts: Vec<BinStats> = mults.iter().map(|_| terms.sc.table(self.num_groups, num_bins)).collect();
            for g in 0..self.num_groups {
                for (j, st) in sts.iter_mut().enumerate() {
                    self.group_table(g, &ws[j], &mults[j], &terms, num_bins, whole, st, &mut gw);
                }
            }
            for (o, st) in out.iter_mut().zip(&sts) {
                *o = reduce(st, norm, class_conditional);
            }
        })
    }

    /// [`Sorted::resample`] with no base weights, 0/1 outcomes and whole weights: each
    /// resample's multiplicities as bytes ([`Sorted::group_table_plain`]), or as `u32` for a
    /// resample that draws a row more than `byte_max` (255) times (multinomial only). The same
    /// values.
    #[allow(clippy::too_many_arguments)]
    fn bootstrap_plain(&self, num_bins: usize, norm: Norm, class_conditional: bool, scheme: Scheme, seed: u64, first: usize, n: usize, byte_max: u32) -> Result<Vec<f64>, KernelError> {
        fill_blocks(n, PACKED_BLOCK, |block, out| {
            let mults: Vec<Mults> = block.clone().map(|j| Mults::draw(scheme, seed, first.wrapping_add(j) as u64, self.n_rows, byte_max)).collect();
            let mut sts: Vec<BinStats> = mults.iter().map(|_| self.scales.table(self.num_groups, num_bins)).collect();
            let (mut g8, mut g32) = (Vec::new(), Vec::new());
            let (packed, mut gp, mut sums) = (pack(&mults), Vec::new(), Vec::new());
            for g in 0..self.num_groups {
                if let Some(p) = &packed {
                    self.group_tables_packed(g, p, num_bins, &mut sts, &mut gp, &mut g8, &mut sums);
                    continue;
                }
                for (m, st) in mults.iter().zip(sts.iter_mut()) {
                    match m {
                        Mults::Bytes(m) => self.group_table_plain(g, m, plain_chunk(u8::MAX as u64), num_bins, st, &mut g8),
                        Mults::Wide(m, most) => self.group_table_plain(g, m, plain_chunk(*most as u64), num_bins, st, &mut g32),
                    }
                }
            }
            for (o, st) in out.iter_mut().zip(&sts) {
                *o = reduce(st, norm, class_conditional);
            }
        })
    }
}

/// One resample's per-row multiplicities: bytes when none passes the byte limit, else `u32`
/// with the largest.
enum Mults {
    Bytes(Vec<u8>),
    Wide(Vec<u32>, u32),
}

impl Mults {
    /// The multiplicities of resample `r` ([`bootstrap_counts`]) of `n` rows; `byte_max` (at
    /// most 255) is the largest kept as bytes.
    fn draw(scheme: Scheme, seed: u64, r: u64, n: usize, byte_max: u32) -> Mults {
        let mut m = vec![0u32; n];
        bootstrap_counts(scheme, seed, r, &mut m);
        let most = m.iter().copied().max().unwrap_or(0);
        if most <= byte_max.min(u8::MAX as u32) {
            Mults::Bytes(m.into_iter().map(|x| x as u8).collect())
        } else {
            Mults::Wide(m, most)
        }
    }
}

/// The multiplicities of a block's resamples packed by row, resample j in byte j, when every
/// one's are bytes ([`Sorted::group_tables_packed`]).
fn pack(mults: &[Mults]) -> Option<Vec<u64>> {
    const _: () = assert!(PACKED_BLOCK <= 8, "a row's multiplicities of one task fill one u64");
    let mut packed: Vec<u64> = Vec::new();
    for (j, m) in mults.iter().enumerate() {
        let Mults::Bytes(m) = m else { return None };
        packed.resize(m.len(), 0);
        for (p, &x) in packed.iter_mut().zip(m) {
            *p |= (x as u64) << (8 * j);
        }
    }
    Some(packed)
}

/// Rows per block skipped at once by [`whole_edge_ranks`].
const SKIP: usize = 16;

/// Whether every resample weight (multiplicity times base weight) is an integer with every
/// sum of them below 2^53: multiplicities are integers (a Poisson draw is at most 17, a
/// multinomial one at most `n`), so it holds when the base weights are integers small enough.
fn whole_weights(scheme: Scheme, base: Option<&[f64]>, n: usize) -> bool {
    let most = match scheme {
        Scheme::Poisson => POISSON_MAX as f64,
        Scheme::Multinomial => n as f64,
    };
    let (top, sum) = match base {
        None => (1.0, n as f64),
        Some(b) if b.iter().all(|x| x.fract() == 0.0) => (b.iter().fold(0.0f64, |m, &x| m.max(x)), b.iter().sum()),
        Some(_) => return false,
    };
    let bound = 2f64.powi(53);
    most * sum < bound && top * n as f64 * most < bound
}

/// [`edge_ranks`] for whole weights (see `Sorted::table`, the tests' oracle): every cumulative weight is an exact
/// integer, so partial sums in any grouping give the values of the sequential walk, and the walk
/// skips each block of [`SKIP`] rows whose weight does not reach the next target. The walk
/// adds integers (`u64`, exact as the float sums are): a float add's latency was the walk's
/// serial chain, a third of an ACE interval's time. Each target is the float rule's, an integer
/// below 2^53, so comparing it as an integer is exact.
fn whole_edge_ranks<T: BlockSum>(w: &[T], b: usize) -> Vec<usize> {
    let blocks: Vec<u64> = w.chunks(SKIP).map(T::block_sum).collect();
    edge_walk(w, &blocks, b)
}

/// [`whole_edge_ranks`] given the sums of `w` by block of [`SKIP`] rows (`blocks`).
fn edge_walk<T: BlockSum>(w: &[T], blocks: &[u64], b: usize) -> Vec<usize> {
    let total: u64 = blocks.iter().sum();
    let step = total as f64 / b as f64;
    let mut edges = Vec::with_capacity(b.saturating_sub(1));
    let Some(final_positive) = w.iter().rposition(|&x| x.whole() > 0) else {
        return edges;
    };
    let (mut cum, mut p) = (0u64, 0usize);
    let mut last = final_positive; // the crossing row, or the final positive row when none
    for j in 1..b {
        let t = (j as f64 * step).round_ties_even() as u64;
        if cum <= t {
            last = final_positive;
            while p < w.len() {
                if p % SKIP == 0 && cum + blocks[p / SKIP] <= t {
                    cum += blocks[p / SKIP];
                    p += SKIP;
                    continue;
                }
                cum += w[p].whole();
                p += 1;
                if cum > t {
                    last = p - 1; // a row that moves the cumulative weight past t is positive
                    break;
                }
            }
        }
        edges.push(last);
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
    use crate::kernels::weighted::resample::weights_matrix;
    use crate::kernels::Binning;

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Each resample's table: with no or whole base weights, the primitive's table on the
    /// resample's weights, bitwise (edges, cells, counts, score and outcome sums, units); with
    /// fractional base weights, the primitive's table of the rows repeated as drawn, bitwise, and
    /// its table on the weights to rounding; and the values do not depend on how resamples are
    /// split into calls or on the thread count.
    #[test]
    fn resample_tables_are_the_primitives() {
        let mut rng = Rng(11);
        for trial in 0..80 {
            let (n, ng, b) = (1 + rng.below(300) as usize, 1 + rng.below(5) as usize, 1 + rng.below(20) as usize);
            let levels = [3u64, 17, 1 << 20][trial % 3];
            let per_row = 1 + rng.below(3) as usize;
            let (mut groups, mut scores, mut outcomes, mut rows) = (vec![], vec![], vec![], vec![]);
            for i in 0..n {
                for _ in 0..per_row {
                    groups.push(rng.below(ng as u64) as i64);
                    scores.push(rng.below(levels + 1) as f64 / levels as f64);
                    outcomes.push(rng.below(2) as f64);
                    rows.push(i as i64);
                }
            }
            let fractional = trial % 4 == 1;
            let base: Option<Vec<f64>> = match trial % 4 {
                3 => Some((0..n).map(|_| rng.below(4) as f64).collect()),
                // dyadic weights in [1/2, 2]: cumulative sums exact either way, scale 1
                1 => Some((0..n).map(|_| (2 + rng.below(7)) as f64 / 4.0).collect()),
                _ => None,
            };
            let sorted = Sorted::new(&groups, &scores, &outcomes, &rows, ng, n).unwrap();
            let scheme = if trial % 2 == 0 { Scheme::Poisson } else { Scheme::Multinomial };
            let mut gw = Vec::new();
            for r in 0..5 {
                let mult = weights_matrix(scheme, 9, r, 1, n);
                let w: Vec<f64> = match &base {
                    Some(bw) => mult.iter().zip(bw).map(|(x, y)| x * y).collect(),
                    None => mult.clone(),
                };
                let whole = whole_weights(scheme, base.as_deref(), n);
                assert_eq!(whole, !fractional);
                for whole in [whole, false] {
                    let st = sorted.table(&mult, base.as_deref(), b, whole, &mut gw);
                    let tw: Vec<f64> = rows.iter().map(|&i| w[i as usize]).collect();
                    let gr = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: Some(&tw), num_groups: ng };
                    let want = grouped_bin_stats(&gr, Binning::Adaptive, b).unwrap();
                    assert_eq!(st.count, want.count, "trial {trial} resample {r}");
                    if !fractional {
                        assert_eq!(st.sum_score, want.sum_score, "trial {trial} resample {r}");
                        assert_eq!(st.sum_outcome, want.sum_outcome, "trial {trial} resample {r}");
                        assert_eq!(st.units, want.units, "trial {trial} resample {r}");
                        continue;
                    }
                    for (x, y) in st.sum_score.iter().zip(&want.sum_score) {
                        assert!((x - y).abs() <= 1e-13 * (1.0 + y.abs()), "{x} vs {y}");
                    }
                    // the rows repeated as drawn, each with its base weight
                    let (mut eg, mut es, mut eo, mut ew) = (vec![], vec![], vec![], vec![]);
                    for e in 0..rows.len() {
                        let i = rows[e] as usize;
                        for _ in 0..mult[i] as usize {
                            eg.push(groups[e]);
                            es.push(scores[e]);
                            eo.push(outcomes[e]);
                            ew.push(base.as_ref().unwrap()[i]);
                        }
                    }
                    let er = GroupedRows { groups: Some(&eg), scores: &es, outcomes: &eo, weights: Some(&ew), num_groups: ng };
                    let rep = grouped_bin_stats(&er, Binning::Adaptive, b).unwrap();
                    assert_eq!((&st.count, &st.sum_score, &st.sum_outcome, &st.units), (&rep.count, &rep.sum_score, &rep.sum_outcome, &rep.units), "trial {trial} resample {r}");
                }
            }
            let all = sorted.resample(b, Norm::L1, ng > 1, scheme, 9, base.as_deref(), 0, 7).unwrap();
            if base.is_none() {
                // the byte path (and its u32 fallback) is the general path
                for (r, &v) in all.iter().enumerate() {
                    let mult = weights_matrix(scheme, 9, r, 1, n);
                    let st = sorted.table(&mult, None, b, false, &mut gw);
                    assert_eq!(v, reduce(&st, Norm::L1, ng > 1), "trial {trial} resample {r}");
                }
                assert_eq!(all, sorted.bootstrap_plain(b, Norm::L1, ng > 1, scheme, 9, 0, 7, 1).unwrap());
            }
            let tail = sorted.resample(b, Norm::L1, ng > 1, scheme, 9, base.as_deref(), 3, 4).unwrap();
            assert_eq!(&all[3..], &tail[..]);
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let one = pool.install(|| sorted.resample(b, Norm::L1, ng > 1, scheme, 9, base.as_deref(), 0, 7).unwrap());
            assert_eq!(all, one);
        }
    }
    /// [`Sorted::from_cells`] is [`Sorted::new`] on the cell table's triples (the kept
    /// entries row-major: group `cell / nb`, outcome 1 in the row's `hit` column, the entry's
    /// row), field for field, so every resample is the same bit for bit, with no, whole or
    /// fractional base weights. (The triples' entry point is the oracle: it is checked
    /// against the primitive above and by the `resample` fuzz target.)
    #[test]
    fn sorted_from_cells_is_sorted_from_its_triples() {
        let mut rng = Rng(29);
        for trial in 0..60 {
            let (n, width, ng) = (1 + rng.below(200) as usize, 1 + rng.below(6) as usize, 1 + rng.below(4) as usize);
            let (b, levels) = (1 + rng.below(12) as usize, [4u64, 33, 1 << 20][trial % 3]);
            let hit: Vec<u32> = (0..n).map(|_| if rng.below(9) == 0 { DROPPED } else { rng.below(width as u64) as u32 }).collect();
            let cell: Vec<u32> = (0..n * width).map(|_| if rng.below(5) == 0 { DROPPED } else { rng.below((ng * b) as u64) as u32 }).collect();
            let score: Vec<f64> = (0..n * width).map(|_| rng.below(levels + 1) as f64 / levels as f64).collect();
            let (mut groups, mut scores, mut outcomes, mut rows) = (vec![], vec![], vec![], vec![]);
            for (pos, &c) in cell.iter().enumerate().filter(|(_, &c)| c != DROPPED) {
                groups.push((c as usize / b) as i64);
                scores.push(score[pos]);
                outcomes.push(((pos % width) as u32 == hit[pos / width]) as u32 as f64);
                rows.push((pos / width) as i64);
            }
            let cells = Cells { cell: &cell, score: &score, hit: &hit, base: None, width, groups: ng, nb: b };
            let (got, want) = (Sorted::from_cells(&cells).unwrap(), Sorted::new(&groups, &scores, &outcomes, &rows, ng, n).unwrap());
            assert_eq!((&got.start, &got.row, &got.lo, &got.hi), (&want.start, &want.row, &want.lo, &want.hi), "trial {trial}");
            assert_eq!((&got.outcome, &got.hit, &got.tie_start), (&want.outcome, &want.hit, &want.tie_start), "trial {trial}");
            assert_eq!((got.num_groups, got.n_rows, got.scales), (want.num_groups, want.n_rows, want.scales), "trial {trial}");
            let base: Option<Vec<f64>> = match trial % 3 {
                1 => Some((0..n).map(|_| rng.below(4) as f64).collect()),
                2 => Some((0..n).map(|_| 0.1 + rng.below(7) as f64 / 3.0).collect()),
                _ => None,
            };
            for scheme in [Scheme::Poisson, Scheme::Multinomial] {
                let a = got.resample(b, Norm::L2, ng > 1, scheme, 4, base.as_deref(), 0, 9).unwrap();
                let w = want.resample(b, Norm::L2, ng > 1, scheme, 4, base.as_deref(), 0, 9).unwrap();
                assert_eq!(a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), w.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), "trial {trial}");
            }
        }
    }
}
