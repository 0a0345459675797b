//! Many metrics and bin counts at once, sharing the work: the input is validated once, the
//! top-label summary (argmax, confidence) is computed once for every max-prob metric, and each
//! distinct grouping (binning, max_prob, class_conditional, threshold) is binned once for all
//! requested bin counts: all-probabilities groupings with the same (class_conditional,
//! threshold), even and adaptive alike, share one histogram and one gather pass
//! ([`allprobs_hist`]); every norm is then a cheap reduction of the same table.
//!
//! Which kernel computes each table, and which tables are bitwise those of `gce`, is the table
//! of paths in [`crate::kernels`].

use crate::kernels::validate::{scan, Checks};
use crate::kernels::{allprobs_hist, reduce, toplabel};
use crate::kernels::{BinStats, Binning, Grouping, Inputs, KernelError, Norm, Score};

/// Values of `metrics` (grouping, norm) at each bin count in `bins`, row-major
/// `[metric][bin count]`.
pub fn evaluate<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<f64>, KernelError> {
    let mut out = vec![f64::NAN; metrics.len() * bins.len()];
    for_each_table(x, metrics, bins, check, |m, bi, t| {
        let (g, norm) = metrics[m];
        out[m * bins.len() + bi] = reduce::reduce(t, norm, g.class_conditional);
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
        if done[m] {
            continue;
        }
        let g = metrics[m].0;
        // Groupings computed together with `g`, and their tables per bin count.
        let computed: Vec<(Grouping, Vec<BinStats>)> = if g.max_prob {
            let top = top.as_ref().ok_or_else(|| KernelError::Parameter("no top-label summary".into()))?;
            vec![(g, bins.iter().map(|&b| toplabel::stats(top, x.k, &g, b)).collect())]
        } else {
            // Every all-probabilities grouping with this (class_conditional, threshold), even
            // and adaptive, comes from one histogram and one gather pass.
            let same = |b: Binning| {
                metrics.iter().any(|(h, _)| {
                    !h.max_prob && h.binning == b && h.class_conditional == g.class_conditional && h.threshold == g.threshold
                })
            };
            let (want_even, want_adaptive) = (same(Binning::Even), same(Binning::Adaptive));
            let (even, adaptive) = allprobs_hist::stats(
                x,
                g.class_conditional,
                g.threshold,
                if want_even { bins } else { &[] },
                if want_adaptive { bins } else { &[] },
                &Checks::NONE,
            )?;
            let mut v = Vec::new();
            if want_even {
                v.push((Grouping { binning: Binning::Even, ..g }, even));
            }
            if want_adaptive {
                v.push((Grouping { binning: Binning::Adaptive, ..g }, adaptive));
            }
            v
        };
        for (gm, tables) in &computed {
            for (m2, (g2, _)) in metrics.iter().enumerate() {
                if g2 == gm {
                    for (bi, t) in tables.iter().enumerate() {
                        visit(m2, bi, t);
                    }
                    done[m2] = true;
                }
            }
        }
    }
    Ok(())
}
