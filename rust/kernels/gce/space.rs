//! Many metrics and bin counts at once, sharing the work: the input is validated once, the
//! top-label summary (argmax, confidence) is computed once for every max-prob metric, and each
//! distinct grouping (binning, max_prob, class_conditional, threshold) is binned once for all
//! requested bin counts: adaptive all-probabilities groupings share one histogram and one
//! gather pass per (class_conditional, threshold) ([`allprobs_hist`]); even ones one row pass
//! for both class_conditional and the paper's thresholds 0 and 0.01 together
//! ([`allprobs_even::stats_pair`]); every norm is then a cheap reduction of the same table.
//!
//! Those computations are the phases of a plan ([`plan`]), independent of one another, so on
//! large inputs they run at once, and the tables are reduced in parallel: every value is the
//! same bits as one after another (each table is, whichever thread makes it).
//!
//! Which kernel computes each table, and which tables are bitwise those of `gce`, is the table
//! of paths in [`crate::kernels`].

use rayon::prelude::*;

use crate::kernels::core::validate::{scan, Checks};
use crate::kernels::core::reduce;
use crate::kernels::gce::{allprobs_even, allprobs_hist, toplabel};
use crate::kernels::{BinStats, Binning, Grouping, Inputs, KernelError, Norm, Score};

/// Values of `metrics` (grouping, norm) at each bin count in `bins`, row-major
/// `[metric][bin count]`. Each table is reduced as `gce` reduces it ([`reduce::reduce`]); on
/// large inputs the (metric, bin count) values are reduced in parallel, each by
/// [`reduce::reduce_par`] (bitwise [`reduce::reduce`]: about 1% of the call on one thread at
/// (50k, 1000), all of it serial before).
pub fn evaluate<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<f64>, KernelError> {
    let mut tables: Vec<Option<&BinStats>> = vec![None; metrics.len() * bins.len()];
    let computed = tables_of(x, metrics, bins, check)?;
    visit_in_order(&computed, metrics, |m, bi, t| tables[m * bins.len() + bi] = Some(t));
    let par = parallel(x.n, x.k);
    let value = |(i, t): (usize, &Option<&BinStats>)| {
        let (g, norm) = metrics[i / bins.len()];
        let reduce = if par { reduce::reduce_par } else { reduce::reduce };
        t.map_or(f64::NAN, |t| reduce(t, norm, g.class_conditional))
    };
    Ok(if par {
        tables.par_iter().enumerate().map(value).collect()
    } else {
        tables.iter().enumerate().map(value).collect()
    })
}

/// Calls `visit(metric, bin count index, table)` with the statistics table of every metric of
/// `metrics` at every bin count of `bins`, computing each distinct grouping once.
pub fn for_each_table<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
    visit: impl FnMut(usize, usize, &BinStats),
) -> Result<(), KernelError> {
    let computed = tables_of(x, metrics, bins, check)?;
    visit_in_order(&computed, metrics, visit);
    Ok(())
}

