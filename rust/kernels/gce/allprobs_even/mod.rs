//! All-probabilities metrics with even bins (SCE and its relatives): every kept entry of the
//! matrix goes into a (group, bin) cell. Per entry only the count and the score sum change; the
//! outcome is 1 only at the true label, so it is added once per row.
//!
//! # What every path computes (exact sums in grid units)
//! Each kept score adds its grid units ([`units`](crate::kernels::core::units),
//! round(x * 2^50)) to its cell; a cell holds the exact integer sum of its scores' units (the
//! table's `units`), and its `sum_score` is that sum rounded once. Counts and outcome counts
//! are whole numbers, exact too. Integer sums do not depend on order, so the tables are bitwise
//! the same whatever the strategy, the instruction set, the chunking, the number of threads,
//! and whichever other bin counts share the pass (several tables from one pass are bitwise
//! the single-table ones), and bitwise the tables every other path of the crate builds from
//! the same scores. Pooled tables of at most `POOL_FROM_CLASSES` class-conditional cells are
//! their class-conditional tables summed over the classes (`collapse`); larger ones are a
//! pooled pass's: the same table either way, only the cost differs. Runs of adds are kept in
//! `i64` (at most `units::RUN` per cell, so they cannot overflow) and folded into the `i128`
//! sums of the chunk's part (`Part`), which `Total` adds up.
//!
//! # Two thresholds from one pass ("raised twins", `Cut`)
//! A table at a raised threshold (0.01, below every first edge) has the same bins above 0 as
//! the table at the lower threshold (0), holding the same scores; its bin 0
//! holds the scores in (0.01, first edge). The pass flags those too (one more vector
//! comparison) and sends them through the scattered path into bin 0's row of the scattered
//! table, which holds nothing else; the twin's bin 0 is that row, its bins above 0 are its
//! table's, and its outcomes are counted apart. So `evaluate` ([`stats_pair`]) computes the
//! paper's two thresholds of every even all-probabilities metric, class-conditional and
//! pooled, in one row pass, bitwise the tables of `gce`. The scattered entries are logged
//! once per chunk as (column, score), and each table applies the log to its cells in a loop of
//! its own (`Scratch`).
//!
//! # Strategies, chosen per chunk from its first row (they only change the speed)
//! - [`Mode::Dense`], when almost every entry is kept and in the narrowest bin 0 (a
//!   many-class softmax with threshold 0): each distinct bin 0 (a lane) is summed in a dense
//!   per-class (pooled: per-lane) array by branch-free masked adds of units (an entry outside
//!   the lane adds those of 0.0; see `LanePart`); only the few other entries (a bit mask of
//!   the vector comparison) take the scattered path. When few entries lie between the
//!   narrowest and the widest first edge, the tables share the narrowest lane instead
//!   (`shared_lane`, [`Pass::shared`]): one masked add per entry whatever the bin counts, each
//!   wider table taking the rest of its bin 0 through the scattered path, beside the lane. A
//!   table's bin 0 count is the chunk's entries minus those dropped and minus the counts it
//!   scattered into bins above 0.
//! - [`Mode::Counted`], when the threshold drops many entries but keeps many in bin 0: as
//!   dense, with each lane's count also in a dense array; only kept entries outside the
//!   narrowest lane (or above the raised threshold) are scattered.
//! - [`Mode::Sparse`], when nearly every entry is dropped: only the kept entries are visited,
//!   each through the scattered path, bin 0 included.
//!
//! Rows are checked in the same read. The vector pass checks ranges only where they can fail:
//! an entry in a lane is in (threshold, first edge), inside [0, 1]; every scattered entry is
//! checked on its way; entries dropped but not scattered, which are <= threshold < 1, with one vector
//! comparison against the lower bound. The row sum is the lane sum of
//! [`row_sum_and_bad`](crate::kernels::core::validate::row_sum_and_bad), so a
//! row fails exactly when the portable check fails it.
//!
//! An input written by another thread during the call gives some value or an error, never an
//! access outside the tables: vector loads and stores use offsets that depend on K only; the
//! scattered path re-reads a value from the row, and a value changed meanwhile lands in the
//! cell of its new value (bins are clamped into the table); a label is checked against K at
//! its row; a row that failed and passes when read again is [`KernelError::InputChanged`].

