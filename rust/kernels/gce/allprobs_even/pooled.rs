//! Pooled tables: collapsed from the class-conditional tables where those are small enough
//! ([`POOL_FROM_CLASSES`]), else from a pooled pass of their own.

use super::{pass_tables, Cut, Force};
use crate::kernels::core::validate::Checks;
use crate::kernels::{BinStats, Inputs, KernelError, Score};

/// Pooled tables of at most this many class-conditional cells (K x (B + 1)) are their
/// class-conditional tables summed over the classes (`collapse`), where `evaluate` shares
/// one pass for both groupings; larger ones take a pooled pass of their own (the
/// class-conditional table would be too large). Either gives the same table: sums are exact.
pub(crate) const POOL_FROM_CLASSES: usize = 1 << 22;

/// Whether the pooled table of `b` bins over `k` classes is its class-conditional table
/// collapsed (`POOL_FROM_CLASSES`).
pub(crate) fn pooled_from_classes(k: usize, b: usize) -> bool {
    k.saturating_mul(b + 1) <= POOL_FROM_CLASSES
}

/// The pooled table of a class-conditional one: each bin's count, unit sum and outcome
/// count added over the classes (all exact), `sum_score` from the units.
pub(crate) fn collapse(t: &BinStats) -> BinStats {
    let nb = t.nb;
    let mut st = BinStats::zeros(1, nb);
    for g in 0..t.groups {
        for b in 0..nb {
            st.count[b] += t.count[g * nb + b];
            st.units[b] += t.units[g * nb + b];
            st.sum_outcome[b] += t.sum_outcome[g * nb + b];
        }
    }
    st.finish();
    st.edges = t.edges[..nb + 1].to_vec();
    st
}

/// The pooled tables (and, raised, their twins) of `bins`: collapsed from the
/// class-conditional tables where `pooled_from_classes` (from `classes`, the
/// class-conditional tables and twins of the same `bins` and `cut`, when the caller has them),
/// else from a pooled pass.
pub(super) fn pooled_tables<'a, T: Score>(
    x: &Inputs<T>,
    bins: &[usize],
    check: &Checks,
    force: Force,
    cut: Cut,
    classes: Option<(&'a [BinStats], &'a [BinStats])>,
) -> Result<(Vec<BinStats>, Vec<BinStats>), KernelError> {
    let (from, own): (Vec<usize>, Vec<usize>) = bins.iter().partition(|&&b| pooled_from_classes(x.k, b));
    let split = |mut v: Vec<BinStats>, n: usize| {
        let twins = v.split_off(n);
        (v, twins)
    };
    // The class-conditional tables of `from`, in order: the caller's (borrowed: they are
    // large, and copying them cost `evaluate` a serial copy of every table), or a pass's.
    let passed;
    let (cc, cc_twins): (Vec<&BinStats>, Vec<&BinStats>) = match classes {
        Some((t, w)) => {
            let pick = |v: &'a [BinStats]| -> Vec<&'a BinStats> {
                bins.iter().zip(v).filter(|(&b, _)| pooled_from_classes(x.k, b)).map(|(_, t)| t).collect()
            };
            (pick(t), pick(w))
        }
        None => {
            passed = split(pass_tables(x, true, &from, check, force, cut)?, from.len());
            (passed.0.iter().collect(), passed.1.iter().collect())
        }
    };
    let (mine, mine_twins) = split(pass_tables(x, false, &own, check, force, cut)?, own.len());
    let (mut cc, mut cc_twins, mut mine, mut mine_twins) =
        (cc.into_iter().map(collapse), cc_twins.into_iter().map(collapse), mine.into_iter(), mine_twins.into_iter());
    let (mut tables, mut twins) = (Vec::with_capacity(bins.len()), Vec::new());
    for &b in bins {
        let (t, w) = if pooled_from_classes(x.k, b) { (cc.next(), cc_twins.next()) } else { (mine.next(), mine_twins.next()) };
        tables.extend(t);
        twins.extend(w);
    }
    Ok((tables, twins))
}
