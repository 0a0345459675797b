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
//!    the edge's run of ties, found once); its count, score and outcome sums are compensated
//!    sums over that run.
//!
//! No sort per resample. The edges are bitwise those of [`grouped_bin_stats`] on the same
//! weights (same cumulative sums in the same order), so every entry falls in the same cell.
//! The sums run in score order where the primitive sums in entry order: counts and outcome
//! sums are bitwise equal whenever they are exact (integer multiplicities and base weights, 0/1
//! outcomes: every unweighted interval); score sums are compensated in both, and may differ
//! in the last bit. `tests` checks both against the primitive.
//!
//! Resample `r` uses counter stream `r` ([`bootstrap_weights`]), so resamples `first..first +
//! n` are those of one call with `first + n` resamples, and the values never depend on the
//! thread count or on how the resamples are split into calls (a caller can wrap chunks of
//! resamples in a progress bar).

use rayon::prelude::*;

use crate::kernels::core::reduce::reduce;
use crate::kernels::core::stats::add_compensated;
use crate::kernels::weighted::grouped::{edge_ranks, order_key};
use crate::kernels::weighted::resample::{bootstrap_weights, Scheme};
use crate::kernels::{BinStats, KernelError, Norm};

#[cfg(doc)]
use crate::kernels::weighted::grouped::grouped_bin_stats;

/// Resamples per rayon task (fixed: the split never depends on the thread count).
const BLOCK: usize = 4;

/// Entries of every group in sorted order, with what a resample needs of each.
pub struct Sorted {
    /// Group `g` holds positions `start[g]..start[g + 1]`.
    start: Vec<usize>,
    /// Row of the entry at each position (indexes the per-row weights).
    row: Vec<u32>,
    score: Vec<f64>,
    outcome: Vec<f64>,
    /// The first position of each position's run of equal scores (within its group).
    tie_start: Vec<u32>,
    num_groups: usize,
    n_rows: usize,
    /// Every outcome is 0 or 1 (then whole weights give exact outcome sums).
    binary: bool,
}

impl Sorted {
    /// Sorts the entries `(groups[i], scores[i], outcomes[i], rows[i])` by (group, score, i).
    /// The caller has checked the lengths, the groups (in `0..num_groups`) and the rows (in
    /// `0..n_rows`); scores are finite.
    pub fn new(groups: &[i64], scores: &[f64], outcomes: &[f64], rows: &[i64], num_groups: usize, n_rows: usize) -> Result<Self, KernelError> {
        let m = scores.len();
        if m >= u32::MAX as usize || n_rows >= u32::MAX as usize {
            return Err(KernelError::Parameter(format!("{m} entries of {n_rows} rows: at most 2^32 - 1 each")));
        }
        let mut start = vec![0usize; num_groups + 1];
        for &g in groups {
            start[g as usize + 1] += 1;
        }
        for g in 0..num_groups {
            start[g + 1] += start[g];
        }
        let mut fill = start.clone();
        let mut keys = vec![0u128; m];
        for (i, &g) in groups.iter().enumerate() {
            let g = g as usize;
            keys[fill[g]] = ((order_key(scores[i]) as u128) << 64) | i as u128;
            fill[g] += 1;
        }
        {
            let mut slices: Vec<&mut [u128]> = Vec::with_capacity(num_groups);
            let mut rest = &mut keys[..];
            for g in 0..num_groups {
                let (head, tail) = rest.split_at_mut(start[g + 1] - start[g]);
                slices.push(head);
                rest = tail;
            }
            slices.par_iter_mut().for_each(|s| s.sort_unstable());
        }
        let index = |p: usize| keys[p] as u64 as usize;
        let row: Vec<u32> = (0..m).map(|p| rows[index(p)] as u32).collect();
        let score: Vec<f64> = (0..m).map(|p| scores[index(p)]).collect();
        let outcome: Vec<f64> = (0..m).map(|p| outcomes[index(p)]).collect();
        let mut tie_start = vec![0u32; m];
        for g in 0..num_groups {
            for p in start[g]..start[g + 1] {
                let tied = p > start[g] && keys[p] >> 64 == keys[p - 1] >> 64;
                tie_start[p] = if tied { tie_start[p - 1] } else { p as u32 };
            }
        }
        let binary = outcomes.iter().all(|&z| z == 0.0 || z == 1.0);
        Ok(Sorted { start, row, score, outcome, tie_start, num_groups, n_rows, binary })
    }

    /// The table of one resample with per-row weights `w` (length `n_rows`), `gw` scratch.
    /// `whole`: every weight is an integer and every cumulative sum below 2^53, so sums of
    /// weights (and of weights times 0/1 outcomes) are exact in any order: then the total and
    /// the counts take independent partial sums, and the walk to each edge skips whole blocks
    /// of [`SKIP`] rows (the same cumulative values, so the same edges).
    #[cfg(test)]
    fn table(&self, w: &[f64], num_bins: usize, whole: bool, st: &mut BinStats, gw: &mut Vec<f64>) {
        for g in 0..self.num_groups {
            self.group_table(g, w, num_bins, whole, st, gw);
        }
    }

