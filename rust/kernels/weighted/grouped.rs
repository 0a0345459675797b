//! The weighted binning primitive: already-grouped `(group, score, outcome, weight)` rows ->
//! per-(group, bin) statistics ([`BinStats`]) for even and adaptive bins.
//!
//! Every consumer that has its scores grouped already (multilabel columns, streaming's kept
//! scores, `calibkit.dask` after selection, the binning recalibrators, the diagnostics) bins
//! them here, so the binning rules of docs/spec.md live in [`edges`](crate::kernels::core::edges) and in this file only.
//!
//! # Statistics
//! For each (group, bin) cell: `count` = sum of the weights, `sum_score` = sum of
//! `weight * score`, `sum_outcome` = sum of `weight * outcome`, each the exact `i128` sum of
//! the rows' grid units ([`sums`](crate::kernels::weighted::sums): a row adds the whole numbers
//! `round(w * s * 2^50)`, `w * s * units(score)` and `w * s * units(outcome)`, the products
//! exact for a whole `w * s` and rounded once otherwise) rounded once and divided by the
//! call's power-of-two weight scale `s`. Sums do not depend on the order of the rows, so any
//! row order, chunking or thread count gives the same bits.
//! - No weights, or every weight 1: the counts and 0/1 outcome sums are the exact integers and
//!   the score sums are bit for bit those of the unweighted kernels (each score's units, as in
//!   [`units`]): `gce(sample_weight=ones)` is `gce`.
//! - Whole weights `m`: exactly the table of each row repeated `m` times.
//! - `s` is 1 when the largest weight is at least 1/2 (unit and whole weights); smaller weights
//!   are lifted to the resolution of unit weights, and weights whose total may pass 2^74 (rows
//!   times the largest weight) are scaled down (every sum stays within `i128`). Scores or
//!   outcomes of magnitude 2 or more (allowed here: they go to the first or last even bin) are
//!   scaled into (-2, 2) the same way.
//!
//! The table's `units` (each cell's score units) are filled only when every scale is 1 (no
//! weights, or a largest weight of at least 1/2, and values within (-2, 2)): such tables from
//! separate calls (Dask partitions, streaming batches) add exactly with [`BinStats::add`]
//! (then [`BinStats::finish`]). A
//! scaled table has no units, and its sums add as floats: tables at different scales must not
//! be added as units.
//!
//! # Bins
//! - Even (`nb = B + 1`): SPEC's upper edges `u_j` ([`EvenEdges`]); a score goes to the number
//!   of upper edges `<=` it, the extra bin B holding scores `>= 1.0`. Weights do not move edges.
//! - Adaptive (`nb = B`), weighted equal mass. Per group, with `W` the group's total weight and
//!   its rows sorted by score, let `C_i` be the cumulative weight up to and including row `i`
//!   (so row `i` covers the interval `[C_{i-1}, C_i)` of the weight axis). For j = 1..B-1 the
//!   target is `t_j = round_half_even(j * (W / B))` (float64), and the upper edge `e_j` is the
//!   score of the first row with `C_i > t_j`, or of the last row of positive weight if there is
//!   none (this is SPEC's clip of `pos_j` to `n - 1`). A score then goes to the number of edges
//!   `<=` it (left-closed bins; ties on an edge go to the upper bin).
//!
//!   For integer weights this is exactly SPEC's rule applied to the sample in which every row
//!   is repeated `weight` times (`W = n`, `t_j = pos_j`, and the row covering position `pos_j`
//!   of the expanded sorted sample is the first with `C_i > pos_j`); a row of weight 0 covers an
//!   empty interval and so is never an edge, and adds 0 to every sum: it is dropped. For
//!   fractional weights the same definition applies as written: the edge is the score at the
//!   weighted rank `t_j` (rounded half to even to a whole unit of weight), i.e. the weighted
//!   lower quantile of level `t_j / W`. A group whose largest weight is below 1/2 is first
//!   lifted by the power of two bringing it into [1/2, 1) ([`units::weight_scale`], as the
//!   sums are), so that whole units of weight keep the resolution of unit weights
//!   ([`edge_ranks`]); weights of 1/2 or more, every whole weight, are never lifted.
//!   A group of total weight 0 has no edges: its inner boundaries are NaN, as for an empty group.
//!
//! # Edges reported
//! `edges` holds `nb + 1` boundaries per group: even `0, u_1, ..., u_B = 1, 1`; adaptive
//! `0, e_1, ..., e_{B-1}, 1` (the lower boundary is 0: callers that dropped scores at or below
//! a threshold replace it by their threshold).
//!
//! # Determinism
//! Rows are sorted by the total order (group, score, row index), and cell sums are exact
//! integers, so results are bitwise identical for any number of threads. Rayon is used only
//! for inputs of at least [`PARALLEL_ROWS`] rows.

use rayon::prelude::*;

use crate::kernels::core::chunks;
use crate::kernels::core::edges::{adaptive_boundaries, bin_by_edges, EvenEdges};
use crate::kernels::core::order::{order_key, radix_sort_by};
use crate::kernels::core::spec::{Binning, Grouping};
use crate::kernels::core::stats::LaneTables;
use crate::kernels::core::units;
use crate::kernels::weighted::sums::{count_units, weighted_units, Scales, UnitSums};
use crate::kernels::{BinStats, KernelError, Score};

/// Inputs of at least this many rows are sorted and summed with rayon.
pub const PARALLEL_ROWS: usize = 1 << 18;
/// Rows per chunk of the parallel sums (fixed: independent of the thread count).
const SUM_CHUNK: usize = 1 << 16;
/// Rows pushed to [`LaneTables`] between its checks (at most its slack).
const LANE_BATCH: usize = 1024;

