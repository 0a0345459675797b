//! Pure-Rust kernels. Nothing here knows about Python.
//!
//! Data flow for one metric: [`validate`] (fused into the row passes where possible) ->
//! score groups and bins ([`toplabel`] with its short- and long-row vector scans [`toplabel_scan`] and,
//! for even bins, the fused block pass [`toplabel_even`]; [`allprobs_even`]; [`allprobs_hist`])
//! -> per-(group, bin) sufficient statistics ([`stats::BinStats`]) -> [`reduce`].
//! [`space`] evaluates many metrics and bin counts sharing that work. Work runs over fixed row
//! chunks ([`chunks`]; short inputs shared with the calling thread, [`share`]) folded in order.
//! Top-label metrics of (confidence, correct[, predicted]) pairs, with no matrix: [`pairs`].
//!
//! # Paths
//!
//! Which kernel computes a metric's per-(group, bin) table, by entry point. `gce` is the Python
//! `calibkit.gce` and every named metric (`ece`, `sce`, ...); `bin_stats` is
//! `calibkit.calibration_bins` and the private binding `_native.bin_stats` (both call
//! [`bin_stats`] -> [`stats_many`], so they are one path); `evaluate` is [`space::evaluate`]
//! (`calibkit.evaluate`). `Accumulator` (exact mode) and `calibkit.dask` call these bindings
//! from Python.
//!
//! | grouping (max_prob, class_conditional, threshold) | binning | `gce` / `bin_stats` | `evaluate` | equal |
//! |---|---|---|---|---|
//! | top-label, table of at most 4096 cells | even | [`toplabel_even::even_stats`] | [`toplabel::summarise`] + [`toplabel::stats`] | bitwise: `stats` folds the summary over the same chunks, blocks and copies |
//! | top-label, larger table (class-conditional, many classes and bins) | even | [`toplabel::summarise`] + [`toplabel::stats`] | the same | same code |
//! | top-label | adaptive | [`toplabel::summarise`] + [`toplabel::stats`] | the same | same code |
//! | all probabilities | adaptive | [`allprobs_hist::stats`] (one bin count) | [`allprobs_hist::stats`] (every bin count) | bitwise: a table depends only on the values and its own edges (bucket sums exact, split buckets summed exactly in integer units), not on the other binnings sharing the selection |
//! | all probabilities | even | [`allprobs_even::stats`] (one row pass; several bin counts can share it; pooled tables up to 2^22 class-conditional cells summed from the class-conditional table) | [`allprobs_even::stats_pair`] (every bin count, both `class_conditional`, thresholds 0 and 0.01 in one pass: the second threshold's tables as raised twins) | bitwise: each cell's sum has one fixed order (row chunks, row and column order within a chunk; pooled tables the class-conditional ones summed in class order), whatever the bin counts, thresholds, strategy, instruction set or threads sharing the pass |
//!
//! `tests_paths` checks every row of this table for all 32 metrics of the paper's space, f32
//! and f64, K <= 16 and K > 16, thread counts 1 and 2; `tests/test_paths.py` checks the Python
//! entry points.

#[macro_use]
pub(crate) mod simd;

pub mod allprobs_hist;
pub mod allprobs_even;
pub mod cells;
pub mod chunks;
pub mod edges;
pub mod grouped;
pub mod error;
pub mod isotonic;
pub mod ks;
pub mod reduce;
pub mod resample;
pub mod rows;
pub mod score;
pub mod pairs;
pub mod share;
pub mod smooth;
pub mod space;
pub mod spec;
pub mod stats;
pub mod toplabel;
pub mod toplabel_even;
pub mod toplabel_scan;
pub mod validate;

pub use error::KernelError;
pub use score::Score;
pub use space::evaluate;
pub use spec::{Binning, GceSpec, Grouping, Norm};
pub use stats::BinStats;

/// Input matrix view: `n` rows of `k` scores, row-major, plus one label per row.
#[derive(Clone, Copy)]
pub struct Inputs<'a, T: Score> {
    pub probs: &'a [T],
    pub labels: &'a [i64],
    pub n: usize,
    pub k: usize,
}

impl<'a, T: Score> Inputs<'a, T> {
    /// Checks the shapes agree (values are checked by [`validate`]).
    pub fn new(probs: &'a [T], labels: &'a [i64], k: usize) -> Result<Self, KernelError> {
        if k == 0 {
            return Err(KernelError::Shape("probs has 0 columns; it needs at least one class".into()));
        }
        if !probs.len().is_multiple_of(k) {
            return Err(KernelError::Shape(format!(
                "probs has {} values, not a multiple of {k} columns",
                probs.len()
            )));
        }
        let n = probs.len() / k;
        if labels.len() != n {
            return Err(KernelError::Shape(format!(
                "labels has {} entries but probs has {n} rows; pass one label per row",
                labels.len()
            )));
        }
        if n == 0 {
            return Err(KernelError::Shape("probs and labels are empty; pass at least one row".into()));
        }
        Ok(Inputs { probs, labels, n, k })
    }

    #[inline]
    pub fn row(&self, i: usize) -> &'a [T] {
        &self.probs[i * self.k..(i + 1) * self.k]
    }
}

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
        Ok(bins
            .iter()
            .map(|&b| toplabel::stats(&top, x.k, grouping, b))
            .collect())
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

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_scan;
#[cfg(test)]
mod tests_paths;
#[cfg(test)]
mod tests_simd;
#[cfg(test)]
mod tests_sce;
#[cfg(test)]
mod tests_fuzz;