    /// Group `g`'s cells of [`Sorted::table`].
    fn group_table(&self, g: usize, w: &[f64], num_bins: usize, whole: bool, st: &mut BinStats, gw: &mut Vec<f64>) {
        let nb = num_bins;
        let r = self.start[g]..self.start[g + 1];
        gw.clear();
        gw.extend(self.row[r.clone()].iter().map(|&i| w[i as usize]));
        let ranks = if whole { whole_edge_ranks(gw, nb) } else {
            let total = gw.iter().fold(0.0, |c, &x| c + x);
            edge_ranks(gw, total, nb)
        };
        let cells = g * nb..(g + 1) * nb;
        if ranks.len() + 1 < nb {
            // no positive weight (no edges although B > 1): every sum is 0
            for c in cells {
                st.count[c] = 0.0;
                st.sum_score[c] = 0.0;
                st.sum_outcome[c] = 0.0;
            }
            return;
        }
        let (score, outcome) = (&self.score[r.clone()], &self.outcome[r.clone()]);
        let mut lo = 0usize;
        // bin b ends where edge b + 1's run of ties starts; the last bin at the group's end
        let ends = ranks.iter().map(|&p| self.tie_start[r.start + p] as usize - r.start).chain(std::iter::once(r.len()));
        for (b, hi) in ends.enumerate() {
            let hi = hi.max(lo);
            let (c, s, o) = if whole {
                bin_sums_whole(&gw[lo..hi], &score[lo..hi], &outcome[lo..hi])
            } else {
                bin_sums(&gw[lo..hi], &score[lo..hi], &outcome[lo..hi])
            };
            st.count[g * nb + b] = c;
            st.sum_score[g * nb + b] = s;
            st.sum_outcome[g * nb + b] = o;
            lo = hi;
        }
    }

