//! The whole input's table of one layout, added up from the chunk parts ([`Total`]), and its
//! statistics. Counts are whole numbers and score sums whole grid units, both exact: the
//! table does not depend on the order in which parts are added.

use super::{LanePart, Layout, Mode, Part, TabPart, LANES};
use crate::kernels::BinStats;

/// The whole input's table in slots: counts, exact unit sums and outcome counts.
pub(super) struct Total {
    pub(super) count: Vec<f64>,
    pub(super) units: Vec<i128>,
    pub(super) outcome: Vec<f64>,
}

impl Total {
    pub(super) fn new(l: &Layout) -> Self {
        let groups = if l.cc { l.k } else { 1 };
        Total { count: vec![0.0; l.slots()], units: vec![0; l.slots()], outcome: vec![0.0; groups * l.nb] }
    }

    /// Adds a chunk's part of table `l` (with lane `lane`, none for sparse chunks; its runs
    /// folded: [`Part::fold_lanes`]).
    pub(super) fn fold(&mut self, l: &Layout, part: &Part, lane: Option<&LanePart>, p: &TabPart) {
        // Counts are integers below 2^53: exact in any order.
        match (part.mode, lane) {
            (Mode::Dense, Some(lane)) => {
                for z in 0..l.width() {
                    self.count[l.low(z)] += (part.rows * l.columns_of(z)) as f64 - part.dropped[z];
                    self.units[l.low(z)] += lane.units[z];
                }
            }
            (Mode::Counted, Some(lane)) => {
                for z in 0..l.width() {
                    self.count[l.low(z)] += lane.count[z];
                    self.units[l.low(z)] += lane.units[z];
                }
            }
            _ => {}
        }
        for &(slot, n, u) in &p.cells {
            self.count[slot] += n;
            self.units[slot] += u;
            if part.mode == Mode::Dense && slot >= l.width() {
                // In a bin above 0, so not in the bin 0 count of this slot's columns, which
                // counted every entry not dropped (pooled: all in lane 0); or in bin 0 itself
                // beyond the lane (a table whose first edge lies above the lane's end), counted
                // there already: added above, taken off here. Bin 0's row holds entries of the
                // raised twin's bin 0 only.
                self.count[l.zero_of(slot)] -= n;
            }
        }
        for &o in &p.outcome {
            self.outcome[o] += 1.0;
        }
    }

    /// The table's statistics (`units` filled, `sum_score` from them); a raised `twin`'s (see
    /// `Cut`) take bin 0 from bin 0's row of the scattered path, a table's from its lane (the
    /// low region).
    pub(super) fn into_stats(self, l: &Layout, twin: bool) -> BinStats {
        let groups = if l.cc { l.k } else { 1 };
        let mut st = BinStats::zeros(groups, l.nb);
        let zero = if twin { 0 } else { l.low(0) };
        if l.cc {
            for g in 0..l.k {
                for b in 0..l.nb {
                    let slot = if b == 0 { zero + g } else { b * l.k + g };
                    st.count[g * l.nb + b] = self.count[slot];
                    st.units[g * l.nb + b] = self.units[slot];
                }
            }
        } else {
            // Bin 0 is its eight lanes.
            st.count[0] = self.count[zero..zero + LANES].iter().sum();
            st.units[0] = self.units[zero..zero + LANES].iter().sum();
            for b in 1..l.nb {
                st.count[b] = self.count[LANES - 1 + b];
                st.units[b] = self.units[LANES - 1 + b];
            }
        }
        st.sum_outcome = self.outcome;
        st.finish();
        let bounds = l.e.boundaries();
        st.edges = (0..groups).flat_map(|_| bounds.iter().copied()).collect();
        st
    }
}
