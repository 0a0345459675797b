//! Max-prob (top-label) metrics: one pass over the rows finds each row's prediction (argmax,
//! lowest index on ties) and confidence, validating the row it has just read (rows of up to 16
//! classes with [`toplabel_scan`](crate::kernels::gce::toplabel_scan)); the binning then works on N (score, outcome) pairs. This is
//! the shared summary of `evaluate` and the path of adaptive binning; a single even-binned
//! metric bins block by block instead ([`crate::kernels::gce::toplabel_even`]).

use rayon::prelude::*;

use crate::kernels::core::chunks::row_chunks;
use crate::kernels::core::edges::{adaptive_boundaries, adaptive_edges, bin_by_edges, EvenEdges};
use crate::kernels::core::stats::LaneTables;
use crate::kernels::gce::toplabel_even;
use crate::kernels::gce::toplabel_scan::scan_rows;
use crate::kernels::core::validate::{failed_row_error, labels as check_labels, Checks};
use crate::kernels::{BinStats, Binning, Grouping, Inputs, KernelError, Score};

/// Rows scanned into the small per-block buffers of the fused passes.
const SCAN_BLOCK: usize = 256;

/// Per-row prediction, its confidence, and whether it is correct.
pub struct TopLabel {
    pub pred: Vec<u32>,
    pub conf: Vec<f64>,
    pub correct: Vec<bool>,
}

impl TopLabel {
    /// Row i's group: its predicted class when `class_conditional`, else the one group 0.
    #[inline(always)]
    pub fn group(&self, class_conditional: bool, i: usize) -> usize {
        if class_conditional { self.pred[i] as usize } else { 0 }
    }
}

/// The validated top-label summary of every row.
pub fn summarise<T: Score>(x: &Inputs<T>, check: &Checks) -> Result<TopLabel, KernelError> {
    if check.labels {
        check_labels(x)?;
    }
    let n = x.n;
    let mut pred = vec![0u32; n];
    let mut conf = vec![0.0f64; n];
    let mut correct = vec![false; n];
    let chunks = row_chunks(n, x.k);
    let rows = chunks[0].len();
    type Rows<'a> = (usize, ((&'a mut [u32], &'a mut [f64]), &'a mut [bool]));
    let work = |(ci, ((p, c), o)): Rows<'_>| -> bool {
        let start = ci * rows;
        let ok = scan_rows(x, start..start + p.len(), p, c, check);
        for (j, (oj, pj)) in o.iter_mut().zip(p.iter()).enumerate() {
            *oj = x.labels[start + j] == *pj as i64;
        }
        ok
    };
    let ok = if chunks.len() == 1 {
        work((0, ((&mut pred[..], &mut conf[..]), &mut correct[..])))
    } else {
        pred.par_chunks_mut(rows)
            .zip(conf.par_chunks_mut(rows))
            .zip(correct.par_chunks_mut(rows))
            .enumerate()
            .map(work)
            .reduce(|| true, |a, b| a & b)
    };
    if !ok {
        // InputChanged if no row fails any more (another thread wrote to the rows).
        return Err(failed_row_error(x, 0..n, check));
    }
    Ok(TopLabel { pred, conf, correct })
}