/// The tables of every phase of the plan of `metrics`, in the plan's order: checked first
/// (every grouping at every bin count, then the input), then the phases, each an independent
/// computation from the input alone, run at once on large inputs (one rayon job each, each
/// with its own parallel parts). One after another, each phase's serial steps (a fold, a
/// selection's finish, a small table's pass) left the other threads idle: on a 16-core host at
/// (50k, 1000) float64, `evaluate` took 248-291 ms with its phases one after another and
/// 155-222 ms with them at once (docs/performance.md). Each table is the same bits whichever
/// thread makes it, so the order changes nothing; an error is the first in the plan's order.
fn tables_of<T: Score>(
    x: &Inputs<T>,
    metrics: &[(Grouping, Norm)],
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<Tables>, KernelError> {
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
    let phases = plan(metrics, bins)?;
    let run = |p: &Phase| {
        let tables = p.run(x, bins)?;
        debug_assert!(tables.iter().map(|(g, _)| *g).eq(p.groupings()), "{p:?} returned other groupings");
        Ok(tables)
    };
    if parallel(x.n, x.k) {
        // Every phase's result, then the first error in the plan's order (as one after another).
        let all: Vec<Result<Tables, KernelError>> = phases.par_iter().map(run).collect();
        all.into_iter().collect()
    } else {
        phases.iter().map(run).collect()
    }
}

/// The tables one phase returns: each grouping it computed, at every bin count.
type Tables = Vec<(Grouping, Vec<BinStats>)>;

/// Calls `visit` for every metric whose grouping a phase returned, phase by phase, in the
/// plan's order (a grouping one phase returns is not returned by another: [`plan`]).
fn visit_in_order<'a>(
    computed: &'a [Tables],
    metrics: &[(Grouping, Norm)],
    mut visit: impl FnMut(usize, usize, &'a BinStats),
) {
    for (gm, tables) in computed.iter().flatten() {
        for (m, (g, _)) in metrics.iter().enumerate() {
            if g == gm {
                for (bi, t) in tables.iter().enumerate() {
                    visit(m, bi, t);
                }
            }
        }
    }
}

/// Inputs of fewer entries run their phases and top-label tables one after another and reduce
/// every table on the calling thread: short work, and small inputs run with the GIL held (the
/// glue's `DETACH_ENTRIES`, 2^15), when nothing may go to the pool.
const PAR_MIN_ENTRIES: usize = 1 << 20;

/// Whether an input of `n` rows of `k` scores is large enough for the parallel forms
/// ([`PAR_MIN_ENTRIES`]).
fn parallel(n: usize, k: usize) -> bool {
    n.saturating_mul(k) >= PAR_MIN_ENTRIES
}

/// One independent computation of tables ([`plan`]).
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Every max-prob grouping (of the metrics, in their order, each once): one top-label
    /// summary, then one table per (grouping, bin count) ([`toplabel_tables`]).
    TopLabel(Vec<Grouping>),
    /// One adaptive all-probabilities grouping: a histogram and gather pass, the tables of
    /// `gce` ([`allprobs_hist`]).
    Adaptive(Grouping),
    /// The even all-probabilities groupings at threshold `low` and, as its raised twins, at
    /// `raise` ([`allprobs_even::can_raise`]: the paper's 0 and 0.01), from one row pass
    /// ([`allprobs_even::stats_pair`]), class-conditional when `cc`, pooled when `pooled`
    /// (pooled tables summed over the class-conditional ones').
    Even { low: f64, raise: Option<f64>, cc: bool, pooled: bool },
}

impl Phase {
    /// The groupings this phase returns, in its order (what [`Phase::run`] returns them in).
    fn groupings(&self) -> Vec<Grouping> {
        match self {
            Phase::TopLabel(gs) => gs.clone(),
            Phase::Adaptive(g) => vec![*g],
            Phase::Even { low, raise, cc, pooled } => allprobs_even::pair_groupings(*low, *raise, *cc, *pooled),
        }
    }

    /// This phase's tables, from the input alone.
    fn run<T: Score>(&self, x: &Inputs<T>, bins: &[usize]) -> Result<Tables, KernelError> {
        match self {
            Phase::TopLabel(gs) => {
                let top = toplabel::summarise(x, &Checks::NONE)?;
                Ok(toplabel_tables(&top, x.k, gs, bins))
            }
            Phase::Adaptive(g) => {
                let (_, adaptive) = allprobs_hist::stats(x, g.class_conditional, g.threshold, &[], bins, &Checks::NONE)?;
                Ok(vec![(*g, adaptive)])
            }
            Phase::Even { low, raise, cc, pooled } => {
                allprobs_even::stats_pair(x, *low, *raise, bins, *cc, *pooled, &Checks::NONE)
            }
        }
    }
}

