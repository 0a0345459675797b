//! Top-label metrics from (confidence, correct[, predicted]) pairs, without a probability
//! matrix: the input a model-zoo record, an LLM harness or a detector gives.
//!
//! Pair i is what the top-label path ([`crate::kernels::gce::toplabel`]) derives from row i of a
//! matrix: its confidence (the row maximum), whether the prediction is correct, and the
//! predicted class (the first argmax), needed only for class-conditional groupings. From there
//! the binning is the matrix path's: [`EvenEdges`] and the [`LaneTables`] accumulation for even
//! bins, [`adaptive_tables`] for adaptive bins, [`BinStats`] and [`reduce`] for the metric.
//!
//! Even bins take one pass that validates, bins and adds each pair (confidence finite and
//! within [0, 1] up to `RANGE_TOL`, correct 0 or 1, predicted in [0, K)) over fixed chunks of
//! pairs whose tables are added in chunk order, so the result is the same for any number of
//! threads: pooled groupings in the pooled pass (`pooled`: a rounded bin guess and one
//! comparison with the exact edge, eight interleaved table copies), the others in the grouped
//! pass (`grouped`: `PairTables`, one 128-bit add per pair; larger tables buffer a
//! block of cells first). Adaptive bins validate first, then gather each group's kept pairs and
//! sort them. This file holds the input, its checks, the entry points and the driver the two
//! fused passes share (`run_chunk`).

use std::ops::Range;

use rayon::prelude::*;

use crate::kernels::core::chunks::row_chunks_split;
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::share::map_fold_here;
use crate::kernels::core::stats::LaneTables;
use crate::kernels::gce::toplabel::adaptive_tables;
use crate::kernels::core::validate::in_range;
use crate::kernels::core::reduce;
use crate::kernels::{Binning, BinStats, GceSpec, Grouping, KernelError, Norm, Score};

mod grouped;
mod pooled;
#[cfg(test)]
mod tests;

use grouped::{cells_of, fused_chunk, Buffers};
use pooled::{pooled_chunk, pooled_fits, push_pooled};

/// Pairs binned into the small per-block buffers at a time.
const BLOCK: usize = 256;
/// Pairs per chunk (fixed: the split depends only on N, never on the number of threads).
const CHUNK: usize = 1 << 16;

/// N top-label pairs: confidence, correct (0/1) and, for class-conditional groupings, the
/// predicted class in [0, K).
#[derive(Clone, Copy)]
pub struct Pairs<'a, T: Score> {
    pub conf: &'a [T],
    pub correct: &'a [u8],
    pub pred: Option<&'a [i64]>,
    pub k: usize,
    pub n: usize,
}

impl<'a, T: Score> Pairs<'a, T> {
    /// Checks the lengths agree and the input is not empty (values are checked by the passes).
    pub fn new(conf: &'a [T], correct: &'a [u8], pred: Option<&'a [i64]>, k: usize) -> Result<Self, KernelError> {
        let n = conf.len();
        if correct.len() != n {
            return Err(KernelError::Shape(format!(
                "correct has {} entries but confidence has {n}; pass one outcome per confidence",
                correct.len()
            )));
        }
        if let Some(p) = pred {
            if p.len() != n {
                return Err(KernelError::Shape(format!(
                    "predicted has {} entries but confidence has {n}; pass one predicted class per confidence",
                    p.len()
                )));
            }
        }
        if n == 0 {
            return Err(KernelError::Shape("confidence and correct are empty; pass at least one prediction".into()));
        }
        if k == 0 {
            return Err(KernelError::Shape("num_classes must be at least 1".into()));
        }
        Ok(Pairs { conf, correct, pred, k, n })
    }

    /// Pair `i`: its confidence (as f64) and outcome byte.
    #[inline(always)]
    fn at(&self, i: usize) -> (f64, u8) {
        (self.conf[i].to_f64(), self.correct[i])
    }