/// Already-grouped rows: `scores[i]` with outcome `outcomes[i]` and weight `weights[i]` (1 when
/// `None`) belongs to group `groups[i]` (0 when `None`) of `num_groups`.
#[derive(Clone, Copy)]
pub struct GroupedRows<'a, T: Score> {
    pub groups: Option<&'a [i64]>,
    pub scores: &'a [T],
    pub outcomes: &'a [f64],
    pub weights: Option<&'a [f64]>,
    pub num_groups: usize,
}

impl<'a, T: Score> GroupedRows<'a, T> {
    /// Checks the lengths agree and every value is usable: groups in `[0, num_groups)`,
    /// finite scores and outcomes, finite weights `>= 0`.
    pub fn check(&self) -> Result<(), KernelError> {
        let m = self.scores.len();
        if self.num_groups == 0 {
            return Err(KernelError::Parameter("num_groups must be at least 1".into()));
        }
        let same = |name: &str, len: usize| {
            if len == m {
                Ok(())
            } else {
                Err(KernelError::Shape(format!(
                    "{name} has {len} entries but scores has {m}; pass one per score"
                )))
            }
        };
        same("outcomes", self.outcomes.len())?;
        if let Some(g) = self.groups {
            same("groups", g.len())?;
            if let Some(i) = g.iter().position(|&x| x < 0 || x as u64 >= self.num_groups as u64) {
                return Err(KernelError::Parameter(format!(
                    "groups[{i}] is {}, outside [0, {}): group ids must index the num_groups groups",
                    g[i], self.num_groups
                )));
            }
        }
        if let Some(w) = self.weights {
            same("weights", w.len())?;
            crate::kernels::core::validate::weights(w, "weights")?;
        }
        if let Some(i) = self.scores.iter().position(|s| !s.to_f64().is_finite()) {
            return Err(KernelError::Parameter(format!(
                "scores[{i}] is {}: scores must be finite",
                self.scores[i].to_f64()
            )));
        }
        if let Some(i) = self.outcomes.iter().position(|o| !o.is_finite()) {
            return Err(KernelError::Parameter(format!(
                "outcomes[{i}] is {}: outcomes must be finite",
                self.outcomes[i]
            )));
        }
        Ok(())
    }

    #[inline(always)]
    fn group(&self, i: usize) -> usize {
        self.groups.map_or(0, |g| g[i] as usize)
    }

    #[inline(always)]
    fn weight(&self, i: usize) -> f64 {
        self.weights.map_or(1.0, |w| w[i])
    }
}

/// Per-(group, bin) statistics of already-grouped weighted rows (see the module docs for the
/// exact rules). `num_bins` is B: `nb = B + 1` bins per group for even binning, `B` for
/// adaptive binning.
pub fn grouped_bin_stats<T: Score>(
    rows: &GroupedRows<T>,
    binning: Binning,
    num_bins: usize,
) -> Result<BinStats, KernelError> {
    // The bin-count and table limits of every other entry point.
    let limits = Grouping { binning, max_prob: false, class_conditional: true, threshold: 0.0 };
    limits.check(num_bins)?;
    limits.check_table(rows.num_groups, num_bins)?;
    rows.check()?;
    let (g, m) = (rows.num_groups, rows.scores.len());
    match binning {
        Binning::Even => {
            let e = EvenEdges::new(num_bins);
            let nb = e.num_bins();
            let cells: Vec<u32> = map_rows(m, |i| (rows.group(i) * nb + e.bin(rows.scores[i].to_f64())) as u32);
            let mut st = accumulate(rows, &cells, g, nb);
            let one = e.boundaries();
            st.edges = (0..g).flat_map(|_| one.iter().copied()).collect();
            Ok(st)
        }
        Binning::Adaptive => {
            let nb = num_bins;
            let edges = adaptive_edges_weighted(rows, num_bins);
            let cells: Vec<u32> = map_rows(m, |i| {
                let gi = rows.group(i);
                (gi * nb + bin_by_edges(&edges[gi], rows.scores[i].to_f64())) as u32
            });
            let mut st = accumulate(rows, &cells, g, nb);
            st.edges = edges.iter().flat_map(|e| adaptive_boundaries(e, num_bins, 0.0)).collect();
            Ok(st)
        }
    }
}

/// Per-(group, bin) statistics against given upper edges: `upper` holds `B - 1` non-decreasing
/// edges per group (group-major, `num_groups * (B - 1)` values, none NaN), and a score goes to
/// the number of its group's edges `<=` it (`nb = B`). For callers that found the edges
/// elsewhere (`calibkit.dask` selects them over all chunks, then counts each chunk here).
/// Reported edges per group: `0, upper..., 1`.
pub fn grouped_bin_stats_at<T: Score>(
    rows: &GroupedRows<T>,
    upper: &[f64],
    num_bins: usize,
) -> Result<BinStats, KernelError> {
    let limits = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: true, threshold: 0.0 };
    limits.check(num_bins)?;
    limits.check_table(rows.num_groups, num_bins)?;
    rows.check()?;
    let (g, inner) = (rows.num_groups, num_bins - 1);
    if upper.len() != g.saturating_mul(inner) {
        return Err(KernelError::Shape(format!(
            "edges has {} values; pass num_bins - 1 = {inner} upper edges for each of the {g} groups",
            upper.len()
        )));
    }
    for (gi, e) in upper.chunks(inner.max(1)).enumerate().take(if inner == 0 { 0 } else { g }) {
        if let Some(j) = (0..e.len()).find(|&j| e[j].is_nan() || (j > 0 && e[j] < e[j - 1])) {
            return Err(KernelError::Parameter(format!(
                "edges[{gi}, {j}] is {}: each group's upper edges must be non-decreasing numbers",
                e[j]
            )));
        }
    }
    let edges_of = |gi: usize| &upper[gi * inner..(gi + 1) * inner];
    let cells: Vec<u32> = map_rows(rows.scores.len(), |i| {
        let gi = rows.group(i);
        (gi * num_bins + bin_by_edges(edges_of(gi), rows.scores[i].to_f64())) as u32
    });
    let mut st = accumulate(rows, &cells, g, num_bins);
    st.edges = (0..g)
        .flat_map(|gi| std::iter::once(0.0).chain(edges_of(gi).iter().copied()).chain(std::iter::once(1.0)))
        .collect();
    Ok(st)
}

