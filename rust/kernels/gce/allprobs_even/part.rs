//! One chunk's contribution to a pass's tables ([`Part`]): its dense lanes and, per table,
//! the scattered path's touched slots and the outcome cells, added up by
//! [`super::total::Total`]. Score sums are whole grid units ([`units`]), exact.

use super::{Mode, Pass, LANES};
use crate::kernels::core::units;

/// One chunk's dense lane (dense and counted modes): score sums by lane index, and
/// (counted mode) counts. `run` and `count` have padding cells up to a multiple of eight (the
/// AVX2 pass takes a row's tail as a whole group of eight), holding nothing after a fold.
#[derive(Debug, Default)]
pub(crate) struct LanePart {
    /// The current run's lane-biased units ([`units::biased`], wrapping adds): every cell takes
    /// one add per entry of its lane index, the lane-biased units of the entry if in the
    /// lane, else those of 0.0 ([`units::SHIFT_BITS`]), so that each cell has taken [`Part::pending`]
    /// adds.
    pub(crate) run: Vec<i64>,
    /// The exact unit sums of the folded runs ([`Part::fold_lanes`]).
    pub(crate) units: Vec<i128>,
    pub(crate) count: Vec<f64>,
}

/// One chunk's contribution to one table, besides its lane.
#[derive(Debug, Default)]
pub(crate) struct TabPart {
    /// Scattered path: (slot, count, unit sum), one per slot touched in the chunk, then the
    /// runs taken out of its cells (count 0).
    pub(crate) cells: Vec<(usize, f64, i128)>,
    /// Outcome cells (`group * nb + bin`), one per row whose true-label score is kept.
    pub(crate) outcome: Vec<usize>,
    /// The raised twin's outcome cells (none without one).
    pub(crate) raised: Vec<usize>,
}

/// One chunk's contribution to every table.
#[derive(Debug)]
pub(crate) struct Part {
    pub(crate) mode: Mode,
    pub(crate) rows: usize,
    /// One per lane of the pass (dense and counted modes).
    pub(crate) lanes: Vec<LanePart>,
    /// Adds every lane cell takes per row: one (class-conditional), or one per group of
    /// [`LANES`] columns, the last padded (pooled).
    per_row: usize,
    /// Rows take more than [`units::RUN`] adds per lane cell: the row pass reserves them a
    /// block at a time ([`Part::reserve`]); otherwise runs are whole rows ([`Part::run_rows`]).
    pub(crate) long: bool,
    /// Adds every lane cell has taken in the current run (at most [`units::RUN`]), as
    /// counted so far ([`Part::reserve`], [`Part::ran`]).
    pub(crate) pending: usize,
    /// Dense mode: entries dropped by the threshold, by lane index of their columns.
    pub(crate) dropped: Vec<f64>,
    pub(crate) tabs: Vec<TabPart>,
}

impl Part {
    pub(crate) fn new(mode: Mode, rows: usize, pass: &Pass) -> Self {
        let w = pass.width();
        let lanes = match mode {
            Mode::Dense | Mode::Counted => pass
                .bounds
                .iter()
                .map(|_| {
                    let padded = w.next_multiple_of(8);
                    LanePart { run: vec![0; padded], units: vec![0; w], count: vec![0.0; padded] }
                })
                .collect(),
            Mode::Sparse => Vec::new(),
        };
        let dropped = if mode == Mode::Sparse { Vec::new() } else { vec![0.0; w] };
        let per_row = if pass.cc { 1 } else { pass.k.div_ceil(LANES).max(1) };
        Part {
            mode,
            rows,
            lanes,
            per_row,
            long: per_row > units::RUN,
            pending: 0,
            dropped,
            tabs: pass.lay.iter().map(|_| TabPart::default()).collect(),
        }
    }

    /// Rows per run: as many as keep a lane cell's adds within [`units::RUN`] (one for long
    /// rows, whose runs are cut within the row).
    pub(crate) fn run_rows(&self) -> usize {
        if self.mode == Mode::Sparse {
            usize::MAX
        } else {
            (units::RUN / self.per_row).max(1)
        }
    }

    /// Counts the adds of `rows` more rows (at most [`Part::run_rows`]; long rows count
    /// their own) and folds the run.
    pub(crate) fn ran(&mut self, rows: usize) {
        if !self.long {
            self.pending += rows * self.per_row;
        }
        self.fold_lanes();
    }

    /// Long rows only: makes room for `adds` more adds into every lane cell (at most
    /// [`units::RUN`]), folding the run first if it would grow past [`units::RUN`].
    #[inline(always)]
    pub(crate) fn reserve(&mut self, adds: usize) {
        if self.pending + adds > units::RUN {
            self.fold_lanes();
        }
        self.pending += adds;
    }

    /// Folds every lane cell's run into its exact sum (the run less one bias per add: exact,
    /// as the run's unit sum fits in an `i64` and wrapping arithmetic is exact modulo 2^64),
    /// and starts a new run.
    #[inline(never)]
    pub(crate) fn fold_lanes(&mut self) {
        let n = self.pending as u64;
        for lp in &mut self.lanes {
            for (u, r) in lp.units.iter_mut().zip(&mut lp.run) {
                *u += units::unbias(std::mem::take(r), n);
            }
            let w = lp.units.len();
            lp.run[w..].fill(0);
            lp.count[w..].fill(0.0);
        }
        self.pending = 0;
    }
}