    /// The error of pair `i`, or None if it passes every check (read again: another thread
    /// may have changed it since a pass saw it fail).
    fn error(&self, i: usize) -> Option<KernelError> {
        let (s, c) = self.at(i);
        if pair_bad(s, 0) {
            return Some(KernelError::BadConfidence { index: i, value: s });
        }
        if pair_bad(0.5, c) {
            return Some(KernelError::BadCorrect { index: i, value: c });
        }
        let p = self.pred?[i];
        class_out_of_range(p, self.k).then_some(KernelError::BadPredicted { index: i, value: p, num_classes: self.k })
    }

    /// The first failing pair of `rows`, as an error; [`KernelError::InputChanged`] if a pass
    /// saw one fail but none fails any more (another thread wrote to the input meanwhile).
    fn first_error(&self, rows: Range<usize>) -> KernelError {
        rows.into_iter().find_map(|i| self.error(i)).unwrap_or(KernelError::InputChanged)
    }

    /// Validates every pair (in parallel chunks); the error names the lowest failing index.
    pub fn validate(&self) -> Result<(), KernelError> {
        let chunks = row_chunks_split(self.n, 1, CHUNK, CHUNK);
        let bad: Vec<bool> = chunks.par_iter().map(|r| !chunk_ok(self, r.clone())).collect();
        match bad.iter().position(|&b| b) {
            Some(c) => Err(self.first_error(chunks[c].clone())),
            None => Ok(()),
        }
    }
}

/// Whether a pair fails its value checks: a confidence outside [0, 1] up to `RANGE_TOL`
/// (NaN included: [`in_range`]), or an outcome other than 0 or 1. The one rule of every
/// portable pass (branch-free; the AVX2 twins use
/// [`out_of_range_avx2`](crate::kernels::core::validate::out_of_range_avx2)).
#[inline(always)]
fn pair_bad(s: f64, c: u8) -> bool {
    !in_range(s) | (c > 1)
}

/// The bound a predicted class must stay below: `k`, capped at `i64::MAX` so that a negative id
/// (cast to u64, at least 2^63) is never below it, and so that the vector checks, which compare
/// as i64, use the same bound.
#[inline(always)]
fn class_limit(k: usize) -> i64 {
    k.min(i64::MAX as usize) as i64
}

/// Whether a predicted class is outside `[0, k)`: the one check of a class id, branch-free.
#[inline(always)]
fn class_out_of_range(v: i64, k: usize) -> bool {
    (v as u64) >= class_limit(k) as u64
}

crate::kernels::core::simd::multiversion! {
    /// Whether every pair of `rows` passes the checks (branch-free, vectorisable).
    fn chunk_ok<T: Score>(x: &Pairs<'_, T>, rows: Range<usize>) -> bool {
        let mut bad = false;
        for (s, &c) in x.conf[rows.clone()].iter().zip(&x.correct[rows.clone()]) {
            bad |= pair_bad(s.to_f64(), c);
        }
        if let Some(p) = x.pred {
            for &v in &p[rows] {
                bad |= class_out_of_range(v, x.k);
            }
        }
        !bad
    }
}

crate::kernels::core::simd::multiversion! {
    /// Whether every predicted class of `rows` is in [0, k) (branch-free, vectorisable).
    fn preds_ok<T: Score>(x: &Pairs<'_, T>, rows: Range<usize>) -> bool {
        let p = x.pred.map_or(&[][..], |p| &p[rows]);
        !p.iter().fold(false, |bad, &v| bad | class_out_of_range(v, x.k))
    }
}