/// `f(i)` for every row, in parallel for large inputs (order-preserving).
fn map_rows<F: Fn(usize) -> u32 + Sync + Send>(m: usize, f: F) -> Vec<u32> {
    if m >= PARALLEL_ROWS {
        (0..m).into_par_iter().with_min_len(SUM_CHUNK).map(f).collect()
    } else {
        (0..m).map(f).collect()
    }
}

/// Slices shorter than this are sorted by comparison in [`sort_keyed`] (a radix sort's
/// histograms cost more than they save).
const RADIX_MIN: usize = 2048;

/// Sorts one group's `(score key << 64) | id` entries ([`order_key`] in the high half), placed
/// with their ids increasing, into the total order (score, id): the order `sort_unstable` of
/// the `u128`s gives, by the stable radix sort of the score keys ([`radix_sort_by`]), so that
/// entries of equal keys keep their increasing ids. `scratch` is reused between calls. Groups
/// of [`PARALLEL_ROWS`] entries or more take rayon's parallel comparison sort, and small ones a
/// comparison sort: the same order, the total order being strict.
///
/// Both sorted orders of adaptive bins go through here: the weighted primitive's
/// ([`adaptive_edges_weighted`]) and the resamplers' ([`crate::kernels::weighted::adaptive::Sorted`]).
/// At (10k, 100) the comparison sort was a third of a weighted ACE call.
pub(crate) fn sort_keyed(keys: &mut [u128], scratch: &mut Vec<u128>) {
    if keys.len() >= PARALLEL_ROWS {
        // one group can hold every row (a pooled or top-label metric): rayon's sort spreads
        // it over the threads, where the radix passes would run on one
        keys.par_sort_unstable();
    } else {
        sort_keyed_here(keys, scratch);
    }
}

/// [`sort_keyed`] on the calling thread alone (for callers already parallel over groups).
pub(crate) fn sort_keyed_here(keys: &mut [u128], scratch: &mut Vec<u128>) {
    if keys.len() < RADIX_MIN {
        keys.sort_unstable();
    } else {
        debug_assert!(keys.windows(2).all(|w| (w[0] as u64) < (w[1] as u64)), "ids must be increasing");
        radix_sort_by(keys, scratch, |&k| (k >> 64) as u64);
    }
}

/// The weighted adaptive upper edges of every group (empty for a group of total weight 0).
///
/// Rows of positive weight are placed group after group (a counting pass) as `(score key,
/// row)` pairs packed in a `u128`, and each group's pairs are sorted: the total order
/// (score, row) makes the result independent of the sort algorithm and thread count.
pub fn adaptive_edges_weighted<T: Score>(rows: &GroupedRows<T>, num_bins: usize) -> Vec<Vec<f64>> {
    let (m, ng) = (rows.scores.len(), rows.num_groups);
    let positive = |i: usize| rows.weight(i) > 0.0;
    let mut start = vec![0usize; ng + 1];
    for i in (0..m).filter(|&i| positive(i)) {
        start[rows.group(i) + 1] += 1;
    }
    for gi in 0..ng {
        start[gi + 1] += start[gi];
    }
    let mut fill = start.clone();
    let mut pairs = vec![0u128; start[ng]];
    for i in (0..m).filter(|&i| positive(i)) {
        let gi = rows.group(i);
        pairs[fill[gi]] = ((order_key(rows.scores[i].to_f64()) as u128) << 64) | i as u128;
        fill[gi] += 1;
    }
    let mut slices: Vec<&mut [u128]> = Vec::with_capacity(ng);
    let mut rest = &mut pairs[..];
    for gi in 0..ng {
        let (head, tail) = rest.split_at_mut(start[gi + 1] - start[gi]);
        slices.push(head);
        rest = tail;
    }
    if m >= PARALLEL_ROWS {
        slices.par_iter_mut().with_max_len(1).for_each_init(Vec::new, |scratch, s| sort_keyed(s, scratch));
    } else {
        let mut scratch = Vec::new();
        slices.iter_mut().for_each(|s| sort_keyed(s, &mut scratch));
    }
    let edges = |s: &&mut [u128]| if s.is_empty() { Vec::new() } else { group_edges(rows, s.iter().map(|&p| p as u64 as usize), num_bins) };
    if m >= PARALLEL_ROWS {
        slices.par_iter().map(edges).collect()
    } else {
        slices.iter().map(edges).collect()
    }
}

/// The B-1 upper edges of one group given its rows in ascending score order (all of positive
/// weight): the module docs' weighted equal-mass rule ([`edge_ranks`]), as scores.
fn group_edges<T: Score>(rows: &GroupedRows<T>, sorted: impl Iterator<Item = usize>, b: usize) -> Vec<f64> {
    let order: Vec<usize> = sorted.collect();
    let w: Vec<f64> = order.iter().map(|&i| rows.weight(i)).collect();
    sorted_edge_ranks(&w, b).into_iter().map(|p| rows.scores[order[p]].to_f64()).collect()
}

/// [`edge_ranks`] of one group's weights in ascending score order, their total summed in that
/// order (the primitive's rule).
pub(crate) fn sorted_edge_ranks(w: &[f64], b: usize) -> Vec<usize> {
    sorted_edge_ranks_many(w, &[b]).pop().unwrap_or_default()
}

/// [`sorted_edge_ranks`] at each bin count of `bins` (for
/// [`crate::kernels::weighted::matrix_adaptive`], which sorts a group once for all of them).
pub(crate) fn sorted_edge_ranks_many(w: &[f64], bins: &[usize]) -> Vec<Vec<usize>> {
    let total = w.iter().fold(0.0, |c, &x| c + x);
    edge_ranks_many(w, total, bins)
}