use std::ops::Range;

use rayon::prelude::*;

use crate::kernels::core::chunks::{map_fold, row_chunks_min, PerThread};
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::validate::{failed_row_error, labels as check_labels, Checks};
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

mod layout;
mod part;
mod pooled;
mod rows;
mod scatter;
mod total;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;

pub(crate) use layout::{Cut, Layout, Pass};
pub(crate) use part::{LanePart, Part, TabPart};
pub(crate) use rows::accumulate;
pub(crate) use scatter::Scratch;
use pooled::pooled_tables;
use rows::choose;
use total::Total;
// What the tests reach through this module (`tests.rs`).
#[cfg(test)]
pub(crate) use pooled::{collapse, pooled_from_classes};
#[cfg(test)]
pub(crate) use rows::accumulate_portable;

/// Lanes of a pooled pass's bin 0 (column modulo `LANES`).
pub(crate) const LANES: usize = 8;

/// How a chunk treats bin 0 (see the module doc). Only the speed depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Dense,
    Counted,
    Sparse,
}

/// Statistics for each bin count in `bins`, from one pass over the data. Each table is
/// bitwise the table of a pass with that bin count alone.
pub fn stats<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<BinStats>, KernelError> {
    stats_with(x, g, bins, check, Force::NONE, Cut::at(g.threshold))
}

/// The tables of [`stats`] for `g`, and those of the same grouping at threshold `raise`, from
/// one pass (see `Cut`): each bitwise the table of a pass at its own threshold alone. Refused
/// unless [`can_raise`].
pub fn stats_raised<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    raise: f64,
    check: &Checks,
) -> Result<(Vec<BinStats>, Vec<BinStats>), KernelError> {
    let mut v = stats_with(x, g, bins, check, Force::NONE, raised_cut(g.threshold, raise, bins)?)?;
    let raised = v.split_off(bins.len());
    Ok((v, raised))
}

/// The cut of a pass at `thr` with raised twins at `raise`, if [`can_raise`].
fn raised_cut(thr: f64, raise: f64, bins: &[usize]) -> Result<Cut, KernelError> {
    if !can_raise(thr, raise, bins) {
        return Err(KernelError::Parameter(format!(
            "a raised threshold must lie above the threshold {thr} and below the first edge of \
             every bin count; {raise} does not for bins {bins:?}"
        )));
    }
    Ok(Cut { thr, raise })
}

/// Whether the tables of threshold `raise` can be the raised twins of those of `thr` for
/// every bin count of `bins` (`Cut`): `raise` is finite, above `thr`, and below every first
/// edge.
pub fn can_raise(thr: f64, raise: f64, bins: &[usize]) -> bool {
    raise > thr && raise.is_finite() && bins.iter().all(|&b| raise < EvenEdges::new(b).first_edge())
}

/// What a pass may be forced to do (tests: every strategy and lane layout gives the same
/// tables): the strategy of every chunk, and whether the dense lane is shared
/// ([`Pass::new`]); `None` lets the pass choose.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Force {
    pub(crate) mode: Option<Mode>,
    pub(crate) shared: Option<bool>,
}

impl Force {
    pub(crate) const NONE: Force = Force { mode: None, shared: None };
}