/// Statistics of the top-label grouping for `b` bins.
pub fn stats(top: &TopLabel, k: usize, g: &Grouping, b: usize) -> BinStats {
    let groups = g.groups(k);
    let group_of = |i: usize| top.group(g.class_conditional, i);
    match g.binning {
        Binning::Even if toplabel_even::fused_even_fits(g, k, &[b]) => {
            // The order of `toplabel_even::even_stats` (what `gce` runs): the same row chunks,
            // blocks, copies and folds, so the two give bitwise the same table.
            let e = EvenEdges::new(b);
            let mut total: Option<BinStats> = None;
            for rows in toplabel_even::chunks(top.conf.len(), k) {
                let mut st = BinStats::zeros(groups, e.num_bins());
                let mut acc = LaneTables::new(st.count.len());
                let drop = acc.discard();
                for i0 in rows.clone().step_by(toplabel_even::BLOCK) {
                    let block = i0..(i0 + toplabel_even::BLOCK).min(rows.end);
                    let len = block.len();
                    acc.push_all(block.map(|i| {
                        let s = top.conf[i];
                        let cell = if s > g.threshold { group_of(i) * st.nb + e.bin(s) } else { drop };
                        (cell, s, top.correct[i])
                    }));
                    acc.pushed(len, &mut st);
                }
                acc.flush(&mut st);
                match &mut total {
                    None => total = Some(st),
                    Some(t) => t.add(&st),
                }
            }
            let mut st = total.unwrap_or_else(|| BinStats::zeros(groups, e.num_bins()));
            st.finish();
            st.edges = e.boundaries().repeat(groups);
            st
        }
        Binning::Even => {
            let e = EvenEdges::new(b);
            let mut st = BinStats::zeros(groups, e.num_bins());
            let mut acc = LaneTables::new(st.count.len());
            for (i0, conf) in top.conf.chunks(SCAN_BLOCK).enumerate() {
                let i0 = i0 * SCAN_BLOCK;
                let drop = acc.discard();
                acc.push_all(conf.iter().enumerate().map(|(j, &s)| {
                    let cell = if s > g.threshold { group_of(i0 + j) * st.nb + e.bin(s) } else { drop };
                    (cell, s, top.correct[i0 + j])
                }));
                acc.pushed(conf.len(), &mut st);
            }
            acc.flush(&mut st);
            st.finish();
            st.edges = e.boundaries().repeat(groups);
            st
        }
        Binning::Adaptive => adaptive_stats(top, k, g, &[b]).pop().expect("one table per bin count"),
    }
}

/// Statistics of the adaptive top-label grouping `g` for each bin count of `bins`: each group's
/// members gathered once and, for several bin counts, sorted once ([`adaptive_group_bins`]).
/// Each table is bitwise the table of [`stats`] for its bin count alone.
pub fn adaptive_stats(top: &TopLabel, k: usize, g: &Grouping, bins: &[usize]) -> Vec<BinStats> {
    let mut members: Vec<Vec<(f64, bool)>> = vec![Vec::new(); g.groups(k)];
    for i in 0..top.conf.len() {
        let s = top.conf[i];
        if s > g.threshold {
            members[top.group(g.class_conditional, i)].push((s, top.correct[i]));
        }
    }
    adaptive_tables(members, bins, g.threshold)
}

/// The adaptive tables, one per bin count of `bins`, of groups of (score, outcome) pairs
/// `members` (kept above `threshold`), each group sorted once ([`adaptive_group_bins`]): the
/// matrix path's and the pairs path's.
pub fn adaptive_tables(members: Vec<Vec<(f64, bool)>>, bins: &[usize], threshold: f64) -> Vec<BinStats> {
    let per_group: Vec<Vec<(Vec<f64>, BinStats)>> =
        members.into_par_iter().map(|m| adaptive_group_bins(m, bins, threshold)).collect();
    bins.iter()
        .enumerate()
        .map(|(j, &b)| BinStats::from_groups(per_group.iter().map(|tables| (&tables[j].0[..], &tables[j].1)), b))
        .collect()
}

/// Groups at least this long are sorted on the pool.
const PAR_SORT_MIN: usize = 1 << 14;

/// Sorts one group's (score, outcome) pairs and bins them with the adaptive rule (by selection
/// when that is cheaper: [`adaptive_group_select`]).
pub fn adaptive_group(m: Vec<(f64, bool)>, b: usize, threshold: f64) -> (Vec<f64>, BinStats) {
    let positive = m.iter().all(|p| p.0.is_sign_positive() && !p.0.is_nan());
    if positive && m.len() >= SELECT_MIN && b <= SELECT_MAX_BINS {
        return adaptive_group_select(&m, b, threshold);
    }
    let m = sort_group(m, positive);
    let sorted: Vec<f64> = m.iter().map(|p| p.0).collect();
    bin_sorted(&m, &sorted, b, threshold)
}