/// The phases that compute the grouping of every metric at the bin counts `bins`, each grouping
/// in exactly one phase, planned metric by metric (the order in which the tables are visited):
/// - top-label: every max-prob grouping in one phase (one shared summary);
/// - all-probabilities, adaptive: one phase per grouping;
/// - all-probabilities, even: one row pass for the lowest threshold not yet planned, which
///   also makes the tables of the next threshold when it lies below every first edge at every
///   bin count (its raised twins: the paper's 0 and 0.01 in one pass), for whichever
///   `class_conditional` asks for either. A later pass starts above every threshold planned
///   before it, so no grouping is made twice.
fn plan(metrics: &[(Grouping, Norm)], bins: &[usize]) -> Result<Vec<Phase>, KernelError> {
    let mut done = vec![false; metrics.len()];
    let mut phases = Vec::new();
    for m in 0..metrics.len() {
        while !done[m] {
            let phase = next_phase(metrics, &done, m, bins);
            let made = phase.groupings();
            let mut progress = false;
            for (d, (g, _)) in done.iter_mut().zip(metrics) {
                if !*d && made.contains(g) {
                    *d = true;
                    progress = true;
                }
            }
            // Each phase computes some grouping not done (checked thresholds compare equal to
            // themselves); never loop without progress.
            if !progress {
                return Err(KernelError::Parameter(format!("no kernel computes the grouping {:?}", metrics[m].0)));
            }
            phases.push(phase);
        }
    }
    Ok(phases)
}