/// Whether `pass` over `x` should share one dense lane among its tables ([`Pass::shared`]):
/// when few kept scores lie between the narrowest and the widest first
/// edge, each of which a shared lane sends through the scattered path (twice for each table
/// whose first edge is above it). Rows spread over the input are sampled (at most
/// [`SHARE_SAMPLE`] of them); shared when at most 1/[`SHARE_BELOW`] of their entries lie
/// there. Measured (2026-11-28, AMD EPYC, `evaluate`'s five bin counts): at (50k, 1000)
/// float32, where 0.5% of the entries lie between 0.02 and 0.1, the shared lane made the even
/// all-probabilities tables a quarter faster (122 against 166 ms); at (1M, 10), where a fifth
/// do, 25% slower. Only the speed depends on it.
fn shared_lane<T: Score>(x: &Inputs<T>, pass: &Pass) -> bool {
    let (narrow, widest, thr) = (pass.narrow(), pass.widest(), pass.cut.thr);
    // (Inputs hold at least one row.)
    if narrow >= widest {
        return false;
    }
    let rows = x.n.min(SHARE_SAMPLE);
    let (mut between, mut seen) = (0usize, 0usize);
    for j in 0..rows {
        for v in x.row(j * x.n / rows) {
            let s = v.to_f64();
            between += usize::from(s > thr && s >= narrow && s < widest);
        }
        seen += x.k;
    }
    between * SHARE_BELOW <= seen
}

/// Rows [`shared_lane`] samples, at most ...
const SHARE_SAMPLE: usize = 64;
/// ... and the share (1/this) of their entries between the first edges it allows.
const SHARE_BELOW: usize = 32;

/// [`stats`], with the strategy forced (tests: every strategy gives the same tables) and the
/// pass's thresholds `cut`: the tables, then (raised) their twins.
pub(crate) fn stats_with<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
    force: Force,
    cut: Cut,
) -> Result<Vec<BinStats>, KernelError> {
    if g.class_conditional {
        return pass_tables(x, true, bins, check, force, cut);
    }
    let (mut tables, mut twins) = pooled_tables(x, bins, check, force, cut, None)?;
    tables.append(&mut twins);
    Ok(tables)
}

/// The tables of both `class_conditional` groupings of the even all-probabilities metrics
/// at threshold `thr`, and at `raise` when it is given ([`can_raise`]), from one row pass
/// (pooled tables collapsed from the class-conditional ones, but for those too large:
/// `pooled_from_classes`): `evaluate`'s. Only those of `cc` and `pooled` asked for.
pub fn stats_pair<T: Score>(
    x: &Inputs<T>,
    thr: f64,
    raise: Option<f64>,
    bins: &[usize],
    cc: bool,
    pooled: bool,
    check: &Checks,
) -> Result<Vec<(Grouping, Vec<BinStats>)>, KernelError> {
    let cut = match raise {
        Some(r) => raised_cut(thr, r, bins)?,
        None => Cut::at(thr),
    };
    let (mut ct, mut cw) = (Vec::new(), Vec::new());
    if cc {
        let mut v = pass_tables(x, true, bins, check, Force::NONE, cut)?;
        cw = v.split_off(bins.len());
        ct = v;
    }
    // In `pair_groupings`' order: pooled, then class-conditional; each at `thr`, then `raise`.
    let mut tables = Vec::new();
    if pooled {
        let classes = cc.then_some((&ct[..], &cw[..]));
        let (pt, pw) = pooled_tables(x, bins, check, Force::NONE, cut, classes)?;
        tables.push(pt);
        tables.extend(raise.map(|_| pw));
    }
    if cc {
        tables.push(ct);
        tables.extend(raise.map(|_| cw));
    }
    Ok(pair_groupings(thr, raise, cc, pooled).into_iter().zip(tables).collect())
}

/// The groupings [`stats_pair`] returns, in its order: the pooled ones (when `pooled`), then
/// the class-conditional ones (when `cc`), each at `thr`, then at `raise` when given.
pub fn pair_groupings(thr: f64, raise: Option<f64>, cc: bool, pooled: bool) -> Vec<Grouping> {
    let at = |class_conditional: bool, threshold: f64| Grouping {
        binning: crate::kernels::Binning::Even,
        max_prob: false,
        class_conditional,
        threshold,
    };
    let mut out = Vec::new();
    for c in [false, true].into_iter().filter(|&c| if c { cc } else { pooled }) {
        out.push(at(c, thr));
        out.extend(raise.map(|r| at(c, r)));
    }
    out
}

