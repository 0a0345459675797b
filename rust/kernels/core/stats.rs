//! Per-(group, bin) sufficient statistics: count, sum of scores, sum of outcomes.

/// Adds `v` to `*sum` with Neumaier compensation into `*comp` (add `*comp` to the sum at the
/// end): the one compensated-sum step of the kernels, so that long sequential sums (millions of
/// scores into one bin) stay accurate to ~1 ulp. Both candidate terms are computed, then one
/// is selected: no data-dependent branch.
#[inline(always)]
pub fn add_compensated(sum: &mut f64, comp: &mut f64, v: f64) {
    let s = *sum;
    let t = s + v;
    let a = (s - t) + v;
    let b = (v - t) + s;
    *comp += if s.abs() >= v.abs() { a } else { b };
    *sum = t;
}

/// Statistics of `groups` groups of `nb` bins each, group-major.
#[derive(Debug, Clone, PartialEq)]
pub struct BinStats {
    pub groups: usize,
    pub nb: usize,
    pub count: Vec<f64>,
    pub sum_score: Vec<f64>,
    pub sum_outcome: Vec<f64>,
    /// `groups * (nb + 1)` bin boundaries (see `edges::EvenEdges::boundaries`).
    pub edges: Vec<f64>,
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
        }
    }

    /// Writes a one-group table `one` (of `nb` bins) as group `g` of this table.
    pub fn set_group(&mut self, g: usize, one: &BinStats) {
        let r = g * self.nb..(g + 1) * self.nb;
        self.count[r.clone()].copy_from_slice(&one.count);
        self.sum_score[r.clone()].copy_from_slice(&one.sum_score);
        self.sum_outcome[r].copy_from_slice(&one.sum_outcome);
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

    /// Adds another table of the same shape, element by element.
    pub fn add(&mut self, other: &BinStats) {
        debug_assert_eq!(self.count.len(), other.count.len());
        for (a, b) in self.count.iter_mut().zip(&other.count) {
            *a += b;
        }
        for (a, b) in self.sum_score.iter_mut().zip(&other.sum_score) {
            *a += b;
        }
        for (a, b) in self.sum_outcome.iter_mut().zip(&other.sum_outcome) {
            *a += b;
        }
    }

    /// Adds one kept score with its outcome to (group, bin), the score sum compensated in
    /// `comp` (same layout, see [`add_compensated`]; fold it in with
    /// [`BinStats::apply_compensation`]).
    #[inline(always)]
    pub fn push_compensated(&mut self, comp: &mut [f64], group: usize, bin: usize, score: f64, outcome: f64) {
        let i = group * self.nb + bin;
        self.count[i] += 1.0;
        add_compensated(&mut self.sum_score[i], &mut comp[i], score);
        self.sum_outcome[i] += outcome;
    }

    /// Adds the compensation terms gathered by [`BinStats::push_compensated`].
    pub fn apply_compensation(&mut self, comp: &[f64]) {
        for (a, c) in self.sum_score.iter_mut().zip(comp) {
            *a += c;
        }
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
/// Score sums are plain within a run of at most `flush_every` pushes and the runs are added
/// into the table with Neumaier compensation, which keeps long sums accurate (a single plain
/// sum of millions of scores would not be).
pub struct LaneTables {
    cells: usize,
    lanes: usize,
    counts: Vec<u64>,
    sums: Vec<f64>,
    pending: usize,
    flush_every: usize,
}

impl LaneTables {
    /// Copies kept of tables with at most [`LaneTables::SMALL`] cells.
    pub const LANES: usize = 4;
    pub const SMALL: usize = 4096;
    /// Shortest run between folds (longer for large tables, so that folding stays cheap).
    const MIN_RUN: usize = 4096;

    pub fn new(cells: usize) -> Self {
        let lanes = if cells <= Self::SMALL { Self::LANES } else { 1 };
        LaneTables {
            cells,
            lanes,
            counts: vec![0; lanes * (cells + 1)],
            sums: vec![0.0; lanes * (cells + 1)],
            pending: 0,
            flush_every: Self::MIN_RUN.max(2 * lanes * cells),
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
        let (counts, sums) = (&mut self.counts[..], &mut self.sums[..]);
        for (j, (cell, score, outcome)) in items.enumerate() {
            let i = (j & mask) * stride + cell;
            counts[i] += 1 | ((outcome as u64) << 32);
            sums[i] += score;
        }
    }

    /// [`LaneTables::push_all`] for slices, four items at a time (item j to copy j % 4, at
    /// fixed offsets); `cells[j]` may be [`LaneTables::discard`], `incs[j]` is the count
    /// increment: 1, plus 1 << 32 for a positive outcome.
    #[inline(always)]
    pub fn push_slices(&mut self, cells: &[u32], scores: &[f64], incs: &[u64]) {
        let n = cells.len().min(scores.len()).min(incs.len());
        if self.lanes != Self::LANES {
            return self.push_all((0..n).map(|j| (cells[j] as usize, scores[j], incs[j] >> 32 != 0)));
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
            s0[a] += scores[j];
            c1[b] += incs[j + 1];
            s1[b] += scores[j + 1];
            c2[c] += incs[j + 2];
            s2[c] += scores[j + 2];
            c3[d] += incs[j + 3];
            s3[d] += scores[j + 3];
            j += 4;
        }
        for q in j..n {
            let (c, s) = match q - j {
                0 => (&mut *c0, &mut *s0),
                1 => (&mut *c1, &mut *s1),
                _ => (&mut *c2, &mut *s2),
            };
            c[cells[q] as usize] += incs[q];
            s[cells[q] as usize] += scores[q];
        }
    }

    /// Counts `pushed` more pushes and folds into `st` when the current run is long enough.
    #[inline]
    pub fn pushed(&mut self, pushed: usize, st: &mut BinStats, comp: &mut [f64]) {
        self.pending += pushed;
        if self.pending >= self.flush_every {
            self.flush(st, comp);
        }
    }

    /// Folds every copy into `st` (compensation terms into `comp`, see
    /// [`BinStats::push_compensated`]) and clears the copies.
    pub fn flush(&mut self, st: &mut BinStats, comp: &mut [f64]) {
        debug_assert_eq!(st.count.len(), self.cells);
        let stride = self.cells + 1;
        for lane in 0..self.lanes {
            let r = lane * stride..lane * stride + self.cells;
            for (cell, (c, s)) in self.counts[r.clone()].iter_mut().zip(&mut self.sums[r]).enumerate() {
                if *c == 0 {
                    continue;
                }
                st.count[cell] += (*c & 0xffff_ffff) as f64;
                st.sum_outcome[cell] += (*c >> 32) as f64;
                add_compensated(&mut st.sum_score[cell], &mut comp[cell], *s);
                *c = 0;
                *s = 0.0;
            }
            self.counts[lane * stride + self.cells] = 0;
            self.sums[lane * stride + self.cells] = 0.0;
        }
        self.pending = 0;
    }
}