    /// The metric on bootstrap resamples `first..first + n` (module doc), resample `r` weighted
    /// by [`bootstrap_weights`] of stream `r` times `base` (per row, when given).
    #[allow(clippy::too_many_arguments)]
    pub fn bootstrap(
        &self,
        num_bins: usize,
        norm: Norm,
        class_conditional: bool,
        scheme: Scheme,
        seed: u64,
        base: Option<&[f64]>,
        first: usize,
        n: usize,
    ) -> Vec<f64> {
        let whole = self.binary && whole_weights(scheme, base, self.n_rows);
        let blocks: Vec<Vec<f64>> = (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .map(|k| {
                // The block's resamples share each group's pass: its sorted entries are read
                // from memory once per block, not once per resample.
                let block = k * BLOCK..((k + 1) * BLOCK).min(n);
                let mut gw = Vec::new();
                let ws: Vec<Vec<f64>> = block
                    .clone()
                    .map(|j| {
                        let mut w = vec![0.0; self.n_rows];
                        bootstrap_weights(scheme, seed, (first + j) as u64, &mut w);
                        if let Some(b) = base {
                            w.iter_mut().zip(b).for_each(|(x, y)| *x *= y);
                        }
                        w
                    })
                    .collect();
                let mut sts: Vec<BinStats> = ws.iter().map(|_| BinStats::zeros(self.num_groups, num_bins)).collect();
                for g in 0..self.num_groups {
                    for (w, st) in ws.iter().zip(sts.iter_mut()) {
                        self.group_table(g, w, num_bins, whole, st, &mut gw);
                    }
                }
                sts.iter().map(|st| reduce(st, norm, class_conditional)).collect::<Vec<f64>>()
            })
            .collect();
        blocks.into_iter().flatten().collect()
    }
}

/// Rows per block skipped at once by [`whole_edge_ranks`].
const SKIP: usize = 16;

/// Whether every resample weight (multiplicity times base weight) is an integer with every
/// sum of them below 2^53: multiplicities are integers (a Poisson draw is at most 17, a
/// multinomial one at most `n`), so it holds when the base weights are integers small enough.
fn whole_weights(scheme: Scheme, base: Option<&[f64]>, n: usize) -> bool {
    let most = match scheme {
        Scheme::Poisson => 17.0,
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

/// [`edge_ranks`] for whole weights (see [`Sorted::table`]): every cumulative weight is an exact
/// integer, so partial sums in any grouping give the values of the sequential walk, and the walk
/// skips each block of [`SKIP`] rows whose weight does not reach the next target.
fn whole_edge_ranks(w: &[f64], b: usize) -> Vec<usize> {
    let blocks: Vec<f64> = w.chunks(SKIP).map(|c| c.iter().sum()).collect();
    let total: f64 = blocks.iter().sum();
    let step = total / b as f64;
    let mut edges = Vec::with_capacity(b.saturating_sub(1));
    let Some(final_positive) = w.iter().rposition(|&x| x > 0.0) else {
        return edges;
    };
    let (mut cum, mut p) = (0.0f64, 0usize);
    let mut last = final_positive; // the crossing row, or the final positive row when none
    for j in 1..b {
        let t = (j as f64 * step).round_ties_even();
        if cum <= t {
            last = final_positive;
            while p < w.len() {
                if p % SKIP == 0 && cum + blocks[p / SKIP] <= t {
                    cum += blocks[p / SKIP];
                    p += SKIP;
                    continue;
                }
                cum += w[p];
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

/// Compensated (count, score, outcome) sums of one bin's rows.
fn bin_sums(w: &[f64], score: &[f64], outcome: &[f64]) -> (f64, f64, f64) {
    let (mut c, mut cc, mut s, mut sc, mut o, mut oc) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for ((&x, &y), &z) in w.iter().zip(score).zip(outcome) {
        add_compensated(&mut c, &mut cc, x);
        add_compensated(&mut s, &mut sc, x * y);
        add_compensated(&mut o, &mut oc, x * z);
    }
    (c + cc, s + sc, o + oc)
}

/// [`bin_sums`] for whole weights and 0/1 outcomes: counts and outcome sums are exact in any
/// order (four partial sums each); score sums are four compensated partial sums (TwoSum, no
/// branch, so the four lanes vectorise), added with compensation at the end.
fn bin_sums_whole(w: &[f64], score: &[f64], outcome: &[f64]) -> (f64, f64, f64) {
    let (mut c, mut o, mut s, mut e) = ([0.0f64; 4], [0.0f64; 4], [0.0f64; 4], [0.0f64; 4]);
    let n4 = w.len() / 4 * 4;
    for q in (0..n4).step_by(4) {
        let (w4, s4, o4) = (&w[q..q + 4], &score[q..q + 4], &outcome[q..q + 4]);
        for l in 0..4 {
            let x = w4[l];
            c[l] += x;
            o[l] += x * o4[l];
            let v = x * s4[l];
            let t = s[l] + v;
            let bv = t - s[l];
            e[l] += (s[l] - (t - bv)) + (v - bv);
            s[l] = t;
        }
    }
    for q in n4..w.len() {
        let x = w[q];
        c[0] += x;
        o[0] += x * outcome[q];
        add_compensated(&mut s[0], &mut e[0], x * score[q]);
    }
    let (mut t, mut tc) = (0.0, 0.0);
    for x in s.into_iter().chain(e) {
        add_compensated(&mut t, &mut tc, x);
    }
    ((c[0] + c[1]) + (c[2] + c[3]), t + tc, (o[0] + o[1]) + (o[2] + o[3]))
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

    /// Each resample's table: the same edges, cells, counts and outcome sums as the primitive
    /// on the resample's weights (bitwise), score sums within an ulp; and the values do not
    /// depend on how resamples are split into calls or on the thread count.
    #[test]
    fn resample_tables_are_the_primitives() {
        let mut rng = Rng(11);
        let (mut score_bits_equal, mut score_cells) = (0usize, 0usize);
        for trial in 0..60 {
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
            let base: Option<Vec<f64>> = (trial % 4 == 3).then(|| (0..n).map(|_| rng.below(4) as f64).collect());
            let sorted = Sorted::new(&groups, &scores, &outcomes, &rows, ng, n).unwrap();
            let scheme = if trial % 2 == 0 { Scheme::Poisson } else { Scheme::Multinomial };
            let mut st = BinStats::zeros(ng, b);
            let mut gw = Vec::new();
            for r in 0..5 {
                let mut w = weights_matrix(scheme, 9, r, 1, n);
                if let Some(bw) = &base {
                    w.iter_mut().zip(bw).for_each(|(x, y)| *x *= y);
                }
                let whole = whole_weights(scheme, base.as_deref(), n);
                assert!(whole);
                for whole in [whole, false] {
                sorted.table(&w, b, whole, &mut st, &mut gw);
                let tw: Vec<f64> = rows.iter().map(|&i| w[i as usize]).collect();
                let gr = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: Some(&tw), num_groups: ng };
                let want = grouped_bin_stats(&gr, Binning::Adaptive, b).unwrap();
                assert_eq!(st.count, want.count, "trial {trial} resample {r}");
                assert_eq!(st.sum_outcome, want.sum_outcome, "trial {trial} resample {r}");
                for (x, y) in st.sum_score.iter().zip(&want.sum_score) {
                    assert!((x - y).abs() <= 2.0 * f64::EPSILON * y.abs(), "{x} vs {y}");
                    score_bits_equal += (x == y) as usize;
                    score_cells += 1;
                }
                }
            }
            let all = sorted.bootstrap(b, Norm::L1, ng > 1, scheme, 9, base.as_deref(), 0, 7);
            let tail = sorted.bootstrap(b, Norm::L1, ng > 1, scheme, 9, base.as_deref(), 3, 4);
            assert_eq!(&all[3..], &tail[..]);
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let one = pool.install(|| sorted.bootstrap(b, Norm::L1, ng > 1, scheme, 9, base.as_deref(), 0, 7));
            assert_eq!(all, one);
        }
        assert!(score_bits_equal * 10 >= score_cells * 9, "{score_bits_equal} of {score_cells}");
    }
}
