//! Per-(group, bin) sufficient statistics: count, sum of scores, sum of outcomes.

use super::units;

/// Statistics of `groups` groups of `nb` bins each, group-major.
///
/// Score sums are kept exactly as whole grid units ([`units`]) and reported rounded once in
/// `sum_score`: tables built in any order, cut into any chunks and added ([`BinStats::add`])
/// give the same bits. A table given as float sums (`reduce_table`) has no units.
#[derive(Debug, Clone, PartialEq)]
pub struct BinStats {
    pub groups: usize,
    pub nb: usize,
    pub count: Vec<f64>,
    pub sum_score: Vec<f64>,
    pub sum_outcome: Vec<f64>,
    /// `groups * (nb + 1)` bin boundaries (see `edges::EvenEdges::boundaries`).
    pub edges: Vec<f64>,
    /// Each cell's exact score sum in grid units (empty for a table given as float sums).
    pub units: Vec<i128>,
}

impl BinStats {
    pub fn zeros(groups: usize, nb: usize) -> Self {
        BinStats {
            groups,
            nb,
            count: vec![0.0; groups * nb],
            sum_score: vec![0.0; groups * nb],
            sum_outcome: vec![0.0; groups * nb],
            edges: Vec::new(),
            units: vec![0; groups * nb],
        }
    }

    /// A table given as float sums (no units: it is reduced, never added to).
    pub fn from_sums(groups: usize, nb: usize, count: Vec<f64>, sum_score: Vec<f64>, sum_outcome: Vec<f64>) -> Self {
        BinStats { groups, nb, count, sum_score, sum_outcome, edges: Vec::new(), units: Vec::new() }
    }

    /// Sets `sum_score` from the units: each cell's exact sum rounded once.
    pub fn finish(&mut self) {
        if self.units.len() == self.sum_score.len() {
            for (s, &u) in self.sum_score.iter_mut().zip(&self.units) {
                *s = units::value(u);
            }
        }
    }

    /// Writes a one-group table `one` (of `nb` bins) as group `g` of this table.
    pub fn set_group(&mut self, g: usize, one: &BinStats) {
        let r = g * self.nb..(g + 1) * self.nb;
        self.count[r.clone()].copy_from_slice(&one.count);
        self.sum_score[r.clone()].copy_from_slice(&one.sum_score);
        self.sum_outcome[r.clone()].copy_from_slice(&one.sum_outcome);
        if self.units.len() == self.count.len() && one.units.len() == one.count.len() {
            self.units[r].copy_from_slice(&one.units);
        }
    }

    /// The table of per-group adaptive results (each group's `nb + 1` boundaries and its
    /// one-group table of `nb` bins), groups in order, with every group's boundaries as edges.
    pub fn from_groups<'a, I>(per_group: I, nb: usize) -> Self
    where
        I: IntoIterator<Item = (&'a [f64], &'a BinStats)>,
        I::IntoIter: ExactSizeIterator,
    {
        let per_group = per_group.into_iter();
        let mut st = BinStats::zeros(per_group.len(), nb);
        for (g, (bounds, one)) in per_group.enumerate() {
            st.set_group(g, one);
            st.edges.extend_from_slice(bounds);
        }
        st
    }

    /// Adds another table of the same shape, element by element (score sums exactly, in
    /// units). Call [`BinStats::finish`] after the last add (tables with units).
    pub fn add(&mut self, other: &BinStats) {
        debug_assert_eq!(self.count.len(), other.count.len());
        for (a, b) in self.count.iter_mut().zip(&other.count) {
            *a += b;
        }
        for (a, b) in self.sum_outcome.iter_mut().zip(&other.sum_outcome) {
            *a += b;
        }
        let (mine, theirs) = (self.units.len() == self.count.len(), other.units.len() == other.count.len());
        if mine && theirs {
            for (a, b) in self.units.iter_mut().zip(&other.units) {
                *a += b;
            }
            return;
        }
        // a table without units: the sums add as floats from here on (each side's sums as
        // they stand, a table with units read from its units whether finished or not)
        if mine {
            self.finish();
            self.units = Vec::new();
        }
        let theirs_sums: Vec<f64> = if theirs { other.units.iter().map(|&u| units::value(u)).collect() } else { other.sum_score.clone() };
        for (a, b) in self.sum_score.iter_mut().zip(&theirs_sums) {
            *a += b;
        }
    }