/// The weighted equal-mass rule of the module docs, written once: given the weights `w` of one
/// group's rows in ascending score order and their `total` (summed in that order), the rank
/// (index in `w`) of the row whose score is upper edge `e_j`, for j = 1..B-1; empty when no
/// weight is positive. Rows of weight 0 are never an edge and do not move the cumulative
/// weight, so the ranks are those of the same rows with the zero-weight ones left out.
/// [`grouped_bin_stats`] and the resampling of adaptive bins
/// ([`crate::kernels::weighted::adaptive`]) both take their edges from here.
///
/// A group whose largest weight is below 1/2 is first lifted by the power of two that brings
/// it into [1/2, 1) ([`units::weight_scale`], the lift the sums take): the targets are whole
/// units of weight, so without it a group of total weight below B (weights normalised to sum
/// to 1, say) would round every target to 0 or 1 and put almost every score in one bin. A power
/// of two is exact: the lifted cumulative weights are the unlifted ones times it, and weights of
/// 1/2 or more (every whole weight) are not lifted.
pub(crate) fn edge_ranks(w: &[f64], total: f64, b: usize) -> Vec<usize> {
    edge_ranks_many(w, total, &[b]).pop().unwrap_or_default()
}

/// [`edge_ranks`] at each bin count of `bins`, from one walk over the cumulative weights: the
/// edge of a target `t` is the first row with `C_i > t` (or the last positive row when there
/// is none), which depends on `t` alone, so the targets of every bin count are visited in
/// ascending order at once.
pub(crate) fn edge_ranks_many(w: &[f64], total: f64, bins: &[usize]) -> Vec<Vec<usize>> {
    let lift = units::weight_scale(w.iter().fold(0.0f64, |m, &x| if x > m { x } else { m }));
    let mut edges: Vec<Vec<usize>> = bins.iter().map(|&b| Vec::with_capacity(b.saturating_sub(1))).collect();
    let Some(first) = w.iter().position(|&x| x > 0.0) else {
        return edges;
    };
    // Every (target, bin count) in ascending target order (a bin count's own targets ascend).
    let mut targets: Vec<(f64, usize)> = Vec::with_capacity(bins.iter().map(|b| b.saturating_sub(1)).sum());
    for (bi, &b) in bins.iter().enumerate() {
        let step = total * lift / b as f64;
        targets.extend((1..b).map(|j| ((j as f64 * step).round_ties_even(), bi)));
    }
    targets.sort_by(|a, b| a.0.total_cmp(&b.0));
    // `last`: the last positive row visited; the edge is the first row with C_i > t_j, or the
    // last positive row when there is none (rows are visited once over all targets).
    let (mut cum, mut last, mut p) = (0.0f64, first, 0usize);
    for (t, bi) in targets {
        while cum <= t && p < w.len() {
            let x = w[p];
            cum += x * lift; // adding a zero weight leaves the cumulative weight as it is
            if x > 0.0 {
                last = p;
            }
            p += 1;
        }
        edges[bi].push(last);
    }
    edges
}

/// The power-of-two scales of a call's rows ([`Scales`]), weights by their largest (and the
/// bound `rows * largest` on their total), scores and outcomes by their largest magnitude;
/// and whether every outcome is 0 or 1. One pass.
fn scales<T: Score>(rows: &GroupedRows<T>) -> (Scales, bool) {
    // `if a > m` (not `f64::max`): one instruction, the values being finite (checked)
    let most = |m: f64, x: f64| if x.abs() > m { x.abs() } else { m };
    let (mut ms, mut mo, mut mw, mut binary) = (0.0f64, 0.0f64, 0.0f64, true);
    for (s, &o) in rows.scores.iter().zip(rows.outcomes) {
        ms = most(ms, s.to_f64());
        mo = most(mo, o);
        binary &= o == 0.0 || o == 1.0;
    }
    let weight = match rows.weights {
        None => 1.0,
        Some(w) => {
            for &x in w {
                mw = most(mw, x);
            }
            Scales::of_weights(mw, w.len())
        }
    };
    (Scales { weight, score: Scales::of_values(ms), outcome: Scales::of_values(mo) }, binary)
}

/// The (count, score, outcome) units of the rows of one range, into `ncells` cells.
fn sum_range<T: Score>(rows: &GroupedRows<T>, sc: &Scales, binary: bool, cells: &[u32], r: std::ops::Range<usize>, ncells: usize) -> UnitSums {
    let mut acc = UnitSums::zeros(ncells);
    let one = units::SCALE as i128;
    match rows.weights {
        None if binary && sc.score == 1.0 => {
            // the unweighted kernels' accumulators: the same units, in i64 lanes
            let mut st = BinStats::zeros(1, ncells);
            let mut lanes = LaneTables::new(ncells);
            let drop = lanes.discard();
            for q in r.clone().step_by(LANE_BATCH) {
                let e = (q + LANE_BATCH).min(r.end);
                lanes.push_all((q..e).map(|i| {
                    let c = cells[i] as usize;
                    (if c < ncells { c } else { drop }, rows.scores[i].to_f64(), rows.outcomes[i] == 1.0)
                }));
                lanes.pushed(e - q, &mut st);
            }
            lanes.flush(&mut st);
            for c in 0..ncells {
                acc.count[c] = st.count[c] as i128 * one;
                acc.score[c] = st.units[c];
                acc.outcome[c] = st.sum_outcome[c] as i128 * one;
            }
        }
        None => {
            for i in r {
                let s = sc.score_units(rows.scores[i].to_f64()) as i128;
                acc.add(cells[i] as usize, one, s, sc.outcome_units(rows.outcomes[i]) as i128);
            }
        }
        Some(w) if binary => {
            // a row adds its count's units to the outcome or nothing; one table entry per cell
            let mut cell_sums = vec![[0i128; 3]; ncells];
            for i in r {
                let ws = w[i] * sc.weight;
                let c = count_units(ws);
                let s = weighted_units(ws, sc.score_units(rows.scores[i].to_f64()));
                let o = c & -((rows.outcomes[i] == 1.0) as i128);
                // cells are in range (computed by the caller); `get_mut` keeps them so anyway
                if let Some(a) = cell_sums.get_mut(cells[i] as usize) {
                    a[0] = a[0].wrapping_add(c);
                    a[1] = a[1].wrapping_add(s);
                    a[2] = a[2].wrapping_add(o);
                }
            }
            for (c, a) in cell_sums.iter().enumerate() {
                acc.add(c, a[0], a[1], a[2]);
            }
        }
        Some(w) => {
            for i in r {
                let ws = w[i] * sc.weight;
                let y = sc.outcome_units(rows.outcomes[i]);
                acc.add(cells[i] as usize, count_units(ws), weighted_units(ws, sc.score_units(rows.scores[i].to_f64())), weighted_units(ws, y));
            }
        }
    }
    acc
}