/// [`adaptive_group`] for each bin count of `bins`: with several, the group is sorted once and
/// each table binned from the sorted pairs (a selection per bin count would read the group once
/// per bin count, and its binning compares every score with every edge). Each table is bitwise
/// [`adaptive_group`]'s: the edges are the same order statistics, and a bin's sums are exact
/// (units), whatever the order its scores are added in.
pub fn adaptive_group_bins(m: Vec<(f64, bool)>, bins: &[usize], threshold: f64) -> Vec<(Vec<f64>, BinStats)> {
    if let [b] = bins {
        return vec![adaptive_group(m, *b, threshold)];
    }
    let positive = m.iter().all(|p| p.0.is_sign_positive() && !p.0.is_nan());
    let m = sort_group(m, positive);
    let sorted: Vec<f64> = m.iter().map(|p| p.0).collect();
    bins.iter().map(|&b| bin_sorted(&m, &sorted, b, threshold)).collect()
}

/// A group's pairs sorted by score (`positive`: every score non-negative and not NaN).
fn sort_group(mut m: Vec<(f64, bool)>, positive: bool) -> Vec<(f64, bool)> {
    // Equal scores fall in one bin whatever their order, and their outcome sums are exact, so
    // the table does not depend on how ties are ordered: a parallel sort is deterministic.
    if positive {
        // Non-negative scores sort as their bit patterns (below 2^63): sort the integer keys
        // `bits << 1 | outcome`, much cheaper to compare than (f64, bool) pairs.
        let mut keys: Vec<u64> = m.iter().map(|p| (p.0.to_bits() << 1) | p.1 as u64).collect();
        if keys.len() >= PAR_SORT_MIN {
            keys.par_sort_unstable();
        } else {
            keys.sort_unstable();
        }
        for (p, k) in m.iter_mut().zip(&keys) {
            *p = (f64::from_bits(k >> 1), k & 1 == 1);
        }
    } else if m.len() >= PAR_SORT_MIN {
        m.par_sort_unstable_by(|a, c| a.0.total_cmp(&c.0));
    } else {
        m.sort_unstable_by(|a, c| a.0.total_cmp(&c.0));
    }
    m
}

/// The adaptive table of `b` bins of a group's pairs `m`, sorted by score (`sorted`: their
/// scores).
fn bin_sorted(m: &[(f64, bool)], sorted: &[f64], b: usize, threshold: f64) -> (Vec<f64>, BinStats) {
    let edges = adaptive_edges(sorted, b);
    let mut st = BinStats::zeros(1, b);
    // Sorted scores have non-decreasing bins: advance the bin as we sweep.
    let mut bin = 0usize;
    for &(s, o) in m {
        while bin < edges.len() && edges[bin] <= s {
            bin += 1;
        }
        debug_assert_eq!(bin, bin_by_edges(&edges, s));
        st.push(0, bin, s, o as u8 as f64);
    }
    st.finish();
    (adaptive_boundaries(&edges, b, threshold), st)
}

/// Groups at least this long, of non-negative scores, find their edges by selection.
const SELECT_MIN: usize = 1 << 13;
/// ... when they have at most this many bins.
const SELECT_MAX_BINS: usize = 64;