    /// Adds one kept score with its outcome to (group, bin). Call [`BinStats::finish`] after
    /// the last push.
    #[inline(always)]
    pub fn push(&mut self, group: usize, bin: usize, score: f64, outcome: f64) {
        let i = group * self.nb + bin;
        self.count[i] += 1.0;
        units::add(&mut self.units[i], score);
        self.sum_outcome[i] += outcome;
    }
}

/// Accumulators for pushing many (cell, score, outcome) triples fast, then folding them into a
/// [`BinStats`] table of `cells` cells.
///
/// Consecutive rows usually land in the same cell (most confidences sit in the top bin), and
/// a read-modify-write of one memory cell waits for the previous one. So small tables are kept
/// in [`LaneTables::LANES`] interleaved copies (consecutive items go to different copies),
/// each its own dependency chain; count and outcome share one u64 (count in the low 32 bits).
/// Each copy has one more cell, [`LaneTables::discard`], where dropped items go, so that
/// callers select a cell instead of branching on whether to keep an item.
/// Scores are added as grid units ([`units`]): in `i64` per copy for a run of at most
/// [`units::RUN`] pushes per copy, then folded into the table's exact `i128` cells. Large
/// tables (one copy) add into `i128` cells directly.
pub struct LaneTables {
    cells: usize,
    lanes: usize,
    counts: Vec<u64>,
    sums: Vec<i64>,
    /// One copy's exact sums (large tables only).
    wide: Vec<i128>,
    pending: usize,
    flush_every: usize,
}

impl LaneTables {
    /// Copies kept of tables with at most [`LaneTables::SMALL`] cells.
    pub const LANES: usize = 4;
    pub const SMALL: usize = 4096;
    /// Shortest run between folds (longer for large tables, so that folding stays cheap).
    const MIN_RUN: usize = 4096;
    /// Pushes a caller may add after the run is full before it calls [`LaneTables::pushed`].
    const SLACK: usize = 1024;

    pub fn new(cells: usize) -> Self {
        let lanes = if cells <= Self::SMALL { Self::LANES } else { 1 };
        // A copy's cell takes at most every lanes-th push of a run: keep that within RUN.
        let longest = lanes * units::RUN - Self::SLACK;
        LaneTables {
            cells,
            lanes,
            counts: vec![0; lanes * (cells + 1)],
            sums: vec![0; if lanes > 1 { lanes * (cells + 1) } else { 0 }],
            wide: vec![0; if lanes > 1 { 0 } else { cells + 1 }],
            pending: 0,
            flush_every: Self::MIN_RUN.max(2 * lanes * cells).min(if lanes > 1 { longest } else { usize::MAX }),
        }
    }

    /// The cell that drops what is pushed to it.
    #[inline(always)]
    pub fn discard(&self) -> usize {
        self.cells
    }

    /// Adds each (cell, score, outcome), spreading consecutive items over the copies.
    #[inline(always)]
    pub fn push_all(&mut self, items: impl Iterator<Item = (usize, f64, bool)>) {
        let (stride, mask) = (self.cells + 1, self.lanes - 1);
        let counts = &mut self.counts[..];
        if self.lanes == 1 {
            let wide = &mut self.wide[..];
            for (cell, score, outcome) in items {
                counts[cell] += 1 | ((outcome as u64) << 32);
                wide[cell] += units::units(score) as i128;
            }
            return;
        }
        let sums = &mut self.sums[..];
        for (j, (cell, score, outcome)) in items.enumerate() {
            let i = (j & mask) * stride + cell;
            counts[i] += 1 | ((outcome as u64) << 32);
            sums[i] = sums[i].wrapping_add(units::biased(score));
        }
    }