/// The per-cell statistics of the rows, given each row's cell: exact unit sums (module doc),
/// over fixed chunks in parallel when the table is small against the input (each chunk holds
/// its own table).
fn accumulate<T: Score>(rows: &GroupedRows<T>, cells: &[u32], g: usize, nb: usize) -> BinStats {
    let (m, ncells) = (rows.scores.len(), g * nb);
    // 0/1 outcomes (the usual case): a row adds its count's units or nothing
    let (sc, binary) = scales(rows);
    let acc = if m >= PARALLEL_ROWS && ncells <= SUM_CHUNK / 8 {
        let ranges: Vec<_> = (0..m).step_by(SUM_CHUNK).map(|s| s..(s + SUM_CHUNK).min(m)).collect();
        let mut total = UnitSums::zeros(ncells);
        let res: Result<(), KernelError> =
            chunks::map_fold(&ranges, |r| Ok(sum_range(rows, &sc, binary, cells, r, ncells)), |part| total.add_all(&part));
        debug_assert!(res.is_ok());
        total
    } else {
        sum_range(rows, &sc, binary, cells, 0..m, ncells)
    };
    let mut st = sc.table(g, nb);
    acc.write(&sc, &mut st);
    st
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::core::edges::adaptive_positions;

    /// Deterministic pseudo-random numbers (xorshift), no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// SPEC's binning of one unweighted group written out directly (sort, positions, count);
    /// score sums as the sum of each score's units ([`units::units`]), rounded once.
    fn direct(scores: &[f64], outcomes: &[f64], binning: Binning, b: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let nb = if binning == Binning::Even { b + 1 } else { b };
        let mut sorted = scores.to_vec();
        sorted.sort_by(|a, c| a.partial_cmp(c).unwrap());
        let edges: Vec<f64> = match binning {
            Binning::Even => (1..=b).map(|j| if j == b { 1.0 } else { j as f64 * (1.0 / b as f64) }).collect(),
            Binning::Adaptive => adaptive_positions(sorted.len(), b).into_iter().map(|p| sorted[p]).collect(),
        };
        let (mut c, mut s, mut o) = (vec![0.0; nb], vec![0i128; nb], vec![0.0; nb]);
        for (&x, &y) in scores.iter().zip(outcomes) {
            let k = edges.iter().filter(|&&e| e <= x).count().min(nb - 1);
            c[k] += 1.0;
            s[k] += units::units(x) as i128;
            o[k] += y;
        }
        (c, s.into_iter().map(units::value).collect(), o)
    }

    fn case(rng: &mut Rng, m: usize, g: usize, levels: u64) -> (Vec<i64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let groups = (0..m).map(|_| rng.below(g as u64) as i64).collect();
        let scores = (0..m).map(|_| rng.below(levels + 1) as f64 / levels as f64).collect();
        let outcomes = (0..m).map(|_| rng.below(2) as f64).collect();
        let weights = (0..m).map(|_| rng.below(4) as f64).collect();
        (groups, scores, outcomes, weights)
    }

    /// The radix sort gives the order of a comparison sort of the `u128`s, for every size
    /// class (comparison, radix, parallel), with ties, constant bytes and scores of any sign.
    #[test]
    fn sort_keyed_is_the_comparison_order() {
        let mut rng = Rng(5);
        let mut scratch = Vec::new();
        for (trial, &m) in [0usize, 1, 7, RADIX_MIN - 1, RADIX_MIN, 3000, 20_000, PARALLEL_ROWS + 5].iter().enumerate() {
            for levels in [2u64, 1000, 1 << 40] {
                let keys: Vec<u128> = (0..m)
                    .map(|i| {
                        let v = rng.below(levels) as f64 / levels as f64;
                        let s = match (trial + i) % 5 { 0 => -v, 1 => v * 1e-300, 2 => -0.0, _ => v };
                        ((order_key(s) as u128) << 64) | i as u128
                    })
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable();
                let mut got = keys.clone();
                sort_keyed(&mut got, &mut scratch);
                assert!(got == want, "m {m} levels {levels}");
            }
        }
    }

    /// The ranks of several bin counts from one walk are each bin count's own walk (the rule
    /// as first written, one target after another), with zero weights, ties and lifts.
    #[test]
    fn edge_ranks_of_many_bin_counts_are_each_bin_counts_own() {
        fn one_walk(w: &[f64], total: f64, b: usize) -> Vec<usize> {
            let lift = units::weight_scale(w.iter().fold(0.0f64, |m, &x| if x > m { x } else { m }));
            let step = total * lift / b as f64;
            let Some(first) = w.iter().position(|&x| x > 0.0) else { return Vec::new() };
            let (mut cum, mut last, mut p, mut out) = (0.0f64, first, 0usize, Vec::new());
            for j in 1..b {
                let t = (j as f64 * step).round_ties_even();
                while cum <= t && p < w.len() {
                    cum += w[p] * lift;
                    if w[p] > 0.0 {
                        last = p;
                    }
                    p += 1;
                }
                out.push(last);
            }
            out
        }
        let mut rng = Rng(23);
        for trial in 0..300 {
            let m = rng.below(300) as usize;
            let scale = [1.0, 0.01, 1e-9, 3.7][trial % 4];
            let w: Vec<f64> = (0..m).map(|_| if rng.below(3) == 0 { 0.0 } else { rng.below(9) as f64 * scale }).collect();
            let bins: Vec<usize> = (0..1 + rng.below(6)).map(|_| 1 + rng.below(60) as usize).collect();
            let total = w.iter().fold(0.0, |c, &x| c + x);
            let got = edge_ranks_many(&w, total, &bins);
            assert_eq!(got.len(), bins.len());
            for (g, &b) in got.iter().zip(&bins) {
                assert_eq!(*g, one_walk(&w, total, b), "m {m} bins {bins:?} b {b}");
            }
        }
    }

    /// A group whose largest weight is below 1/2 is lifted by a power of two before its ranks:
    /// any such scale of weights whose largest is in [1/2, 1) gives their ranks, and uniform
    /// weights summing to 1 give the unweighted ranks within two rows (a lifted weight is at
    /// least 1/2; without the lift, every target of total weight 1 rounds to 0 or 1: all but
    /// the last bin empty). Weights of 1/2 or more are never lifted.
    #[test]
    fn small_weights_are_lifted_for_the_ranks() {
        let mut rng = Rng(17);
        for _ in 0..50 {
            let m = 1 + rng.below(400) as usize;
            let b = 1 + rng.below(20) as usize;
            let mut w: Vec<f64> = (0..m).map(|_| rng.below(8) as f64 / 8.0).collect();
            w[rng.below(m as u64) as usize] = 0.75; // largest in [1/2, 1)
            let total = w.iter().fold(0.0, |c, &x| c + x);
            let want = edge_ranks(&w, total, b);
            for k in [1, 9, 60, 500] {
                let s = 2f64.powi(-k);
                let small: Vec<f64> = w.iter().map(|&x| x * s).collect();
                let t = small.iter().fold(0.0, |c, &x| c + x);
                assert_eq!(edge_ranks(&small, t, b), want, "m {m} b {b} k {k}");
            }
            let uniform = vec![1.0 / m as f64; m];
            let t = uniform.iter().fold(0.0, |c, &x| c + x);
            let ones = edge_ranks(&vec![1.0; m], m as f64, b);
            let got = edge_ranks(&uniform, t, b);
            for (g, o) in got.iter().zip(&ones) {
                assert!(g.abs_diff(*o) <= 2, "m {m} b {b}: {got:?} vs {ones:?}");
            }
        }
        // weights of 1/2 or more: the rule as written, no lift
        assert_eq!(edge_ranks(&[0.5, 0.5, 1.5], 2.5, 2), vec![2]);
    }


    #[test]
    fn unweighted_matches_direct_binning() {
        let mut rng = Rng(7);
        for trial in 0..200 {
            let (m, g, b) = (1 + rng.below(60) as usize, 1 + rng.below(4) as usize, 1 + rng.below(12) as usize);
            let levels = 1 + rng.below(20);
            let (groups, scores, outcomes, _) = case(&mut rng, m, g, levels);
            for binning in [Binning::Even, Binning::Adaptive] {
                let rows = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: None, num_groups: g };
                let st = grouped_bin_stats(&rows, binning, b).unwrap();
                for gi in 0..g {
                    let idx: Vec<usize> = (0..m).filter(|&i| groups[i] as usize == gi).collect();
                    let s: Vec<f64> = idx.iter().map(|&i| scores[i]).collect();
                    let o: Vec<f64> = idx.iter().map(|&i| outcomes[i]).collect();
                    let (c, ss, so) = direct(&s, &o, binning, b);
                    let r = gi * st.nb..(gi + 1) * st.nb;
                    assert_eq!(st.count[r.clone()], c[..], "trial {trial}");
                    assert_eq!(st.sum_score[r.clone()], ss[..], "trial {trial}");
                    assert_eq!(st.sum_outcome[r], so[..], "trial {trial}");
                }
            }
        }
    }

    #[test]
    fn integer_weights_equal_repeated_rows() {
        let mut rng = Rng(11);
        for trial in 0..300 {
            let (m, g, b) = (1 + rng.below(40) as usize, 1 + rng.below(3) as usize, 1 + rng.below(10) as usize);
            let levels = 1 + rng.below(15);
            let (groups, scores, outcomes, weights) = case(&mut rng, m, g, levels);
            let (mut rg, mut rs, mut ro) = (vec![], vec![], vec![]);
            for i in 0..m {
                for _ in 0..weights[i] as usize {
                    rg.push(groups[i]);
                    rs.push(scores[i]);
                    ro.push(outcomes[i]);
                }
            }
            for binning in [Binning::Even, Binning::Adaptive] {
                let w = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: Some(&weights), num_groups: g };
                let r = GroupedRows { groups: Some(&rg), scores: &rs, outcomes: &ro, weights: None, num_groups: g };
                let (a, e) = (grouped_bin_stats(&w, binning, b).unwrap(), grouped_bin_stats(&r, binning, b).unwrap());
                assert_eq!(a.count, e.count, "trial {trial} {binning:?}");
                assert_eq!(a.sum_score, e.sum_score, "trial {trial}");
                assert_eq!(a.sum_outcome, e.sum_outcome, "trial {trial}");
                assert_eq!(a.units, e.units, "trial {trial}");
                let same = a.edges.iter().zip(&e.edges).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
                assert!(same, "trial {trial}: {:?} vs {:?}", a.edges, e.edges);
            }
        }
    }

    #[test]
    fn f32_scores_widen_exactly() {
        let s32 = [0.1f32, 0.7, 0.3, 0.9, 0.5];
        let s64: Vec<f64> = s32.iter().map(|&x| x as f64).collect();
        let o = [1.0, 0.0, 1.0, 1.0, 0.0];
        for binning in [Binning::Even, Binning::Adaptive] {
            let a = grouped_bin_stats(&GroupedRows { groups: None, scores: &s32[..], outcomes: &o, weights: None, num_groups: 1 }, binning, 3).unwrap();
            let b = grouped_bin_stats(&GroupedRows { groups: None, scores: &s64[..], outcomes: &o, weights: None, num_groups: 1 }, binning, 3).unwrap();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let s = [0.2, 0.4];
        let o = [0.0, 1.0];
        let rows = |g: Option<&'static [i64]>, w: Option<&'static [f64]>, ng| GroupedRows { groups: g, scores: &s[..], outcomes: &o[..], weights: w, num_groups: ng };
        let even = Binning::Even;
        assert!(matches!(grouped_bin_stats(&rows(None, Some(&[1.0, -1.0]), 1), even, 2), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(None, Some(&[1.0, f64::NAN]), 1), even, 2), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(None, Some(&[1.0]), 1), even, 2), Err(KernelError::Shape(_))));
        assert!(matches!(grouped_bin_stats(&rows(Some(&[0, 2]), None, 2), even, 2), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(Some(&[0, -1]), None, 2), even, 2), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(None, None, 0), even, 2), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(None, None, 1), even, 0), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(None, None, 1), even, 1_000_001), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats(&rows(None, None, 100), even, 1_000_000), Err(KernelError::Parameter(_))));
        let nan = [f64::NAN, 0.5];
        let r = GroupedRows { groups: None, scores: &nan[..], outcomes: &o[..], weights: None, num_groups: 1 };
        assert!(matches!(grouped_bin_stats(&r, even, 2), Err(KernelError::Parameter(_))));
    }

    #[test]
    fn given_edges_bin_like_the_adaptive_rule() {
        let mut rng = Rng(5);
        for _ in 0..100 {
            let (m, g, b) = (1 + rng.below(50) as usize, 1 + rng.below(3) as usize, 1 + rng.below(8) as usize);
            let levels = 1 + rng.below(10);
            let (groups, scores, outcomes, weights) = case(&mut rng, m, g, levels);
            let rows = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: Some(&weights), num_groups: g };
            let a = grouped_bin_stats(&rows, Binning::Adaptive, b).unwrap();
            let upper: Vec<f64> = (0..g)
                .flat_map(|gi| a.edges[gi * (b + 1) + 1..gi * (b + 1) + b].iter().map(|&e| if e.is_nan() { 0.0 } else { e }))
                .collect();
            let c = grouped_bin_stats_at(&rows, &upper, b).unwrap();
            assert_eq!(a.count, c.count);
            assert_eq!(a.sum_score, c.sum_score);
            assert_eq!(a.sum_outcome, c.sum_outcome);
        }
        let s = [0.5];
        let r = GroupedRows { groups: None, scores: &s[..], outcomes: &s[..], weights: None, num_groups: 1 };
        assert!(matches!(grouped_bin_stats_at(&r, &[0.6, 0.2], 3), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats_at(&r, &[f64::NAN, 0.2], 3), Err(KernelError::Parameter(_))));
        assert!(matches!(grouped_bin_stats_at(&r, &[0.2], 3), Err(KernelError::Shape(_))));
        assert_eq!(grouped_bin_stats_at(&r, &[], 1).unwrap().count, vec![1.0]);
    }

    #[test]
    fn zero_weight_groups_have_nan_edges() {
        let s = [0.2, 0.4, 0.6];
        let o = [0.0, 1.0, 1.0];
        let w = [0.0, 0.0, 2.0];
        let r = GroupedRows { groups: Some(&[0, 0, 1]), scores: &s[..], outcomes: &o[..], weights: Some(&w[..]), num_groups: 2 };
        let st = grouped_bin_stats(&r, Binning::Adaptive, 3).unwrap();
        assert!(st.edges[1].is_nan() && st.edges[2].is_nan());
        assert_eq!(&st.edges[4..8], &[0.0, 0.6, 0.6, 1.0]);
        assert_eq!(st.count, vec![0.0, 0.0, 0.0, 0.0, 0.0, 2.0]);
    }

    #[test]
    fn fractional_weights_follow_the_documented_rule() {
        // W = 2, B = 2: t_1 = round(1.0) = 1; cumulative 0.5, 1.0, 2.0 -> first C_i > 1 is row 2.
        let s = [0.1, 0.2, 0.3];
        let o = [0.0; 3];
        let w = [0.5, 0.5, 1.0];
        let r = GroupedRows { groups: None, scores: &s[..], outcomes: &o[..], weights: Some(&w[..]), num_groups: 1 };
        let st = grouped_bin_stats(&r, Binning::Adaptive, 2).unwrap();
        assert_eq!(st.edges, vec![0.0, 0.3, 1.0]);
        assert_eq!(st.count, vec![1.0, 1.0]);
    }

    #[test]
    fn long_sums_stay_accurate_and_threads_do_not_matter() {
        let m = PARALLEL_ROWS + 12_345;
        let scores = vec![0.9f64; m];
        let outcomes = vec![1.0; m];
        let weights: Vec<f64> = (0..m).map(|i| (i % 3) as f64 * 0.1).collect();
        let rows = GroupedRows { groups: None, scores: &scores, outcomes: &outcomes, weights: Some(&weights), num_groups: 1 };
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        for binning in [Binning::Even, Binning::Adaptive] {
            let a = one.install(|| grouped_bin_stats(&rows, binning, 3).unwrap());
            let b = four.install(|| grouped_bin_stats(&rows, binning, 3).unwrap());
            assert_eq!(a, b);
            let exact_w: f64 = (m / 3) as f64 * 0.30000000000000004 + [0.0, 0.0, 0.1][m % 3];
            let total: f64 = a.count.iter().sum();
            assert!((total - exact_w).abs() <= 1e-12 * exact_w, "{total} vs {exact_w}");
            let ss: f64 = a.sum_score.iter().sum();
            assert!((ss - 0.9 * exact_w).abs() <= 1e-12 * exact_w);
        }
        let uw = GroupedRows { weights: None, ..rows };
        let st = grouped_bin_stats(&uw, Binning::Adaptive, 3).unwrap();
        let ss: f64 = st.sum_score.iter().sum();
        assert!((ss - 0.9 * m as f64).abs() <= 1e-12 * m as f64);
    }

    /// Unit weights are no weights, bit for bit; any order of the rows, whatever the weights,
    /// gives the same table; tables of parts add (as units) to the table of the whole.
    #[test]
    fn sums_do_not_depend_on_weights_of_one_or_row_order() {
        let mut rng = Rng(3);
        for trial in 0..100 {
            let (m, g, b) = (1 + rng.below(80) as usize, 1 + rng.below(3) as usize, 1 + rng.below(12) as usize);
            let (groups, scores, outcomes, _) = case(&mut rng, m, g, 1 << 30);
            let frac: Vec<f64> = (0..m).map(|_| 0.5 + rng.below(1000) as f64 / 997.0).collect();
            let ones = vec![1.0; m];
            let perm: Vec<usize> = {
                let mut p: Vec<usize> = (0..m).collect();
                for i in (1..m).rev() {
                    p.swap(i, rng.below(i as u64 + 1) as usize);
                }
                p
            };
            let pick = |v: &[f64]| perm.iter().map(|&i| v[i]).collect::<Vec<f64>>();
            let pg: Vec<i64> = perm.iter().map(|&i| groups[i]).collect();
            let (ps, po, pw) = (pick(&scores), pick(&outcomes), pick(&frac));
            for binning in [Binning::Even, Binning::Adaptive] {
                let none = GroupedRows { groups: Some(&groups), scores: &scores, outcomes: &outcomes, weights: None, num_groups: g };
                let a = grouped_bin_stats(&none, binning, b).unwrap();
                let u = grouped_bin_stats(&GroupedRows { weights: Some(&ones), ..none }, binning, b).unwrap();
                assert_eq!((&a.count, &a.sum_score, &a.sum_outcome, &a.units), (&u.count, &u.sum_score, &u.sum_outcome, &u.units), "trial {trial}");
                assert_eq!(a.units.len(), a.count.len());
                let f = grouped_bin_stats(&GroupedRows { weights: Some(&frac), ..none }, binning, b).unwrap();
                let p = GroupedRows { groups: Some(&pg), scores: &ps, outcomes: &po, weights: Some(&pw), num_groups: g };
                let fp = grouped_bin_stats(&p, binning, b).unwrap();
                assert_eq!((&f.count, &f.sum_score, &f.sum_outcome, &f.units), (&fp.count, &fp.sum_score, &fp.sum_outcome, &fp.units), "trial {trial}");
            }
            // even bins of two halves, added as units: the score sums of the whole
            let h = m / 2;
            for w in [None, Some(&frac[..])] {
                let part = |r: std::ops::Range<usize>| {
                    let rows = GroupedRows { groups: Some(&groups[r.clone()]), scores: &scores[r.clone()], outcomes: &outcomes[r.clone()], weights: w.map(|w| &w[r]), num_groups: g };
                    grouped_bin_stats(&rows, Binning::Even, b).unwrap()
                };
                let mut sum = part(0..h);
                sum.add(&part(h..m));
                sum.finish();
                let whole = part(0..m);
                assert_eq!(sum.sum_score, whole.sum_score, "trial {trial}");
                assert_eq!(sum.units, whole.units, "trial {trial}");
                if w.is_none() {
                    assert_eq!(sum, whole, "trial {trial}");
                }
            }
        }
    }

    /// Small weights, large totals and values of magnitude 2 or more are scaled by powers of two: their
    /// tables carry no units and keep their accuracy; no input panics.
    #[test]
    fn scaled_tables_have_no_units_and_stay_accurate() {
        let s = [0.2, 0.45, 0.7, 0.9, 1.0];
        let o = [0.0, 1.0, 1.0, 0.0, 1.0];
        let float = |w: &[f64], s: &[f64], o: &[f64]| -> (f64, f64, f64) {
            (w.iter().sum(), w.iter().zip(s).map(|(a, b)| a * b).sum(), w.iter().zip(o).map(|(a, b)| a * b).sum())
        };
        let near = |a: f64, b: f64| (a - b).abs() <= 1e-14 * b.abs();
        let big = [3e5, -7.25, 1e10, 0.5, 2.0];
        let half = [0.25, 0.5, 2.0, 1.5, -3.0];
        for (w, sc, oc) in [
            (vec![1e-9, 2e-9, 3e-9, 4e-9, 5e-9], &s, &o),
            (vec![1e300, 2e300, 3e300, 4e300, 5e300], &s, &o),
            (vec![0.3; 5], &big, &half),
            (vec![1.0, 2.0, 3.0, 0.0, 1.0], &big, &o),
            (vec![5e-324, 1e-320, 0.0, 1e-310, 5e-324], &s, &o),
        ] {
            let rows = GroupedRows { groups: None, scores: &sc[..], outcomes: &oc[..], weights: Some(&w), num_groups: 1 };
            let st = grouped_bin_stats(&rows, Binning::Even, 1).unwrap();
            assert!(st.units.is_empty(), "{w:?}");
            let (c, ss, so) = float(&w, sc, oc);
            let got = (st.count.iter().sum::<f64>(), st.sum_score.iter().sum::<f64>(), st.sum_outcome.iter().sum::<f64>());
            if w[0] > 1e-300 {
                assert!(near(got.0, c) && near(got.1, ss) && near(got.2, so), "{w:?}: {got:?} vs {:?}", (c, ss, so));
            } else {
                assert!(got.0.is_finite() && got.1.is_finite() && got.2.is_finite());
            }
        }
    }
}
