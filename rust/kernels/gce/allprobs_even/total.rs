//! The whole input's table of one layout, folded from the chunk parts in chunk order
//! ([`Total`]), and its statistics.

use super::{LanePart, Layout, Mode, Part, TabPart, LANES};
use crate::kernels::BinStats;

/// The whole input's table in slots, folded from the chunk parts in chunk order.
pub(super) struct Total {
    pub(super) cells: Vec<[f64; 2]>,
    pub(super) outcome: Vec<f64>,
}

impl Total {
    pub(super) fn new(l: &Layout) -> Self {
        let groups = if l.cc { l.k } else { 1 };
        Total { cells: vec![[0.0; 2]; l.slots()], outcome: vec![0.0; groups * l.nb] }
    }

    /// Adds a chunk's part of table `l` (with lane `lane`, none for sparse chunks).
    pub(super) fn fold(&mut self, l: &Layout, part: &Part, lane: Option<&LanePart>, p: &TabPart) {
        // Counts are integers below 2^53: exact in any order.
        match (part.mode, lane) {
            (Mode::Dense, Some(lane)) => {
                for z in 0..l.width() {
                    let c = &mut self.cells[l.low(z)];
                    c[0] += (part.rows * l.columns_of(z)) as f64 - part.dropped[z];
                    c[1] += lane.sum0[z];
                }
            }
            (Mode::Counted, Some(lane)) => {
                for z in 0..l.width() {
                    let c = &mut self.cells[l.low(z)];
                    c[0] += lane.count[z];
                    c[1] += lane.sum0[z];
                }
            }
            _ => {}
        }
        for &(slot, n, s) in &p.cells {
            let c = &mut self.cells[slot];
            c[0] += n;
            c[1] += s;
            if part.mode == Mode::Dense && slot >= l.width() {
                // In a bin above 0, so not in the lane's count of this slot's columns, which
                // counted every entry not dropped (pooled: all in lane 0). Bin 0's row holds
                // entries of the lane: the raised twin's.
                self.cells[l.zero_of(slot)][0] -= n;
            }
        }
        for &o in &p.outcome {
            self.outcome[o] += 1.0;
        }
    }

    /// The table's statistics; a raised `twin`'s (see `Cut`) take bin 0 from bin 0's row of
    /// the scattered path, a table's from its lane (the low region).
    pub(super) fn into_stats(self, l: &Layout, twin: bool) -> BinStats {
        let groups = if l.cc { l.k } else { 1 };
        let mut st = BinStats::zeros(groups, l.nb);
        let zero = if twin { 0 } else { l.low(0) };
        if l.cc {
            for g in 0..l.k {
                for b in 0..l.nb {
                    let c = if b == 0 { self.cells[zero + g] } else { self.cells[b * l.k + g] };
                    st.count[g * l.nb + b] = c[0];
                    st.sum_score[g * l.nb + b] = c[1];
                }
            }
        } else {
            // Bin 0 is its eight lanes added in lane order.
            let lanes = &self.cells[zero..zero + LANES];
            st.count[0] = lanes.iter().fold(0.0, |a, c| a + c[0]);
            st.sum_score[0] = lanes.iter().fold(0.0, |a, c| a + c[1]);
            for b in 1..l.nb {
                st.count[b] = self.cells[LANES - 1 + b][0];
                st.sum_score[b] = self.cells[LANES - 1 + b][1];
            }
        }
        st.sum_outcome = self.outcome;
        let bounds = l.e.boundaries();
        st.edges = (0..groups).flat_map(|_| bounds.iter().copied()).collect();
        st
    }
}
