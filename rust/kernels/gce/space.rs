//! Many metrics and bin counts at once, sharing the work: the input is validated once, the
//! top-label summary (argmax, confidence) is computed once for every max-prob metric, and each
//! distinct grouping (binning, max_prob, class_conditional, threshold) is binned once for all
//! requested bin counts: adaptive all-probabilities groupings share one histogram and one
//! gather pass per (class_conditional, threshold) ([`allprobs_hist`]); even ones one row pass
//! for both class_conditional and the paper's thresholds 0 and 0.01 together
//! ([`allprobs_even::stats_pair`]); every norm is then a cheap reduction of the same table.
//!
//! Which kernel computes each table, and which tables are bitwise those of `gce`, is the table
//! of paths in [`crate::kernels`].

use rayon::prelude::*;

use crate::kernels::core::validate::{scan, Checks};
use crate::kernels::core::reduce;
use crate::kernels::gce::{allprobs_even, allprobs_hist, toplabel};
use crate::kernels::{BinStats, Binning, Grouping, Inputs, KernelError, Norm, Score};

/// Values of `metrics` (grouping, norm) at each bin count in `bins`, row-major
/// `[metric][bin count]`. Each table is reduced as `gce` reduces it; on large inputs by
/// [`reduce::reduce_par`] (bitwise [`reduce::reduce`]), its groups in parallel when it has
/// many (class-conditional tables of many classes: about 1% of the call on one thread at
/// (50k, 1000), all of it serial).
pub fn evaluate<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<f64>, KernelError> {
    let mut out = vec![f64::NAN; metrics.len() * bins.len()];
    for_each_table(x, metrics, bins, check, |m, bi, t| {
        let (g, norm) = metrics[m];
        let reduce = if parallel(x.n, x.k) { reduce::reduce_par } else { reduce::reduce };
        out[m * bins.len() + bi] = reduce(t, norm, g.class_conditional);
    })?;
    Ok(out)
}

/// Calls `visit(metric, bin count index, table)` with the statistics table of every metric of
/// `metrics` at every bin count of `bins`, computing each distinct grouping once.
pub fn for_each_table<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
    mut visit: impl FnMut(usize, usize, &BinStats),
) -> Result<(), KernelError> {
    // With no bin count, no grouping (its threshold) would be checked below.
    if bins.is_empty() {
        return Err(KernelError::Parameter("num_bins must hold at least one bin count, e.g. (15,)".into()));
    }
    for (g, _) in metrics {
        for &b in bins {
            g.check(b)?;
            g.check_table(x.k, b)?;
        }
    }
    scan(x, check)?;
    let top = if metrics.iter().any(|(g, _)| g.max_prob) {
        Some(toplabel::summarise(x, &Checks::NONE)?)
    } else {
        None
    };
    let mut done = vec![false; metrics.len()];
    for m in 0..metrics.len() {
        while !done[m] {
            let before = done.iter().filter(|&&d| d).count();
            for (gm, tables) in tables_with(x, metrics, &done, m, bins, top.as_ref())? {
                for (m2, (g2, _)) in metrics.iter().enumerate() {
                    if *g2 == gm {
                        for (bi, t) in tables.iter().enumerate() {
                            visit(m2, bi, t);
                        }
                        done[m2] = true;
                    }
                }
            }
            // Each round computes some grouping not done (checked thresholds compare equal to
            // themselves); never loop without progress.
            if done.iter().filter(|&&d| d).count() == before {
                return Err(KernelError::Parameter(format!("no kernel computes the grouping {:?}", metrics[m].0)));
            }
        }
    }
    Ok(())
}

/// Inputs of fewer entries make their top-label tables one after another and reduce every
/// table on the calling thread: short work, and small inputs run with the GIL held (the glue's
/// `DETACH_ENTRIES`, 2^15), when nothing may go to the pool.
const PAR_MIN_ENTRIES: usize = 1 << 20;

/// Whether an input of `n` rows of `k` scores is large enough for the parallel forms
/// ([`PAR_MIN_ENTRIES`]).
fn parallel(n: usize, k: usize) -> bool {
    n.saturating_mul(k) >= PAR_MIN_ENTRIES
}