/// Refuses groupings the pairs cannot give: all-probabilities metrics need every class's
/// probability; class-conditional ones need the predicted classes.
fn check_grouping<T: Score>(x: &Pairs<'_, T>, g: &Grouping, bins: &[usize]) -> Result<(), KernelError> {
    if !g.max_prob {
        return Err(KernelError::Parameter(
            "max_prob=False needs every class's probability; top-label pairs hold only the top one: pass labels and the probability matrix".into(),
        ));
    }
    if g.class_conditional && x.pred.is_none() {
        return Err(KernelError::Parameter(
            "class-conditional metrics need the predicted class of each pair: pass predicted and num_classes".into(),
        ));
    }
    for &b in bins {
        g.check(b)?;
        g.check_table(x.k, b)?;
    }
    Ok(())
}

/// Per-(group, bin) statistics of a top-label grouping for each bin count in `bins`.
pub fn stats_many<T: Score>(x: &Pairs<'_, T>, g: &Grouping, bins: &[usize]) -> Result<Vec<BinStats>, KernelError> {
    check_grouping(x, g, bins)?;
    match g.binning {
        Binning::Even => bins.iter().map(|&b| even_stats(x, g, &EvenEdges::new(b))).collect(),
        Binning::Adaptive => {
            x.validate()?;
            let members = group_members(x, g)?;
            Ok(adaptive_tables(members, bins, g.threshold))
        }
    }
}

/// Per-(group, bin) statistics of one top-label grouping and bin count.
pub fn bin_stats<T: Score>(x: &Pairs<'_, T>, g: &Grouping, num_bins: usize) -> Result<BinStats, KernelError> {
    Ok(stats_many(x, g, &[num_bins])?.pop().expect("one bin count in, one table out"))
}

/// The General Calibration Error of one top-label metric.
pub fn gce<T: Score>(x: &Pairs<'_, T>, spec: &GceSpec) -> Result<f64, KernelError> {
    let st = bin_stats(x, &spec.grouping, spec.num_bins)?;
    Ok(reduce::reduce(&st, spec.norm, spec.grouping.class_conditional))
}