/// One row pass over `bins` (class-conditional exactly when `cc`): its tables, then (raised)
/// their twins.
fn pass_tables<T: Score>(
    x: &Inputs<T>,
    cc: bool,
    bins: &[usize],
    check: &Checks,
    force: Force,
    cut: Cut,
) -> Result<Vec<BinStats>, KernelError> {
    if check.labels {
        check_labels(x)?;
    }
    if bins.is_empty() {
        return Ok(Vec::new());
    }
    let pass = Pass::new(cc, x.k, bins, cut);
    let pass = if force.shared.unwrap_or_else(|| shared_lane(x, &pass)) { pass.shared() } else { pass };
    let mut total: Vec<Total> = pass.lay.iter().map(Total::new).collect();
    let mut raised: Vec<Total> = if cut.raised() { pass.lay.iter().map(Total::new).collect() } else { Vec::new() };
    let scratch = PerThread::<Option<Scratch>>::new();
    let chunks = chunks(x.n, x.k, cc);
    let many = chunks.len() > 1 && pass.lay.len() > 1;
    map_fold(
        &chunks,
        |rows| scratch.with(|guard| {
            let sc = guard.get_or_insert_with(|| Scratch::new(&pass));
            let mode = force.mode.unwrap_or_else(|| choose(x.row(rows.start), &pass));
            let mut part = Part::new(mode, rows.len(), &pass);
            let failed = accumulate(x, rows.clone(), &pass, &mut part, sc, check);
            sc.drain(&pass, &mut part);
            match failed {
                None => Ok(part),
                // A row failing a check, or a label out of range although labels were
                // checked (then no row fails: another thread wrote to the input).
                Some(i) => Err(failed_row_error(x, rows.start..i + 1, check)),
            }
        }),
        |part| {
            let fold = |t: usize, total: &mut Total, raised: Option<&mut Total>| {
                let p = &part.tabs[t];
                total.fold(&pass.lay[t], &part, part.lanes.get(pass.lane_of[t]), p);
                if let Some(r) = raised {
                    for &o in &p.raised {
                        r.outcome[o] += 1.0;
                    }
                }
            };
            // The calling thread adds each part while the pool waits (`evaluate`'s six
            // class-conditional tables at (50k, 1000): 16 ms a call on one thread, all of it
            // serial): the tables are added in parallel, each its parts in chunk order (with
            // several chunks only, so a large input, with the GIL released).
            match (many, raised.is_empty()) {
                (false, _) => {
                    for (t, tot) in total.iter_mut().enumerate() {
                        fold(t, tot, raised.get_mut(t));
                    }
                }
                (true, true) => total.par_iter_mut().enumerate().for_each(|(t, tot)| fold(t, tot, None)),
                (true, false) => total
                    .par_iter_mut()
                    .zip(raised.par_iter_mut())
                    .enumerate()
                    .for_each(|(t, (tot, r))| fold(t, tot, Some(r))),
            }
        },
    )?;
    // A twin's cells are its table's: bins above 0 the same, bin 0 in bin 0's row.
    for ((r, t), l) in raised.iter_mut().zip(&total).zip(&pass.lay) {
        let bins = l.low(0);
        r.count[..bins].copy_from_slice(&t.count[..bins]);
        r.units[..bins].copy_from_slice(&t.units[..bins]);
    }
    let twins = raised.into_iter().zip(&pass.lay).map(|(t, l)| t.into_stats(l, true));
    Ok(total.into_iter().zip(&pass.lay).map(|(t, l)| t.into_stats(l, false)).chain(twins).collect())
}

/// The row chunks of a pass (only the speed depends on them: sums are exact): at least 1024
/// rows' worth of a dense chunk's lane each, as chunk parts are added up on one thread, so
/// they must be few and small next to the work of their chunk.
pub(crate) fn chunks(n: usize, k: usize, cc: bool) -> Vec<Range<usize>> {
    let width = if cc { k } else { LANES };
    row_chunks_min(n, k, 1024 * width)
}
