//! The cell of each score in a per-(group, bin) table, `group * nb + bin`, by the metric
//! kernels' own bin rules: for callers that need every entry's cell rather than the table's
//! sums (the trust layer's resampling on fixed per-entry bins, the histogram-binning
//! recalibrators' maps), so that no Python module restates a bin rule.
//!
//! - Even bins of B ([`TableBins::Even`], `nb = B + 1`): [`EvenEdges::bin`], the function the
//!   even kernels bin with (scores `>= 1` in the extra bin B).
//! - Given edges ([`TableBins::Edges`], `nb = B`): each group's `B + 1` boundaries as a table
//!   reports them (`lower, e_1, ..., e_{B-1}, upper`); the bin is the number of inner edges
//!   `e_j <= score` ([`bin_by_edges`], the adaptive kernels' rule: left-closed bins, a score on
//!   an edge in the upper bin). The outer boundaries are not read.
//!
//! A score is kept when `score > threshold` (compared in float64, as the kernels compare);
//! other scores get [`DROPPED`]. With no threshold every score is kept.

use crate::kernels::core::edges::{bin_by_edges, EvenEdges};
use crate::kernels::core::spec::{MAX_BINS, MAX_TABLE_CELLS};
use crate::kernels::{KernelError, Score};

/// Cell of a score at or below the threshold (the resamplers' [`crate::kernels::weighted::resample::DROPPED`]).
pub const DROPPED: u32 = crate::kernels::weighted::resample::DROPPED;

/// Which group each score is in.
#[derive(Debug, Clone, Copy)]
pub enum Groups<'a> {
    /// Every score in group 0.
    One,
    /// `ids[i]` is the group of `scores[i]`.
    Ids(&'a [i64]),
    /// The scores are a row-major (rows, `num_groups`) matrix and each column is a group (the
    /// class-conditional all-probabilities grouping), with no per-entry id array.
    Columns,
}

/// How the bins of the table are defined.
#[derive(Debug, Clone, Copy)]
pub enum TableBins<'a> {
    /// The even bins of `B`: `nb = B + 1`.
    Even(usize),
    /// `B` bins at the given boundaries: `num_groups * (B + 1)` values, group-major.
    Edges { num_bins: usize, edges: &'a [f64] },
}

