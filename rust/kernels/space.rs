//! Many metrics and bin counts at once, sharing the work: the input is validated once, the
//! top-label summary (argmax, confidence) is computed once for every max-prob metric, and each
//! distinct grouping (binning, max_prob, class_conditional, threshold) is binned once for all
//! requested bin counts (one pass for even bins; one histogram and one gather pass for adaptive
//! bins), after which every norm is a cheap reduction of the same table.

use crate::kernels::validate::{scan, Checks};
use crate::kernels::{allprobs_adaptive, allprobs_even, reduce, toplabel};
use crate::kernels::{Binning, Grouping, Inputs, KernelError, Norm, Score};

/// Values of `metrics` (grouping, norm) at each bin count in `bins`, row-major
/// `[metric][bin count]`.
pub fn evaluate<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<f64>, KernelError> {
    for (g, _) in metrics {
        for &b in bins {
            g.check(b)?;
        }
    }
    scan(x, check)?;
    let mut out = vec![f64::NAN; metrics.len() * bins.len()];
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
        let tables = if g.max_prob {
            let top = top.as_ref().expect("computed above");
            bins.iter().map(|&b| toplabel::stats(top, x.k, &g, b)).collect()
        } else {
            match g.binning {
                Binning::Even => allprobs_even::stats(x, &g, bins, &Checks::NONE)?,
                Binning::Adaptive => allprobs_adaptive::stats(x, &g, bins)?,
            }
        };
        for (m2, (g2, norm)) in metrics.iter().enumerate() {
            if *g2 == g {
                for (bi, t) in tables.iter().enumerate() {
                    out[m2 * bins.len() + bi] = reduce::reduce(t, *norm, g.class_conditional);
                }
                done[m2] = true;
            }
        }
    }
    Ok(out)
}