/// The phase that computes the grouping of metric `m` (not `done`), with the groupings computed
/// together with it ([`plan`]).
fn next_phase(metrics: &[(Grouping, Norm)], done: &[bool], m: usize, bins: &[usize]) -> Phase {
    let g = metrics[m].0;
    if g.max_prob {
        let mut groupings: Vec<Grouping> = Vec::new();
        for ((h, _), &d) in metrics.iter().zip(done) {
            if h.max_prob && !d && !groupings.contains(h) {
                groupings.push(*h);
            }
        }
        return Phase::TopLabel(groupings);
    }
    if g.binning == Binning::Adaptive {
        return Phase::Adaptive(g);
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
    Phase::Even { low, raise, cc: asked(true), pooled: asked(false) }
}

/// The tables of the max-prob groupings `groupings` at every bin count, from the shared
/// summary. Each job is independent of the others (its own pass over the summary), so they are
/// made in parallel on large inputs: one job per (grouping, bin count) for even bins; one per
/// adaptive grouping, whose groups are gathered and sorted once for all its bin counts
/// ([`toplabel::adaptive_stats`]). On one thread they took about a tenth of `evaluate` at
/// (50k, 1000) (the pooled adaptive ones select over all rows, once per bin count before).
fn toplabel_tables(top: &toplabel::TopLabel, k: usize, groupings: &[Grouping], bins: &[usize]) -> Tables {
    let jobs: Vec<(Grouping, &[usize])> = groupings
        .iter()
        .flat_map(|&h| -> Vec<(Grouping, &[usize])> {
            match h.binning {
                Binning::Adaptive => vec![(h, bins)],
                Binning::Even => bins.chunks(1).map(|b| (h, b)).collect(),
            }
        })
        .collect();
    let table = |&(h, b): &(Grouping, &[usize])| match h.binning {
        Binning::Adaptive => toplabel::adaptive_stats(top, k, &h, b),
        Binning::Even => vec![toplabel::stats(top, k, &h, b[0])],
    };
    let tables: Vec<Vec<BinStats>> = if parallel(top.conf.len(), k) {
        jobs.par_iter().map(table).collect()
    } else {
        jobs.iter().map(table).collect()
    };
    // `jobs` is grouping-major: each grouping's bin counts in order.
    let mut tables = tables.into_iter().flatten();
    groupings.iter().map(|&h| (h, tables.by_ref().take(bins.len()).collect())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grouping(binning: Binning, max_prob: bool, class_conditional: bool, threshold: f64) -> Grouping {
        Grouping { binning, max_prob, class_conditional, threshold }
    }

    /// Metric lists: the paper's 32, even groupings at thresholds that can and cannot be
    /// raised twins (out of order, some class-conditional only), and a mix with repeats.
    fn metric_lists() -> Vec<Vec<(Grouping, Norm)>> {
        let paper: Vec<(Grouping, Norm)> = (0..32)
            .map(|i| {
                let b = if i & 16 != 0 { Binning::Adaptive } else { Binning::Even };
                let g = grouping(b, i & 8 == 0, i & 4 == 0, if i & 2 != 0 { 0.01 } else { 0.0 });
                (g, if i & 1 != 0 { Norm::L2 } else { Norm::L1 })
            })
            .collect();
        let even: Vec<(Grouping, Norm)> = [(0.3, true), (0.0, false), (0.02, true), (0.01, true), (0.5, false), (0.01, false)]
            .iter()
            .map(|&(t, cc)| (grouping(Binning::Even, false, cc, t), Norm::L1))
            .collect();
        let mixed = vec![
            (grouping(Binning::Adaptive, false, true, 0.0), Norm::L1),
            (grouping(Binning::Even, true, false, 0.0), Norm::L2),
            (grouping(Binning::Even, false, true, 0.01), Norm::Max),
            (grouping(Binning::Adaptive, false, true, 0.0), Norm::L2),
            (grouping(Binning::Adaptive, true, true, 0.01), Norm::L1),
            (grouping(Binning::Even, false, false, 0.0), Norm::L1),
        ];
        vec![paper, even, mixed]
    }

    /// Every metric's grouping is made by exactly one phase, and each phase returns the
    /// groupings it is planned to (`groupings`, what the plan marks done), in that order.
    #[test]
    fn the_plan_makes_every_grouping_once_and_phases_return_what_they_plan() {
        let (k, n) = (7usize, 400usize);
        let mut p: Vec<f64> = (0..n * k).map(|i| (i * 37 % 101) as f64 + 1.0).collect();
        for row in p.chunks_mut(k) {
            let t: f64 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= t);
        }
        let y: Vec<i64> = (0..n as i64).map(|i| i * 5 % k as i64).collect();
        let x = Inputs::new(&p, &y, k).unwrap();
        for metrics in metric_lists() {
            for bins in [&[15usize][..], &[2, 10, 15][..], &[120][..]] {
                let phases = plan(&metrics, bins).unwrap();
                for (g, _) in &metrics {
                    let makers = phases.iter().filter(|ph| ph.groupings().contains(g)).count();
                    assert_eq!(makers, 1, "{g:?} bins {bins:?}: {phases:?}");
                }
                for ph in &phases {
                    let made: Vec<Grouping> = ph.run(&x, bins).unwrap().into_iter().map(|(g, t)| {
                        assert_eq!(t.len(), bins.len());
                        g
                    }).collect();
                    assert_eq!(made, ph.groupings(), "{ph:?}");
                }
            }
        }
    }

    /// The phases of a large input run at once (one job each) and the values are those of
    /// one thread, and of each metric's own `gce`, bit for bit.
    #[test]
    fn phases_run_at_once_give_the_values_of_one_thread() {
        let (n, k) = (66_000usize, 16usize); // n k >= PAR_MIN_ENTRIES: the parallel form
        assert!(parallel(n, k));
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut p = vec![0.0f64; n * k];
        for row in p.chunks_mut(k) {
            for v in row.iter_mut() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *v = ((s >> 11) as f64 / (1u64 << 53) as f64 * 5.0).exp();
            }
            let t: f64 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= t);
        }
        let y: Vec<i64> = (0..n).map(|i| ((i as u64).wrapping_mul(0x9E37_79B9) >> 7) as i64 % k as i64).collect();
        let x = Inputs::new(&p, &y, k).unwrap();
        let metrics = metric_lists().swap_remove(0);
        let bins = [15usize, 30];
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| evaluate(&x, &metrics, &bins, &Checks::ALL).unwrap())
        };
        let one = run(1);
        let many = run(4);
        for (m, &(grouping, norm)) in metrics.iter().enumerate() {
            for (bi, &num_bins) in bins.iter().enumerate() {
                let i = m * bins.len() + bi;
                let single = crate::kernels::gce(&x, &crate::kernels::GceSpec { grouping, norm, num_bins }, &Checks::ALL).unwrap();
                assert_eq!(one[i].to_bits(), many[i].to_bits(), "{grouping:?} {norm:?} B={num_bins}");
                assert_eq!(one[i].to_bits(), single.to_bits(), "{grouping:?} {norm:?} B={num_bins}: {} vs {single}", one[i]);
            }
        }
    }
}