/// Values of top-label `metrics` at each bin count, row-major `[metric][bin count]`; each
/// distinct grouping is binned once for all bin counts and norms.
pub fn evaluate<T: Score>(x: &Pairs<'_, T>, metrics: &[(Grouping, Norm)], bins: &[usize]) -> Result<Vec<f64>, KernelError> {
    for (g, _) in metrics {
        check_grouping(x, g, bins)?;
    }
    x.validate()?;
    let mut out = vec![f64::NAN; metrics.len() * bins.len()];
    let mut done = vec![false; metrics.len()];
    for m in 0..metrics.len() {
        if done[m] {
            continue;
        }
        let g = metrics[m].0;
        let tables: Vec<BinStats> = match g.binning {
            Binning::Even => bins.iter().map(|&b| even_stats(x, &g, &EvenEdges::new(b))).collect::<Result<_, _>>()?,
            Binning::Adaptive => {
                let members = group_members(x, &g)?;
                adaptive_tables(members, bins, g.threshold)
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

/// Even-binned statistics: validate and bin every pair in one pass over fixed chunks, whose
/// tables are added in chunk order.
fn even_stats<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges) -> Result<BinStats, KernelError> {
    let chunks = row_chunks_split(x.n, 1, CHUNK, CHUNK);
    let mut total: Option<BinStats> = None;
    let res = map_fold_here(
        &chunks,
        |rows| even_chunk(x, g, e, rows),
        |part| match &mut total {
            None => total = Some(part),
            Some(t) => t.add(&part),
        },
    );
    if res.is_err() {
        // The first failing pair over the whole input, whichever chunk reported first.
        return Err(x.first_error(0..x.n));
    }
    let mut st = total.expect("at least one chunk");
    st.finish();
    st.edges = e.boundaries().repeat(st.groups);
    Ok(st)
}

/// One chunk of [`even_stats`]; `Err(())` if a pair fails a check.
fn even_chunk<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, rows: Range<usize>) -> Result<BinStats, ()> {
    let groups = g.groups(x.k);
    if !g.class_conditional && pooled_fits(e, g.threshold) {
        // Pooled groupings ignore the predicted classes but check them: the same tables (and
        // bitwise the same values) with or without them.
        if !preds_ok(x, rows.clone()) {
            return Err(());
        }
        return pooled_chunk(&Pairs { pred: None, ..*x }, g.threshold, e, rows, push_pooled);
    }
    if groups * e.num_bins() <= LaneTables::SMALL {
        return fused_chunk(x, g, e, rows);
    }
    let mut st = BinStats::zeros(groups, e.num_bins());
    let mut acc = LaneTables::new(st.count.len());
    let mut b = Box::new(Buffers { scores: [0.0; BLOCK], cells: [0; BLOCK], incs: [0; BLOCK] });
    let drop = acc.discard() as u32;
    let mut biased = [0i64; BLOCK];
    let mut ok = true;
    for start in rows.clone().step_by(BLOCK) {
        let block = start..(start + BLOCK).min(rows.end);
        let n = block.len();
        ok &= cells_of(x, g, e, drop, block, &mut b);
        crate::kernels::core::units::biased_into(&b.scores[..n], &mut biased[..n]);
        acc.push_slices(&b.cells[..n], &biased[..n], &b.incs[..n]);
        acc.pushed(n, &mut st);
    }
    if !ok {
        return Err(());
    }
    acc.flush(&mut st);
    Ok(st)
}

/// Pairs per run of a fused pass's tables: spread over the four (pooled: eight) copies, at
/// most [`units::RUN`](crate::kernels::core::units::RUN) per copy, so that the copies' i64
/// unit sums cannot overflow (and the `count + correct * 2^32` cells of
/// [`grouped::PairTables`] stay exact).
const RUN: usize = 4 * crate::kernels::core::units::RUN;

/// Interleaved tables that pairs are pushed into and that are folded into a [`BinStats`] run
/// by run (`grouped::PairTables`, `pooled::PooledTables`).
trait RunTables {
    /// Pairs pushed since the last fold.
    fn pending(&mut self) -> &mut usize;
    /// Folds the tables into `st` (exact unit sums) and clears them.
    fn fold_run(&mut self, st: &mut BinStats);
}

/// One chunk of a fused pass: the pairs of `rows`, `span` at a time, go into `t` through `push`
/// (false if a pair fails a check), and `t` is folded into a `groups` x `bins` table every
/// [`RUN`] pairs (so that its counts stay exact) and at the end; `Err(())` if a pair
/// failed.
fn run_chunk<Tb: RunTables>(
    groups: usize,
    bins: usize,
    rows: Range<usize>,
    span: usize,
    t: &mut Tb,
    mut push: impl FnMut(Range<usize>, &mut Tb) -> bool,
) -> Result<BinStats, ()> {
    let mut st = BinStats::zeros(groups, bins);
    let mut ok = true;
    for start in rows.clone().step_by(span) {
        let block = start..(start + span).min(rows.end);
        *t.pending() += block.len();
        ok &= push(block, t);
        if *t.pending() >= RUN {
            t.fold_run(&mut st);
        }
    }
    t.fold_run(&mut st);
    if !ok {
        return Err(());
    }
    Ok(st)
}

/// Each group's kept (score, outcome) pairs, in input order (validated input: a predicted
/// class out of range now was written by another thread since, [`KernelError::InputChanged`]).
fn group_members<T: Score>(x: &Pairs<'_, T>, g: &Grouping) -> Result<Vec<Vec<(f64, bool)>>, KernelError> {
    let mut members: Vec<Vec<(f64, bool)>> = vec![Vec::new(); g.groups(x.k)];
    for i in 0..x.n {
        let s = x.conf[i].to_f64();
        if s > g.threshold {
            let group = match (g.class_conditional, x.pred) {
                (true, Some(p)) => p[i] as u64 as usize,
                _ => 0,
            };
            members.get_mut(group).ok_or(KernelError::InputChanged)?.push((s, x.correct[i] == 1));
        }
    }
    Ok(members)
}