/// The cell of every score (`scores[i]` in the group [`Groups`] gives it), or [`DROPPED`] when
/// `scores[i] <= threshold`.
///
/// Errors: no group, a group id outside `[0, num_groups)`, a bin count outside
/// `1..=MAX_BINS`, a table beyond `MAX_TABLE_CELLS`, edges of the wrong length or a group's
/// inner edges decreasing or partly NaN, a NaN threshold, and a kept score that is NaN or
/// whose group has no edges (all NaN: a table group with no scores).
pub fn table_cells<T: Score>(
    scores: &[T],
    groups: Groups<'_>,
    num_groups: usize,
    bins: &TableBins<'_>,
    threshold: Option<f64>,
) -> Result<Vec<u32>, KernelError> {
    if num_groups == 0 {
        return Err(KernelError::Parameter("num_groups must be at least 1".into()));
    }
    let num_bins = match *bins {
        TableBins::Even(b) | TableBins::Edges { num_bins: b, .. } => b,
    };
    if !(1..=MAX_BINS).contains(&num_bins) {
        return Err(KernelError::Parameter(format!(
            "num_bins must be a positive integer no larger than {MAX_BINS}, got {num_bins}"
        )));
    }
    let nb = match bins {
        TableBins::Even(_) => num_bins + 1,
        TableBins::Edges { .. } => num_bins,
    };
    if num_groups.checked_mul(nb).is_none_or(|c| c > MAX_TABLE_CELLS) {
        return Err(KernelError::Parameter(format!(
            "a table of {num_groups} groups x {nb} bins is beyond the limit of {MAX_TABLE_CELLS} cells; use fewer bins"
        )));
    }
    if let Some(t) = threshold {
        if t.is_nan() {
            return Err(KernelError::Parameter("threshold is NaN; pass a number".into()));
        }
    }
    if let Groups::Columns = groups {
        if !scores.len().is_multiple_of(num_groups) {
            return Err(KernelError::Shape(format!(
                "{} scores do not form rows of {num_groups} columns (one group per column)",
                scores.len()
            )));
        }
    }
    if let Groups::Ids(g) = groups {
        if g.len() != scores.len() {
            return Err(KernelError::Shape(format!(
                "groups has {} entries but scores has {}; pass one group per score",
                g.len(),
                scores.len()
            )));
        }
        if let Some(i) = g.iter().position(|&x| x < 0 || x as u64 >= num_groups as u64) {
            return Err(KernelError::Parameter(format!(
                "groups[{i}] is {}, outside [0, {num_groups}): group ids must index the table's groups",
                g[i]
            )));
        }
    }
    // Per group: its inner edges, or None for a group with no edges (all NaN).
    let inner: Vec<Option<&[f64]>> = match *bins {
        TableBins::Even(_) => Vec::new(),
        TableBins::Edges { edges, .. } => {
            if edges.len() != num_groups * (num_bins + 1) {
                return Err(KernelError::Shape(format!(
                    "edges has {} values; pass num_bins + 1 = {} boundaries for each of the {num_groups} groups",
                    edges.len(),
                    num_bins + 1
                )));
            }
            let mut v = Vec::with_capacity(num_groups);
            for g in 0..num_groups {
                let e = &edges[g * (num_bins + 1) + 1..g * (num_bins + 1) + num_bins];
                if !e.is_empty() && e.iter().all(|x| x.is_nan()) {
                    v.push(None);
                    continue;
                }
                if let Some(j) = (0..e.len()).find(|&j| e[j].is_nan() || (j > 0 && e[j] < e[j - 1])) {
                    return Err(KernelError::Parameter(format!(
                        "edges[{g}, {}] is {}: each group's inner edges must be non-decreasing numbers",
                        j + 1,
                        e[j]
                    )));
                }
                v.push(Some(e));
            }
            v
        }
    };
    let even = EvenEdges::new(num_bins);
    let mut out = Vec::with_capacity(scores.len());
    for (i, s) in scores.iter().enumerate() {
        let s = s.to_f64();
        // kept only when `s > t` (a NaN score is not kept)
        if threshold.is_some_and(|t| s <= t || s.is_nan()) {
            out.push(DROPPED);
            continue;
        }
        if s.is_nan() {
            return Err(KernelError::Parameter(format!("scores[{i}] is NaN: it has no bin")));
        }
        // group ids were checked above; `get` keeps an id changed meanwhile in bounds
        let g = match groups {
            Groups::One => 0,
            Groups::Ids(g) => g.get(i).map_or(0, |&x| (x.max(0) as usize).min(num_groups - 1)),
            Groups::Columns => i % num_groups,
        };
        let bin = match *bins {
            TableBins::Even(_) => even.bin(s),
            TableBins::Edges { .. } => match inner[g] {
                Some(e) => bin_by_edges(e, s),
                None => {
                    return Err(KernelError::Parameter(format!(
                        "scores[{i}] is in group {g}, which has no edges (its table has no scores)"
                    )))
                }
            },
        };
        out.push((g * nb + bin) as u32);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_cells_are_the_even_kernels_bins() {
        let b = 10;
        let e = EvenEdges::new(b);
        // every edge, its neighbours, 0, 1 and beyond
        let mut s: Vec<f64> = e.boundaries();
        s.extend(e.boundaries().iter().flat_map(|&x| [x.next_down(), x.next_up()]));
        s.extend([0.3, 0.7, 1.0 + 1e-9]);
        let g: Vec<i64> = (0..s.len()).map(|i| (i % 3) as i64).collect();
        let c = table_cells(&s, Groups::Ids(&g), 3, &TableBins::Even(b), None).unwrap();
        for i in 0..s.len() {
            assert_eq!(c[i] as usize, g[i] as usize * (b + 1) + e.bin(s[i]), "{}", s[i]);
        }
        let t = table_cells(&s, Groups::One, 1, &TableBins::Even(b), Some(0.3)).unwrap();
        for i in 0..s.len() {
            assert_eq!(t[i] == DROPPED, s[i] <= 0.3, "{}", s[i]);
        }
    }

    #[test]
    fn edge_cells_are_left_closed() {
        let edges = [0.1, 0.2, 0.5, 0.5, 1.0, 0.0, f64::NAN, f64::NAN, f64::NAN, 1.0];
        let s = [0.2, 0.19, 0.5, 0.7, 1.0, 0.0];
        let c = table_cells(&s, Groups::One, 2, &TableBins::Edges { num_bins: 4, edges: &edges }, None).unwrap();
        assert_eq!(c, vec![1, 0, 3, 3, 3, 0]);
        let c = table_cells(&s, Groups::One, 2, &TableBins::Edges { num_bins: 4, edges: &edges }, Some(0.19)).unwrap();
        assert_eq!(c, vec![1, DROPPED, 3, 3, 3, DROPPED]);
        // group 1 has no edges: its scores have no cell
        assert!(table_cells(&s, Groups::Ids(&[0, 0, 0, 0, 0, 1]), 2, &TableBins::Edges { num_bins: 4, edges: &edges }, None).is_err());
    }

    #[test]
    fn bad_arguments_are_errors() {
        let s = [0.5];
        let even = TableBins::Even(3);
        assert!(table_cells(&s, Groups::One, 0, &even, None).is_err());
        assert!(table_cells(&s, Groups::Ids(&[1]), 1, &even, None).is_err());
        assert!(table_cells(&s, Groups::Ids(&[-1]), 1, &even, None).is_err());
        assert!(table_cells(&s, Groups::Ids(&[]), 1, &even, None).is_err());
        assert!(table_cells(&s, Groups::One, 1, &TableBins::Even(0), None).is_err());
        assert!(table_cells(&s, Groups::One, 1, &TableBins::Even(MAX_BINS + 1), None).is_err());
        assert!(table_cells(&s, Groups::One, usize::MAX, &even, None).is_err());
        assert!(table_cells(&s, Groups::One, 1, &even, Some(f64::NAN)).is_err());
        assert!(table_cells(&[f64::NAN], Groups::One, 1, &even, None).is_err());
        assert_eq!(table_cells(&[f64::NAN], Groups::One, 1, &even, Some(0.0)).unwrap(), vec![DROPPED]);
        let bad = [0.0, 0.6, 0.2, 1.0];
        assert!(table_cells(&s, Groups::One, 1, &TableBins::Edges { num_bins: 3, edges: &bad }, None).is_err());
        let part_nan = [0.0, 0.6, f64::NAN, 1.0];
        assert!(table_cells(&s, Groups::One, 1, &TableBins::Edges { num_bins: 3, edges: &part_nan }, None).is_err());
        assert!(table_cells(&s, Groups::One, 1, &TableBins::Edges { num_bins: 3, edges: &bad[..3] }, None).is_err());
        assert!(table_cells(&[0.1, 0.2, 0.3], Groups::Columns, 2, &even, None).is_err());
    }

    #[test]
    fn columns_are_ids_by_column() {
        let s: Vec<f64> = (0..24).map(|i| ((i * 7) % 11) as f64 / 10.0).collect();
        let ids: Vec<i64> = (0..24).map(|i| (i % 4) as i64).collect();
        for bins in [TableBins::Even(5), TableBins::Edges { num_bins: 2, edges: &[0.0, 0.3, 1.0, 0.0, 0.5, 1.0, 0.0, 0.1, 1.0, 0.0, 0.9, 1.0] }] {
            for thr in [None, Some(0.25)] {
                let by_col = table_cells(&s, Groups::Columns, 4, &bins, thr).unwrap();
                assert_eq!(by_col, table_cells(&s, Groups::Ids(&ids), 4, &bins, thr).unwrap());
            }
        }
    }
}