/// The tables of every max-prob grouping not `done`, at every bin count, from the shared
/// summary. Each table is independent of the others (its own pass over the summary), so they
/// are made in parallel, one job per (grouping, bin count): on one thread they took about a
/// tenth of `evaluate` at (50k, 1000) (the pooled adaptive ones select over all rows).
fn toplabel_tables(
    top: &toplabel::TopLabel,
    k: usize,
    metrics: &[(Grouping, Norm)],
    done: &[bool],
    bins: &[usize],
) -> Vec<(Grouping, Vec<BinStats>)> {
    let mut groupings: Vec<Grouping> = Vec::new();
    for ((h, _), &d) in metrics.iter().zip(done) {
        if h.max_prob && !d && !groupings.contains(h) {
            groupings.push(*h);
        }
    }
    let jobs: Vec<(Grouping, usize)> =
        groupings.iter().flat_map(|&h| bins.iter().map(move |&b| (h, b))).collect();
    let table = |&(h, b): &(Grouping, usize)| toplabel::stats(top, k, &h, b);
    let tables: Vec<BinStats> = if parallel(top.conf.len(), k) {
        jobs.par_iter().map(table).collect()
    } else {
        jobs.iter().map(table).collect()
    };
    // `jobs` is grouping-major: each grouping's bin counts in order.
    let mut tables = tables.into_iter();
    groupings.into_iter().map(|h| (h, tables.by_ref().take(bins.len()).collect())).collect()
}

/// The tables, at every bin count, of the grouping of metric `m` or of groupings computed
/// together with it (at least one grouping not `done` yet):
/// - top-label: from the shared summary, every max-prob grouping not `done` at once
///   ([`toplabel_tables`]);
/// - all-probabilities, adaptive: one histogram and gather pass per (class_conditional,
///   threshold), the tables of `gce` ([`allprobs_hist`]);
/// - all-probabilities, even: one row pass ([`allprobs_even::stats_pair`]) for the lowest
///   threshold not yet done, which also makes the tables of the next threshold when it lies
///   below every first edge (its raised twins: the paper's 0 and 0.01 in one pass), for both
///   `class_conditional` at once (pooled tables summed over the class-conditional ones').
fn tables_with<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    done: &[bool],
    m: usize,
    bins: &[usize],
    top: Option<&toplabel::TopLabel>,
) -> Result<Vec<(Grouping, Vec<BinStats>)>, KernelError> {
    let g = metrics[m].0;
    if g.max_prob {
        let top = top.ok_or_else(|| KernelError::Parameter("no top-label summary".into()))?;
        return Ok(toplabel_tables(top, x.k, metrics, done, bins));
    }
    if g.binning == Binning::Adaptive {
        let (_, adaptive) = allprobs_hist::stats(x, g.class_conditional, g.threshold, &[], bins, &Checks::NONE)?;
        return Ok(vec![(g, adaptive)]);
    }
    // The thresholds of the even all-probabilities groupings still to compute, lowest first:
    // the lowest, with the next as its raised twins when it can be, from one row pass, for
    // whichever `class_conditional` asks for either.
    let even = |h: &Grouping| !h.max_prob && h.binning == Binning::Even;
    let want = |cc: bool, t: f64| {
        metrics.iter().zip(done).any(|((h, _), &d)| !d && even(h) && h.class_conditional == cc && h.threshold == t)
    };
    let mut thr: Vec<f64> = metrics.iter().zip(done).filter(|((h, _), &d)| !d && even(h)).map(|((h, _), _)| h.threshold).collect();
    thr.sort_by(f64::total_cmp);
    thr.dedup();
    let low = thr[0];
    let raise = thr.get(1).copied().filter(|&r| allprobs_even::can_raise(low, r, bins));
    let asked = |cc: bool| want(cc, low) || raise.is_some_and(|r| want(cc, r));
    allprobs_even::stats_pair(x, low, raise, bins, asked(true), asked(false), &Checks::NONE)
}

