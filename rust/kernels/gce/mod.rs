//! The GCE family: a probability matrix (or top-label pairs) -> score groups and bins -> the
//! per-(group, bin) table ([`BinStats`]) -> [`reduce`]. Kernels are organised by fused
//! execution path: the top-label scan ([`toplabel`], with its short- and long-row vector scans
//! [`toplabel_scan`] and, for even bins, the fused block pass [`toplabel_even`]); the
//! all-probabilities even pass ([`allprobs_even`]) and adaptive histogram ([`allprobs_hist`]);
//! the pair kernels ([`pairs`]); many metrics sharing one pass ([`space`]); and the kept scores
//! as weighted-primitive rows ([`rows`]); one chunk's share of the distributed selection of
//! adaptive edges ([`select`]). Which path computes which table is the table of paths
//! in [`crate::kernels`].

pub mod allprobs_even;
pub mod allprobs_hist;
pub mod pairs;
pub mod rows;
pub mod select;
pub mod space;
pub mod toplabel;
pub mod toplabel_even;
pub mod toplabel_scan;

#[cfg(test)]
mod tests_scan;

use crate::kernels::core::reduce;
use crate::kernels::core::validate;
use crate::kernels::{BinStats, Binning, GceSpec, Grouping, Inputs, KernelError, Score};

/// Per-(group, bin) statistics of one metric's grouping and binning (no norm yet).
pub fn bin_stats<T: Score>(
    x: &Inputs<T>,
    grouping: &Grouping,
    num_bins: usize,
    check: &validate::Checks,
) -> Result<BinStats, KernelError> {
    grouping.check(num_bins)?;
    let mut v = stats_many(x, grouping, &[num_bins], check)?;
    Ok(v.pop().expect("one bin count in, one table out"))
}

/// Statistics for several bin counts of the same grouping, sharing the pass over the data.
pub fn stats_many<T: Score>(
    x: &Inputs<T>,
    grouping: &Grouping,
    bins: &[usize],
    check: &validate::Checks,
) -> Result<Vec<BinStats>, KernelError> {
    for &b in bins {
        grouping.check(b)?;
        grouping.check_table(x.k, b)?;
    }
    if grouping.max_prob && grouping.binning == Binning::Even && toplabel_even::fused_even_fits(grouping, x.k, bins) {
        toplabel_even::even_stats(x, grouping, bins, check)
    } else if grouping.max_prob {
        let top = toplabel::summarise(x, check)?;
        Ok(match grouping.binning {
            Binning::Adaptive => toplabel::adaptive_stats(&top, x.k, grouping, bins),
            Binning::Even => bins.iter().map(|&b| toplabel::stats(&top, x.k, grouping, b)).collect(),
        })
    } else {
        match grouping.binning {
            Binning::Even => allprobs_even::stats(x, grouping, bins, check),
            Binning::Adaptive => {
                let (_, adaptive) =
                    allprobs_hist::stats(x, grouping.class_conditional, grouping.threshold, &[], bins, check)?;
                Ok(adaptive)
            }
        }
    }
}

/// The General Calibration Error of one metric.
pub fn gce<T: Score>(x: &Inputs<T>, spec: &GceSpec, check: &validate::Checks) -> Result<f64, KernelError> {
    let st = bin_stats(x, &spec.grouping, spec.num_bins, check)?;
    Ok(reduce::reduce(&st, spec.norm, spec.grouping.class_conditional))
}