/// [`adaptive_group`] without a sort: the B-1 order statistics that are the edges are selected
/// one after another (each selection within the part above the previous one), on the integer
/// keys `bits << 1 | outcome` (non-negative scores order as their bit patterns); then each
/// pair is binned by counting the edges at or below it (the adaptive rule) and added in the
/// selection's order, which depends only on the input, so the table is deterministic.
fn adaptive_group_select(m: &[(f64, bool)], b: usize, threshold: f64) -> (Vec<f64>, BinStats) {
    let mut keys: Vec<u64> = m.iter().map(|p| (p.0.to_bits() << 1) | p.1 as u64).collect();
    let mut edges = Vec::with_capacity(b.saturating_sub(1));
    let mut lo = 0usize;
    for p in crate::kernels::core::edges::adaptive_positions(keys.len(), b) {
        if p >= lo {
            keys[lo..].select_nth_unstable(p - lo);
            lo = p + 1;
        }
        edges.push(f64::from_bits(keys[p] >> 1));
    }
    let mut st = BinStats::zeros(1, b);
    for &k in &keys {
        let s = f64::from_bits(k >> 1);
        let bin = edges.iter().map(|&e| (e <= s) as usize).sum::<usize>();
        debug_assert_eq!(bin, bin_by_edges(&edges, s));
        st.push(0, bin, s, (k & 1) as f64);
    }
    st.finish();
    (adaptive_boundaries(&edges, b, threshold), st)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Several bin counts from one sort give bitwise the tables of one call per bin count (the
    /// selection path included: groups of at least SELECT_MIN scores and at most
    /// SELECT_MAX_BINS bins), with ties, groups of one score and of none, and a group holding
    /// -0.0 (which takes the comparison sort).
    #[test]
    fn several_bin_counts_are_the_single_tables() {
        let mut rnd = crate::kernels::tests::xorshift(0x51ed_2705_a3c9_e1b7u64);
        for (n, levels, neg_zero) in [(0usize, 0usize, false), (1, 0, false), (300, 0, false), (SELECT_MIN + 7, 0, false), (20_000, 9, false), (5_000, 0, true)] {
            let mut m: Vec<(f64, bool)> = (0..n)
                .map(|_| {
                    let v = rnd();
                    let v = if levels > 0 { (v * levels as f64).floor() / levels as f64 } else { v };
                    (v, rnd() < v)
                })
                .collect();
            if neg_zero {
                m[0].0 = -0.0;
            }
            let bins = [1usize, 2, 15, 30, 64, 100];
            let many = adaptive_group_bins(m.clone(), &bins, 0.01);
            for (&b, got) in bins.iter().zip(&many) {
                let one = adaptive_group(m.clone(), b, 0.01);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got.0), bits(&one.0), "n={n} b={b}: boundaries (empty groups: NaN)");
                assert_eq!(got.1, one.1, "n={n} b={b}: table");
            }
        }
    }

    /// The selection path against the definition: sort, take the order statistics as edges,
    /// bin by the adaptive rule; with many ties, edges falling on ties, and 1 to 64 bins.
    #[test]
    fn adaptive_selection_is_the_sorted_definition() {
        let mut rnd = crate::kernels::tests::xorshift(0x9e3779b97f4a7c15u64);
        for (n, levels) in [(SELECT_MIN, 0usize), (20_000, 7), (50_001, 1000)] {
            let m: Vec<(f64, bool)> = (0..n)
                .map(|_| {
                    let v = rnd();
                    let v = if levels > 0 { (v * levels as f64).floor() / levels as f64 + 1e-3 } else { v };
                    (v, rnd() < v)
                })
                .collect();
            for b in [1usize, 2, 15, 64] {
                let (bounds, st) = adaptive_group(m.clone(), b, 0.0);
                let mut sorted = m.clone();
                sorted.sort_by(|a, c| a.0.total_cmp(&c.0));
                let vals: Vec<f64> = sorted.iter().map(|p| p.0).collect();
                let edges = adaptive_edges(&vals, b);
                assert_eq!(bounds, adaptive_boundaries(&edges, b, 0.0), "n={n} b={b}");
                let mut want = BinStats::zeros(1, b);
                for &(v, o) in &sorted {
                    want.push(0, bin_by_edges(&edges, v), v, o as u8 as f64);
                }
                want.finish();
                assert_eq!(st.count, want.count, "n={n} b={b}");
                assert_eq!(st.sum_outcome, want.sum_outcome, "n={n} b={b}");
                assert_eq!(st.units, want.units, "n={n} b={b}");
                assert_eq!(st.sum_score, want.sum_score, "n={n} b={b}");
            }
        }
    }
}
