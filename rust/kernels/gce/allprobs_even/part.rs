//! One chunk's contribution to a pass's tables ([`Part`]): its dense lanes and, per table,
//! the scattered path's touched slots and the outcome cells, folded in chunk order by
//! [`super::total::Total`].

use super::{Mode, Pass};

/// One chunk's dense lane (dense and counted modes): score sums by lane index, and
/// (counted mode) counts.
#[derive(Debug, Default)]
pub(crate) struct LanePart {
    pub(crate) sum0: Vec<f64>,
    pub(crate) count: Vec<f64>,
}

/// One chunk's contribution to one table, besides its lane.
#[derive(Debug, Default)]
pub(crate) struct TabPart {
    /// Scattered path: (slot, count, score sum), one per slot touched in the chunk.
    pub(crate) cells: Vec<(usize, f64, f64)>,
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
    /// Dense mode: entries dropped by the threshold, by lane index of their columns.
    pub(crate) dropped: Vec<f64>,
    pub(crate) tabs: Vec<TabPart>,
}

impl Part {
    pub(crate) fn new(mode: Mode, rows: usize, pass: &Pass) -> Self {
        let w = pass.width();
        let lanes = match mode {
            Mode::Dense | Mode::Counted => {
                pass.bounds.iter().map(|_| LanePart { sum0: vec![0.0; w], count: vec![0.0; w] }).collect()
            }
            Mode::Sparse => Vec::new(),
        };
        let dropped = if mode == Mode::Sparse { Vec::new() } else { vec![0.0; w] };
        Part { mode, rows, lanes, dropped, tabs: pass.lay.iter().map(|_| TabPart::default()).collect() }
    }
}