    /// [`LaneTables::push_all`] for slices, four items at a time (item j to copy j % 4, at
    /// fixed offsets); `cells[j]` may be [`LaneTables::discard`], `incs[j]` is the count
    /// increment: 1, plus 1 << 32 for a positive outcome, and `biased[j]` the score's biased
    /// units ([`units::biased`], converted by the caller a block at a time, a vector loop); the
    /// bias is taken off each copy's cell at the fold, from its count.
    #[inline(always)]
    pub fn push_slices(&mut self, cells: &[u32], biased: &[i64], incs: &[u64]) {
        let n = cells.len().min(biased.len()).min(incs.len());
        if self.lanes != Self::LANES {
            let (counts, wide) = (&mut self.counts[..], &mut self.wide[..]);
            for j in 0..n {
                let cell = cells[j] as usize;
                counts[cell] += incs[j];
                wide[cell] += units::unbias(biased[j], 1);
            }
            return;
        }
        let stride = self.cells + 1;
        let (c0, rest) = self.counts.split_at_mut(stride);
        let (c1, rest) = rest.split_at_mut(stride);
        let (c2, c3) = rest.split_at_mut(stride);
        let (s0, rest) = self.sums.split_at_mut(stride);
        let (s1, rest) = rest.split_at_mut(stride);
        let (s2, s3) = rest.split_at_mut(stride);
        let mut j = 0;
        while j + 4 <= n {
            let (a, b, c, d) = (cells[j] as usize, cells[j + 1] as usize, cells[j + 2] as usize, cells[j + 3] as usize);
            c0[a] += incs[j];
            s0[a] = s0[a].wrapping_add(biased[j]);
            c1[b] += incs[j + 1];
            s1[b] = s1[b].wrapping_add(biased[j + 1]);
            c2[c] += incs[j + 2];
            s2[c] = s2[c].wrapping_add(biased[j + 2]);
            c3[d] += incs[j + 3];
            s3[d] = s3[d].wrapping_add(biased[j + 3]);
            j += 4;
        }
        for q in j..n {
            let (c, s) = match q - j {
                0 => (&mut *c0, &mut *s0),
                1 => (&mut *c1, &mut *s1),
                _ => (&mut *c2, &mut *s2),
            };
            c[cells[q] as usize] += incs[q];
            s[cells[q] as usize] = s[cells[q] as usize].wrapping_add(biased[q]);
        }
    }

    /// Counts `pushed` more pushes and folds into `st` when the current run is long enough
    /// (callers push at most [`LaneTables::SLACK`] items between calls).
    #[inline]
    pub fn pushed(&mut self, pushed: usize, st: &mut BinStats) {
        debug_assert!(pushed <= Self::SLACK);
        self.pending += pushed;
        if self.pending >= self.flush_every {
            self.flush(st);
        }
    }

    /// Folds every copy into `st` and clears the copies (call [`BinStats::finish`] after the
    /// last flush).
    pub fn flush(&mut self, st: &mut BinStats) {
        debug_assert_eq!(st.count.len(), self.cells);
        let stride = self.cells + 1;
        for lane in 0..self.lanes {
            let r = lane * stride..lane * stride + self.cells;
            for (cell, c) in self.counts[r.clone()].iter_mut().enumerate() {
                if *c == 0 {
                    continue;
                }
                let n = *c & 0xffff_ffff;
                st.count[cell] += n as f64;
                st.sum_outcome[cell] += (*c >> 32) as f64;
                *c = 0;
                if self.lanes > 1 {
                    // the run's biased units, less one bias per push
                    st.units[cell] += units::unbias(self.sums[r.start + cell], n);
                    self.sums[r.start + cell] = 0;
                } else {
                    st.units[cell] += self.wide[cell];
                    self.wide[cell] = 0;
                }
            }
            self.counts[lane * stride + self.cells] = 0;
            if self.lanes > 1 {
                self.sums[lane * stride + self.cells] = 0;
            } else {
                self.wide[self.cells] = 0;
            }
        }
        self.pending = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_with_and_without_units_add_as_floats() {
        let mut a = BinStats::zeros(1, 2);
        a.push(0, 0, 0.25, 1.0);
        a.push(0, 1, 0.75, 0.0); // not finished: its sums are in its units alone
        let mut b = BinStats::zeros(1, 2);
        b.units = Vec::new(); // a table without units (a scaled weighted table)
        b.count = vec![1.0, 2.0];
        b.sum_score = vec![0.125, 1.5];
        // units + no units: the units' values are kept, the other sums added, units dropped
        let mut x = BinStats::zeros(1, 2);
        x.add(&a);
        let mut y = x.clone();
        y.add(&b);
        assert!(y.units.is_empty());
        assert_eq!(y.sum_score, vec![0.375, 2.25]);
        assert_eq!(y.count, vec![2.0, 3.0]);
        // no units + units (unfinished): the units' values are added
        let mut z = b.clone();
        z.add(&a);
        assert_eq!(z.sum_score, vec![0.375, 2.25]);
        // both with units: exact, one rounding at finish
        x.add(&a);
        x.finish();
        assert_eq!(x.sum_score, vec![0.5, 1.5]);
    }
}
