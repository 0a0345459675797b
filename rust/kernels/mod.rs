//! Pure-Rust kernels. Nothing here knows about Python.
//!
//! Packages by concept, one way down (a package imports only the ones above it in this list):
//! - [`self::core`]: the machinery every reading shares: element types and the input view,
//!   the metric spec, input checks and errors, bin edges, the per-(group, bin) table
//!   ([`BinStats`]) and the one reduction ([`self::core::reduce`]); fixed row chunks folded in
//!   order ([`self::core::chunks`]; short inputs shared with the calling thread,
//!   [`self::core::share`]) and the one SIMD dispatch ([`self::core::simd`]).
//! - [`gce`](mod@gce): the General Calibration Error family from a probability matrix or top-label
//!   pairs, by fused execution path.
//! - [`weighted`]: the weighted binning primitive, per-entry cells and resampling.
//! - [`binfree`]: the binning-free estimators' per-prediction passes.
//!
//! Data flow for one metric: [`self::core::validate`] (fused into the row passes where
//! possible) -> score groups and bins -> per-(group, bin) sufficient statistics
//! ([`BinStats`]) -> [`self::core::reduce`]. [`gce::space`] evaluates many metrics and bin
//! counts sharing that work. Every cell's score sum is exact in grid units
//! ([`self::core::units`]): whichever path builds a table, in whatever order, it has the same
//! bits.
//!
//! # Paths
//!
//! Which kernel serves each public native entry point (the functions of `calibkit._native`,
//! `rust/py/`). Modules are named from here (`kernels::`).
//!
//! ## GCE of a probability matrix
//!
//! Which kernel computes a metric's per-(group, bin) table, by entry point. `gce` is the Python
//! `calibkit.gce` and every named metric (`ece`, `sce`, ...); `bin_stats` is
//! `calibkit.calibration_bins` and the private binding `_native.bin_stats` (both call
//! [`bin_stats`] -> [`stats_many`], in [`gce`](mod@gce), so they are one path); `evaluate` is
//! [`gce::space::evaluate`] (`calibkit.evaluate`). `Accumulator` (exact mode) and
//! `calibkit.dask` call these bindings from Python.
//!
//! | grouping (max_prob, class_conditional, threshold) | binning | `gce` / `bin_stats` | `evaluate` | equal |
//! |---|---|---|---|---|
//! | top-label, table of at most 4096 cells | even | [`gce::toplabel_even::even_stats`] | [`gce::toplabel::summarise`] + [`gce::toplabel::stats`] | bitwise: `stats` folds the summary over the same chunks, blocks and copies |
//! | top-label, larger table (class-conditional, many classes and bins) | even | [`gce::toplabel::summarise`] + [`gce::toplabel::stats`] | the same | same code |
//! | top-label | adaptive | [`gce::toplabel::summarise`] + [`gce::toplabel::adaptive_stats`] (one bin count: a selection per group) | the same (every bin count: each group sorted once) | bitwise: a table's edges are the same order statistics and its sums exact, however found |
//! | all probabilities | adaptive | [`gce::allprobs_hist::stats`] (one bin count) | [`gce::allprobs_hist::stats`] (every bin count) | bitwise: every score adds its grid units (bucket and segment sums exact), so a table depends only on the values and its own edges, not on the other binnings sharing the selection |
//! | all probabilities | even | [`gce::allprobs_even::stats`] (one row pass; several bin counts can share it; pooled tables up to 2^22 class-conditional cells summed from the class-conditional table) | [`gce::allprobs_even::stats_pair`] (every bin count, both `class_conditional`, thresholds 0 and 0.01 in one pass: the second threshold's tables as raised twins) | bitwise: each cell's sum is exact in grid units, whatever the bin counts, thresholds, strategy, instruction set or threads sharing the pass |
//!
//! `tests_paths` checks every row of this table for all 32 metrics of the paper's space, f32
//! and f64, K <= 16 and K > 16, thread counts 1 and 2; `tests/test_paths.py` checks the Python
//! entry points.
//!
//! ## GCE of top-label pairs (confidence, correct[, predicted])
//!
//! `pairs_gce`, `pairs_bin_stats` and `pairs_evaluate` are [`gce::pairs::gce`],
//! [`gce::pairs::bin_stats`] and [`gce::pairs::evaluate`] (top-label groupings only); all three
//! bin through [`gce::pairs::stats_many`]'s kernels, chosen per grouping:
//!
//! | grouping | binning | kernel (per chunk of pairs) | equal to `gce` on the matching matrix |
//! |---|---|---|---|
//! | pooled, at most 4096 bins (`pooled_fits`) | even | `gce::pairs::pooled` (`pooled_chunk`: rounded bin guess, eight interleaved table copies) | bitwise (tables and values) |
//! | class-conditional, or pooled beyond 4096 bins; table of at most 4096 cells | even | `gce::pairs::grouped` (`fused_chunk`: one 128-bit add per pair) | bitwise |
//! | the same, larger tables | even | `gce::pairs` (`even_chunk`: a block of cells, then [`self::core::stats::LaneTables`]) | bitwise |
//! | any | adaptive | [`gce::toplabel::adaptive_tables`] (per group, as the matrix path) | bitwise |
//!
//! Every cell sum is exact in grid units ([`self::core::units`]), so the tables are the matrix
//! path's bit for bit and the same for any number of threads.
//! Pooled groupings give bitwise the same value with or without `predicted`. `check_pairs` is
//! [`gce::pairs::Pairs::validate`]; `toplabel_pairs` (a matrix's pairs) is
//! [`gce::toplabel::summarise`]; `check_values` (the checks of `gce` alone) is
//! [`self::core::validate::scan`].
//!
//! ## One table -> one number
//!
//! `reduce_table` is [`self::core::reduce::reduce`], the function every path above ends with:
//! on the table `bin_stats` returns, the bits `gce` returns.
//!
//! ## Weighted tables, cells and resampling
//!
//! | entry point | kernel | what it computes |
//! |---|---|---|
//! | `grouped_bin_stats` | [`weighted::grouped::grouped_bin_stats`] | weighted `(group, score, outcome, weight)` rows -> table; even bins, or adaptive (weighted equal mass) |
//! | `weighted_matrix_stats` | [`weighted::matrix::stats`] ([`weighted::matrix::even_stats`], [`weighted::matrix_adaptive::adaptive_stats`]) | a probability matrix with row weights -> the tables of the all-probabilities groupings at one threshold, for several groupings and bin counts at once: even bins (one pass per bin count; pooled tables from the class-conditional cells when both are asked for) or adaptive bins (by class, a block of classes read at a time, each class sorted alone; pooled, every kept entry sorted over the threads; each group sorted once for every bin count): bitwise `grouped_bin_stats` on the grouping's triples (`score_rows`) weighted by their rows (`calibration_bins`, `gce` and `evaluate` with `sample_weight` take it) |
//! | `grouped_bin_stats_at` | [`weighted::grouped::grouped_bin_stats_at`] | the same against given upper edges (`calibkit.dask`) |
//! | `adaptive_positions` | [`self::core::edges::adaptive_positions`] | the ranks of the adaptive edges |
//! | `score_rows` | [`gce::rows::score_rows`] | a metric's kept scores as the primitive's rows (validated as by `gce`) |
//! | `select_scan`, `select_scan_pairs` | [`gce::select::scan_matrix`], [`gce::select::scan_pairs`] | one chunk's share of a `calibkit.dask` selection pass: exact bucket tables (count, outcome count, score units) of planned key ranges (or, for the first pass's grid above 1/16, each bucket's count and the tables of super-buckets of 16), found by [`gce::select::GridLocator`] or a search, and the fetched (score, outcome) of fetch ranges; every threshold of a grouping in one read |
//! | `select_keys` | [`gce::select::Keyed::key`] | the selection's order-preserving keys (bit patterns) |
//! | `units_sum_at` | [`self::core::units::sum_at`] | exact unit sums gathered by cell (bucket tables into bins) |
//! | `table_cells` | [`weighted::cells::table_cells`] | each score's cell by the kernels' own bin rules |
//! | `resample_bootstrap`, `resample_consistency` | [`weighted::resample::bootstrap`], [`weighted::consistency::consistency`] | resamples on fixed per-entry cells, each reduced by [`self::core::reduce::reduce`] |
//! | `AdaptiveBootstrap(cell, ...)`, `.resample` | [`weighted::adaptive::Sorted::from_cells`], [`weighted::adaptive::Sorted::resample`] | bootstrap with bins that move with the weights (`confidence_interval`'s adaptive metrics): a cell table's kept entries sorted once for any number of `resample` calls (a progress bar's blocks), each resample's edges from cumulative weights ([`weighted::grouped::edge_ranks`], the primitive's rule), bins as runs of the sorted order; bitwise the primitive's table on the same weights (exact unit sums; with fractional base weights within half a unit per repeated entry). The triples' entry point [`weighted::resample::bootstrap_grouped`] (adaptive: [`weighted::adaptive::Sorted::new`]; even: the primitive per resample) is the oracle of the tests and the `resample` fuzz target, not exported |
//! | `bootstrap_weights` | [`weighted::resample::weights_matrix`] | the per-row multiplicities the bootstraps use |
//! | `consistency_draws` | [`weighted::consistency::consistency_draws`] | the labels consistency resampling draws (for a Python callable) |
//!
//! Every kernel here is bitwise the same for any number of threads (fixed chunks folded in
//! order; counter-based random numbers per (seed, resample, row)).
//!
//! ## Binning-free estimators
//!
//! | entry point | kernel |
//! |---|---|
//! | `ks_error` | [`binfree::ks::ks_error`] |
//! | `smooth_grid` | [`binfree::smooth::grid_mass`] |
//! | `isotonic_fit` | [`binfree::isotonic::isotonic_fit`] |
//!
//! `simd_level` is [`self::core::simd::level`], the one CPU feature check of the crate.

pub mod binfree;
pub mod core;
pub mod gce;
pub mod weighted;

pub use self::core::error::KernelError;
pub use self::core::inputs::Inputs;
pub use self::core::score::Score;
pub use self::core::spec::{Binning, GceSpec, Grouping, Norm};
pub use self::core::stats::BinStats;
pub use gce::space::evaluate;
pub use gce::{bin_stats, gce, stats_many};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fuzz;
#[cfg(test)]
mod tests_paths;
#[cfg(test)]
mod tests_simd;
