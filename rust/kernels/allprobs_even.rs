//! All-probabilities metrics with even bins (SCE and its relatives): every kept entry of the
//! matrix goes into a (group, bin) cell. Per entry only the count and the score sum change; the
//! outcome is 1 only at the true label, so it is added once per row.
//!
//! # What every path computes (the canonical order)
//! Rows are cut into fixed chunks ([`chunks`]: they depend on (N, K) and the grouping only,
//! never on the bin counts or the threads). Within a chunk, each cell's score sum is the plain
//! sum of its scores in row order (then column order), starting from 0.0; the chunk sums of a
//! cell are added in chunk order. Pooled tables keep bin 0 in [`LANES`] cells, one per column modulo
//! [`LANES`] (added in lane order at the end). Counts are exact integers, so their order does
//! not matter. Every strategy below produces exactly these sums, so the tables are bitwise the
//! same whatever the strategy, the instruction set, the number of threads, and whichever other
//! bin counts share the pass (several tables from one pass are bitwise the single-table ones).
//!
//! # Strategies, chosen per chunk from its first row (they only change the speed)
//! - [`Mode::Dense`], when almost every entry is kept and below the first edge (a many-class
//!   softmax with threshold 0): bin 0's scores are summed in a dense per-class (pooled:
//!   per-lane) array by branch-free masked adds (adding 0.0 leaves a sum of scores unchanged);
//!   only the few other entries (a bit mask of the vector comparison) take the scattered path
//!   into a per-thread scratch table. Bin 0's count is the chunk's entries minus those dropped
//!   and minus the counts of the bins above 0.
//! - [`Mode::Counted`], when the threshold drops many entries but keeps many in bin 0: as
//!   dense, with bin 0's count also in a dense array; only kept entries above bin 0 are
//!   scattered.
//! - [`Mode::Sparse`], when nearly every entry is dropped: only the kept entries are visited,
//!   each through the scattered path, bin 0 included.
//!
//! Rows are checked in the same read. The vector pass checks ranges only where they can fail:
//! an entry in the dense bin-0 lane is in (threshold, u_1), inside [0, 1]; every scattered
//! entry is checked on its way; entries dropped but not scattered, which are <= threshold < 1,
//! with one vector comparison against the lower bound. The row sum is the lane sum of
//! [`row_sum_and_bad`], so a row fails exactly when the portable check fails it.
//!
//! An input written by another thread during the call gives some value or an error, never an
//! access outside the tables: vector loads and stores use offsets that depend on K only; the
//! scattered path re-reads a value from the row, and a value changed meanwhile lands in the
//! cell of its new value (bins are clamped into the table); a label is checked against K at
//! its row; a row that failed and passes when read again is [`KernelError::InputChanged`].

use std::ops::Range;

use crate::kernels::chunks::{map_fold, row_chunks_min, PerThread};
use crate::kernels::edges::EvenEdges;
use crate::kernels::simd;
use crate::kernels::validate::{failed_row_error, labels as check_labels, row_ok, row_sum_and_bad, Checks, RANGE_TOL};
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

/// Lanes of the pooled bin 0 (column modulo `LANES`).
pub(crate) const LANES: usize = 8;

/// How a chunk treats bin 0 (see the module doc). Only the speed depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Dense,
    Counted,
    Sparse,
}

/// Where one table's cells live. Slots are cells of the scattered path: class-conditional
/// `bin * k + class` (bin-major: the classes of a row touch consecutive slots), pooled bin 0
/// in slots `0..LANES` (column mod `LANES`) and bin b >= 1 in slot `LANES - 1 + b`. Either
/// way bin 0 is slots `0..width`, the dense lane's layout.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) cc: bool,
    pub(crate) k: usize,
    pub(crate) nb: usize,
    pub(crate) e: EvenEdges,
}

impl Layout {
    pub(crate) fn new(cc: bool, k: usize, b: usize) -> Self {
        Layout { cc, k, nb: b + 1, e: EvenEdges::new(b) }
    }

    /// Slots of bin 0 (the dense lane's length).
    pub(crate) fn width(&self) -> usize {
        if self.cc {
            self.k
        } else {
            LANES
        }
    }

    pub(crate) fn slots(&self) -> usize {
        if self.cc {
            self.nb * self.k
        } else {
            LANES + self.nb - 1
        }
    }

    /// Slot of a score of column `col` in bin `bin` (`bin <= B`, `col < k`: always in
    /// `0..slots()`).
    #[inline(always)]
    pub(crate) fn slot(&self, bin: usize, col: usize) -> usize {
        if self.cc {
            bin * self.k + col
        } else if bin == 0 {
            col % LANES
        } else {
            LANES - 1 + bin
        }
    }

    /// Bin-0 slot of column `col`.
    #[inline(always)]
    pub(crate) fn zero_slot(&self, col: usize) -> usize {
        if self.cc {
            col
        } else {
            col % LANES
        }
    }

    /// A bin-0 slot counting the entries of slot `slot` (bin >= 1) among its columns.
    #[inline(always)]
    fn zero_of(&self, slot: usize) -> usize {
        if self.cc {
            slot % self.k
        } else {
            0
        }
    }

    /// Columns whose bin 0 is slot `z` (per row).
    fn columns_of(&self, z: usize) -> usize {
        if self.cc {
            1
        } else {
            self.k / LANES + usize::from(z < self.k % LANES)
        }
    }

    /// Group of the true label's score.
    #[inline(always)]
    fn outcome_cell(&self, label: usize, bin: usize) -> usize {
        if self.cc {
            label * self.nb + bin
        } else {
            bin
        }
    }
}

/// One chunk's contribution to one table.
#[derive(Debug, Default)]
pub(crate) struct TabPart {
    /// Dense and counted modes: bin-0 score sums by bin-0 slot.
    pub(crate) sum0: Vec<f64>,
    /// Dense mode: entries of each bin-0 slot's columns dropped by the threshold (bin 0's
    /// count is the chunk's entries of the slot's columns minus these and minus the
    /// scattered path's counts of the bins above 0). Counted mode: bin 0's counts.
    pub(crate) aux: Vec<f64>,
    /// Scattered path: (slot, count, score sum), one per slot touched in the chunk.
    pub(crate) cells: Vec<(usize, f64, f64)>,
    /// Outcome cells (`group * nb + bin`), one per row whose true-label score is kept.
    pub(crate) outcome: Vec<usize>,
}

/// One chunk's contribution to every table.
#[derive(Debug)]
pub(crate) struct Part {
    pub(crate) mode: Mode,
    pub(crate) rows: usize,
    pub(crate) tabs: Vec<TabPart>,
}

impl Part {
    pub(crate) fn new(mode: Mode, rows: usize, lay: &[Layout]) -> Self {
        let tabs = lay
            .iter()
            .map(|l| match mode {
                Mode::Dense | Mode::Counted => {
                    TabPart { sum0: vec![0.0; l.width()], aux: vec![0.0; l.width()], ..TabPart::default() }
                }
                Mode::Sparse => TabPart::default(),
            })
            .collect();
        Part { mode, rows, tabs }
    }
}

/// A thread's scattered-path table for one table of the pass. Entries are logged in order
/// during the chunk ([`Scratch::add`]: a sequential write, while the table's lines would be
/// cold, evicted by the streamed input) and applied to the table at its end, which then moves
/// the touched slots into the chunk's part and zeroes them ([`Scratch::drain`]): each slot's
/// sum is still the sum of its scores in row and column order.
#[derive(Debug)]
pub(crate) struct Scratch {
    cells: Vec<[f64; 2]>,
    log: Vec<(u32, f64)>,
    /// The first `n` entries are the slots touched since the last drain, in first-touch order
    /// (one more entry than slots, so that the branch-free append always has room).
    touched: Vec<u32>,
    n: usize,
}

impl Scratch {
    /// `slots` fits in u32 ([`crate::kernels::spec::MAX_TABLE_CELLS`] slots at most).
    pub(crate) fn new(slots: usize) -> Self {
        Scratch { cells: vec![[0.0; 2]; slots], log: Vec::new(), touched: vec![0; slots + 1], n: 0 }
    }

    /// Logs score `s` for `slot` (a [`Layout::slot`]).
    #[inline(always)]
    pub(crate) fn add(&mut self, slot: usize, s: f64) {
        self.log.push((slot as u32, s));
    }

    /// Applies the log, then moves the touched slots into `p.cells` and zeroes them.
    pub(crate) fn drain(&mut self, p: &mut TabPart) {
        for &(slot, s) in &self.log {
            // Panics if `slot` is not a slot of the table: callers log `Layout::slot`s.
            let c = &mut self.cells[slot as usize];
            // Branch-free: n <= distinct slots touched <= slots < touched.len().
            self.touched[self.n] = slot;
            self.n += (c[0] == 0.0) as usize;
            c[0] += 1.0;
            c[1] += s;
        }
        self.log.clear();
        p.cells.reserve(self.n);
        for &slot in &self.touched[..self.n] {
            let c = std::mem::replace(&mut self.cells[slot as usize], [0.0; 2]);
            p.cells.push((slot as usize, c[0], c[1]));
        }
        self.n = 0;
    }
}

/// The whole input's table in slots, folded from the chunk parts in chunk order.
struct Total {
    cells: Vec<[f64; 2]>,
    outcome: Vec<f64>,
}

impl Total {
    fn new(l: &Layout) -> Self {
        let groups = if l.cc { l.k } else { 1 };
        Total { cells: vec![[0.0; 2]; l.slots()], outcome: vec![0.0; groups * l.nb] }
    }

    fn fold(&mut self, l: &Layout, mode: Mode, rows: usize, p: &TabPart) {
        // Counts are integers below 2^53: exact in any order.
        match mode {
            Mode::Dense => {
                for z in 0..l.width() {
                    let c = &mut self.cells[z];
                    c[0] += (rows * l.columns_of(z)) as f64 - p.aux[z];
                    c[1] += p.sum0[z];
                }
            }
            Mode::Counted => {
                for z in 0..l.width() {
                    let c = &mut self.cells[z];
                    c[0] += p.aux[z];
                    c[1] += p.sum0[z];
                }
            }
            Mode::Sparse => {}
        }
        for &(slot, n, s) in &p.cells {
            let c = &mut self.cells[slot];
            c[0] += n;
            c[1] += s;
            if mode == Mode::Dense {
                // In bin 0's count of this slot's columns (pooled: all in lane 0).
                self.cells[l.zero_of(slot)][0] -= n;
            }
        }
        for &o in &p.outcome {
            self.outcome[o] += 1.0;
        }
    }

    fn into_stats(self, l: &Layout) -> BinStats {
        let groups = if l.cc { l.k } else { 1 };
        let mut st = BinStats::zeros(groups, l.nb);
        if l.cc {
            for g in 0..l.k {
                for b in 0..l.nb {
                    let c = self.cells[b * l.k + g];
                    st.count[g * l.nb + b] = c[0];
                    st.sum_score[g * l.nb + b] = c[1];
                }
            }
        } else {
            let lanes = &self.cells[..LANES];
            st.count[0] = lanes.iter().fold(0.0, |a, c| a + c[0]);
            st.sum_score[0] = lanes.iter().fold(0.0, |a, c| a + c[1]);
            for b in 1..l.nb {
                let c = self.cells[LANES - 1 + b];
                st.count[b] = c[0];
                st.sum_score[b] = c[1];
            }
        }
        st.sum_outcome = self.outcome;
        let bounds = l.e.boundaries();
        st.edges = (0..groups).flat_map(|_| bounds.iter().copied()).collect();
        st
    }
}

/// Statistics for each bin count in `bins`, from one pass over the data. Each table is
/// bitwise the table of a pass with that bin count alone.
pub fn stats<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<BinStats>, KernelError> {
    stats_with(x, g, bins, check, None)
}

/// [`stats`], with the strategy forced (tests: every strategy gives the same tables).
pub(crate) fn stats_with<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
    force: Option<Mode>,
) -> Result<Vec<BinStats>, KernelError> {
    if check.labels {
        check_labels(x)?;
    }
    let lay: Vec<Layout> = bins.iter().map(|&b| Layout::new(g.class_conditional, x.k, b)).collect();
    let thr = g.threshold;
    let mut total: Vec<Total> = lay.iter().map(Total::new).collect();
    let scratch = PerThread::<Option<Vec<Scratch>>>::new();
    let chunks = chunks(x.n, x.k, g.class_conditional);
    map_fold(
        &chunks,
        |rows| scratch.with(|guard| {
            let sc = guard.get_or_insert_with(|| lay.iter().map(|l| Scratch::new(l.slots())).collect());
            let mode = force.unwrap_or_else(|| choose(x.row(rows.start), &lay, thr));
            let mut part = Part::new(mode, rows.len(), &lay);
            let failed = accumulate(x, rows.clone(), &lay, &mut part, sc, thr, check);
            // Always: the scratch must be all zero for the next chunk.
            for (s, p) in sc.iter_mut().zip(&mut part.tabs) {
                s.drain(p);
            }
            match failed {
                None => Ok(part),
                // A row failing a check, or a label out of range although labels were
                // checked (then no row fails: another thread wrote to the input).
                Some(i) => Err(failed_row_error(x, rows.start..i + 1, check)),
            }
        }),
        |part| {
            for ((t, l), p) in total.iter_mut().zip(&lay).zip(&part.tabs) {
                t.fold(l, part.mode, part.rows, p);
            }
        },
    )?;
    Ok(total.into_iter().zip(&lay).map(|(t, l)| t.into_stats(l)).collect())
}

/// The fixed row chunks of a pass: they depend on the shape and the grouping only (never on
/// the bin counts, so that tables sharing a pass are the single-pass ones), and hold at least
/// 1024 rows' worth of a dense chunk's bin-0 lane: chunk parts are folded on one thread, so
/// they must be few and small next to the work of their chunk.
pub(crate) fn chunks(n: usize, k: usize, cc: bool) -> Vec<Range<usize>> {
    let width = if cc { k } else { LANES };
    row_chunks_min(n, k, 1024 * width)
}

/// The strategy for a chunk starting with `row`, from its entries in the dense bin-0 lane of
/// the table with the lowest first edge, and kept: dense if at most 1/16 are not in the lane,
/// sparse if at most 1/256 are kept, else counted.
fn choose<T: Score>(row: &[T], lay: &[Layout], thr: f64) -> Mode {
    let u1 = lay.iter().map(|l| l.e.first_edge()).fold(1.0, f64::min);
    let (mut fast, mut kept) = (0usize, 0usize);
    for v in row {
        let s = v.to_f64();
        fast += (s > thr && s < u1) as usize;
        kept += (s > thr) as usize;
    }
    let k = row.len();
    // A kept entry costs one scattered update per table; the dense lane, a pass per table.
    let sparse_at = if lay.len() > 1 { 16 } else { 256 };
    if 16 * (k - fast) <= k {
        Mode::Dense
    } else if sparse_at * kept <= k {
        Mode::Sparse
    } else {
        Mode::Counted
    }
}

/// The scattered path of one entry of column `col` not in the dense bin-0 lane (dense and
/// counted modes): added to its cell if kept (then in a bin >= 1), else counted in `dropped`
/// (dense mode; counted mode passes only kept entries). Whether it fails the range check (the
/// dense lane's entries cannot).
#[inline(always)]
#[allow(clippy::manual_range_contains)] // NaN is out of range
fn dense_exception(s: f64, col: usize, thr: f64, l: &Layout, dropped: &mut [f64], sc: &mut Scratch) -> bool {
    if s > thr {
        sc.add(l.slot(l.e.bin(s), col), s);
    } else {
        dropped[l.zero_slot(col)] += 1.0;
    }
    !(s >= -RANGE_TOL && s <= 1.0 + RANGE_TOL)
}

/// The outcome of a row: its true-label score's cell, if kept.
#[inline(always)]
fn outcome<T: Score>(row: &[T], label: usize, thr: f64, l: &Layout, p: &mut TabPart) {
    let s = row[label].to_f64();
    if s > thr {
        p.outcome.push(l.outcome_cell(label, l.e.bin(s)));
    }
}

crate::kernels::simd::multiversion! {
    /// The portable row pass, as the production fallback runs it (tests compare the AVX2 pass
    /// to it): accumulates `rows` into `part` and the scratch tables `sc`; the index of the
    /// first row failing a check (or whose label is not a column: labels are checked
    /// beforehand, so only if another thread changed it since), if any.
    pub(crate) fn accumulate_portable<T: Score>(
        x: &Inputs<T>,
        rows: Range<usize>,
        lay: &[Layout],
        part: &mut Part,
        sc: &mut [Scratch],
        thr: f64,
        check: &Checks,
    ) -> Option<usize> {
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = row_sum_and_bad(row);
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, bad, check) || label >= row.len() {
                return Some(i);
            }
            for ((l, p), s) in lay.iter().zip(part.tabs.iter_mut()).zip(sc.iter_mut()) {
                match part.mode {
                    Mode::Dense => dense_row::<T, false>(row, thr, l, p, s),
                    Mode::Counted => dense_row::<T, true>(row, thr, l, p, s),
                    Mode::Sparse => {
                        for (c, v) in row.iter().enumerate() {
                            let v = v.to_f64();
                            if v > thr {
                                s.add(l.slot(l.e.bin(v), c), v);
                            }
                        }
                    }
                }
                outcome(row, label, thr, l, p);
            }
        }
        None
    }
}

/// One row of a dense (`COUNT`: counted) chunk, portable: the bin-0 lane (masked adds,
/// vectorised), then the scattered entries in column order.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is not in bin 0
fn dense_row<T: Score, const COUNT: bool>(row: &[T], thr: f64, l: &Layout, p: &mut TabPart, sc: &mut Scratch) {
    let u1 = l.e.first_edge();
    let fast = |s: f64| s > thr && s < u1;
    let lane = |z: &mut f64, a: &mut f64, v: &T| {
        let s = v.to_f64();
        let f = fast(s);
        *z += if f { s } else { 0.0 };
        if COUNT {
            *a += if f { 1.0 } else { 0.0 };
        }
    };
    if l.cc {
        let (sum0, aux) = (&mut p.sum0[..row.len()], &mut p.aux[..row.len()]);
        for ((z, a), v) in sum0.iter_mut().zip(aux.iter_mut()).zip(row) {
            lane(z, a, v);
        }
    } else {
        let (sum0, aux) = (&mut p.sum0[..LANES], &mut p.aux[..LANES]);
        let mut it = row.chunks_exact(LANES);
        for c in &mut it {
            for ((z, a), v) in sum0.iter_mut().zip(aux.iter_mut()).zip(c) {
                lane(z, a, v);
            }
        }
        for ((z, a), v) in sum0.iter_mut().zip(aux.iter_mut()).zip(it.remainder()) {
            lane(z, a, v);
        }
    }
    for (c, v) in row.iter().enumerate() {
        let s = v.to_f64();
        let scattered = if COUNT { s > thr && !(s < u1) } else { !fast(s) };
        if scattered {
            dense_exception(s, c, thr, l, &mut p.aux, sc);
        }
    }
}

/// [`accumulate_portable`], with AVX2 when available.
pub(crate) fn accumulate<T: Score>(
    x: &Inputs<T>,
    rows: Range<usize>,
    lay: &[Layout],
    part: &mut Part,
    sc: &mut [Scratch],
    thr: f64,
    check: &Checks,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        simd::record(simd::Kernel::SceRows, simd::Level::Avx2);
        // SAFETY: the CPU has AVX2, the only feature `x86::rows` is compiled for (it asserts
        // the shapes of the part and scratch tables itself).
        return unsafe { x86::rows(x, rows, lay, part, sc, thr, check) };
    }
    simd::record(simd::Kernel::SceRows, simd::Level::Portable);
    accumulate_portable(x, rows, lay, part, sc, thr, check)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::{dense_exception, outcome, Layout, Mode, Part, Scratch};
    use crate::kernels::validate::{row_ok, Checks, RANGE_TOL};
    use crate::kernels::{Inputs, Score};

    /// [`super::accumulate_portable`] with AVX2: the same updates of every cell in the same order,
    /// and the same row checks (see the module doc). Eight values at a time: row-sum lanes as
    /// [`crate::kernels::validate::row_sum_and_bad`] adds them, one comparison pair per table
    /// for the bin-0 lane (masked adds into the per-class array, or, pooled, into registers
    /// holding the eight lanes), and a bit mask sending the other entries to the scattered
    /// path.
    ///
    /// Every table must have `x.k` classes, and `part`/`sc` be shaped by `lay` (asserted).
    #[target_feature(enable = "avx2")]
    pub(super) fn rows<T: Score>(
        x: &Inputs<T>,
        rows: Range<usize>,
        lay: &[Layout],
        part: &mut Part,
        sc: &mut [Scratch],
        thr: f64,
        check: &Checks,
    ) -> Option<usize> {
        let k = x.k;
        assert!(part.tabs.len() == lay.len() && sc.len() == lay.len());
        for (l, p) in lay.iter().zip(&part.tabs) {
            assert!(l.k == k);
            assert!(part.mode == Mode::Sparse || (p.sum0.len() == l.width() && p.aux.len() == l.width()));
        }
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = match part.mode {
                Mode::Dense => dense_row::<T, false>(row, thr, lay, part, sc),
                Mode::Counted => dense_row::<T, true>(row, thr, lay, part, sc),
                Mode::Sparse => sparse_row(row, thr, lay, sc),
            };
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, bad, check) || label >= k {
                return Some(i);
            }
            for (l, p) in lay.iter().zip(part.tabs.iter_mut()) {
                outcome(row, label, thr, l, p);
            }
        }
        None
    }

    /// The sum of the two lane vectors in lane order, then of the tail values, as
    /// `row_sum_and_bad` adds them.
    #[inline(always)]
    fn lane_sum(s0: __m256d, s1: __m256d, tail: &[f64]) -> f64 {
        let mut lanes = [0.0f64; 8];
        // SAFETY: stores 8 values into the 8-value array; AVX2 is available (inlined into
        // AVX2 code only).
        unsafe {
            _mm256_storeu_pd(lanes.as_mut_ptr(), s0);
            _mm256_storeu_pd(lanes.as_mut_ptr().add(4), s1);
        }
        let mut sum = 0.0;
        for l in lanes {
            sum += l;
        }
        for &v in tail {
            sum += v;
        }
        sum
    }

    /// The row's tail (columns `n8..k`, fewer than 8) as f64 values.
    #[inline(always)]
    fn tail<T: Score>(row: &[T], n8: usize) -> ([f64; 8], usize) {
        let mut t = [0.0f64; 8];
        let rest = &row[n8..];
        for (d, v) in t.iter_mut().zip(rest) {
            *d = v.to_f64();
        }
        (t, rest.len())
    }

    /// One row of a dense (`COUNT`: counted) chunk: (row sum, some value out of range).
    /// Table by table: the first pass over the row also sums and checks it, later ones re-read
    /// it from L1.
    #[inline(always)]
    fn dense_row<T: Score, const COUNT: bool>(
        row: &[T],
        thr: f64,
        lay: &[Layout],
        part: &mut Part,
        sc: &mut [Scratch],
    ) -> (f64, bool) {
        let mut out = (0.0, false);
        for (ti, ((l, tp), s)) in lay.iter().zip(part.tabs.iter_mut()).zip(sc.iter_mut()).enumerate() {
            let (z, a) = (&mut tp.sum0[..], &mut tp.aux[..]);
            match (ti == 0, l.cc) {
                (true, true) => out = dense_table::<T, true, COUNT, false>(row, thr, l, z, a, s),
                (true, false) => out = dense_table::<T, true, COUNT, true>(row, thr, l, z, a, s),
                (false, true) => _ = dense_table::<T, false, COUNT, false>(row, thr, l, z, a, s),
                (false, false) => _ = dense_table::<T, false, COUNT, true>(row, thr, l, z, a, s),
            }
        }
        out
    }

    /// One row into one table of a dense (`COUNT`: counted) chunk, class-conditional or
    /// `POOLED`; with `FIRST`, also (row sum, some value out of range): the entries scattered
    /// for this table, and the dropped ones, are all the entries that can fail.
    #[inline(always)]
    #[allow(clippy::manual_range_contains, clippy::neg_cmp_op_on_partial_ord)] // NaN is out of range
    fn dense_table<T: Score, const FIRST: bool, const COUNT: bool, const POOLED: bool>(
        row: &[T],
        thr: f64,
        l: &Layout,
        sum0: &mut [f64],
        aux: &mut [f64],
        sc: &mut Scratch,
    ) -> (f64, bool) {
        let k = row.len();
        let n8 = k / 8 * 8;
        let u1 = l.e.first_edge();
        // Pooled: the eight lanes; class-conditional: one entry per column.
        assert!(sum0.len() == if POOLED { 8 } else { k } && aux.len() == sum0.len());
        let mut bad = false;
        // SAFETY: AVX2 is available (inlined into `rows` only). Loads read row[j..j+8] with
        // j + 8 <= n8 <= k; the vector loads/stores of `sum0` and `aux` touch entries j..j+8
        // (j + 8 <= k = their length) or, pooled, 0..8 (their length, asserted above). Offsets
        // depend only on k, which no other thread can change; values another thread may change
        // are only compared and added, and the scattered path gets them from the registers
        // (one read of each), with bins clamped into the table.
        let (s0, s1, low) = unsafe {
            let p = row.as_ptr();
            let (t, u) = (_mm256_set1_pd(thr), _mm256_set1_pd(u1));
            let (lo, one) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0));
            let (mut s0, mut s1, mut low) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
            let (zp, ap) = (sum0.as_mut_ptr(), aux.as_mut_ptr());
            let (mut z0, mut z1, mut a0, mut a1) = if POOLED {
                (_mm256_loadu_pd(zp), _mm256_loadu_pd(zp.add(4)), _mm256_loadu_pd(ap), _mm256_loadu_pd(ap.add(4)))
            } else {
                (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd())
            };
            // Blocks of 64 groups of eight: each group's scatter mask is stored (no branch), and
            // the block's scattered entries are handled after it, in column order.
            let mut masks = [0u8; BLOCK];
            for j0 in (0..n8).step_by(8 * BLOCK) {
                let groups = ((n8 - j0) / 8).min(BLOCK);
                let mut any = 0;
                for (g, mask) in masks[..groups].iter_mut().enumerate() {
                let j = j0 + 8 * g;
                let v0 = T::load4(p.add(j));
                let v1 = T::load4(p.add(j + 4));
                if FIRST {
                    s0 = _mm256_add_pd(s0, v0);
                    s1 = _mm256_add_pd(s1, v1);
                }
                let k0 = _mm256_cmp_pd(v0, t, _CMP_GT_OQ);
                let k1 = _mm256_cmp_pd(v1, t, _CMP_GT_OQ);
                let f0 = _mm256_and_pd(k0, _mm256_cmp_pd(v0, u, _CMP_LT_OQ));
                let f1 = _mm256_and_pd(k1, _mm256_cmp_pd(v1, u, _CMP_LT_OQ));
                if POOLED {
                    z0 = _mm256_add_pd(z0, _mm256_and_pd(f0, v0));
                    z1 = _mm256_add_pd(z1, _mm256_and_pd(f1, v1));
                    if COUNT {
                        a0 = _mm256_add_pd(a0, _mm256_and_pd(f0, one));
                        a1 = _mm256_add_pd(a1, _mm256_and_pd(f1, one));
                    }
                } else {
                    let z = zp.add(j);
                    _mm256_storeu_pd(z, _mm256_add_pd(_mm256_loadu_pd(z), _mm256_and_pd(f0, v0)));
                    _mm256_storeu_pd(z.add(4), _mm256_add_pd(_mm256_loadu_pd(z.add(4)), _mm256_and_pd(f1, v1)));
                    if COUNT {
                        let a = ap.add(j);
                        _mm256_storeu_pd(a, _mm256_add_pd(_mm256_loadu_pd(a), _mm256_and_pd(f0, one)));
                        _mm256_storeu_pd(a.add(4), _mm256_add_pd(_mm256_loadu_pd(a.add(4)), _mm256_and_pd(f1, one)));
                    }
                }
                // The lanes to scatter: counted, the kept ones above bin 0 (the dropped ones
                // are checked against the lower bound here); dense, all outside the lane.
                let m = if COUNT {
                    if FIRST {
                        let out = _mm256_or_pd(_mm256_cmp_pd(v0, lo, _CMP_NGE_UQ), _mm256_cmp_pd(v1, lo, _CMP_NGE_UQ));
                        low = _mm256_or_pd(low, out);
                    }
                    _mm256_movemask_pd(_mm256_andnot_pd(f0, k0)) | (_mm256_movemask_pd(_mm256_andnot_pd(f1, k1)) << 4)
                } else {
                    !(_mm256_movemask_pd(f0) | (_mm256_movemask_pd(f1) << 4)) & 0xFF
                };
                *mask = m as u8;
                any |= m;
                }
                if any != 0 {
                    bad |= exceptions(row, &masks[..groups], j0, thr, l, aux, sc);
                }
            }
            if POOLED {
                _mm256_storeu_pd(zp, z0);
                _mm256_storeu_pd(zp.add(4), z1);
                if COUNT {
                    _mm256_storeu_pd(ap, a0);
                    _mm256_storeu_pd(ap.add(4), a1);
                }
            }
            (s0, s1, _mm256_movemask_pd(low) != 0)
        };
        let (v, n) = tail(row, n8);
        for (c, &s) in (n8..).zip(&v[..n]) {
            let fast = s > thr && s < u1;
            let z = l.zero_slot(c);
            sum0[z] += if fast { s } else { 0.0 };
            if COUNT {
                aux[z] += if fast { 1.0 } else { 0.0 };
                if s > thr && !fast {
                    bad |= dense_exception(s, c, thr, l, aux, sc);
                } else if !(s > thr) {
                    bad |= !(s >= -RANGE_TOL);
                }
            } else if !fast {
                bad |= dense_exception(s, c, thr, l, aux, sc);
            }
        }
        if FIRST {
            (lane_sum(s0, s1, &v[..n]), bad || low)
        } else {
            (0.0, false)
        }
    }

    /// Groups of eight per block of the dense pass.
    const BLOCK: usize = 64;

    /// The entries of `row` flagged in `masks` (one byte per group of eight columns from
    /// column `j0`), in column order, through [`dense_exception`]. The values are read again
    /// from the row (in L1): if another thread changed one meanwhile, it lands in the cell of
    /// its new value (a wrong value, never an access outside the tables).
    #[inline(never)]
    fn exceptions<T: Score>(
        row: &[T],
        masks: &[u8],
        j0: usize,
        thr: f64,
        l: &Layout,
        dropped: &mut [f64],
        sc: &mut Scratch,
    ) -> bool {
        let mut bad = false;
        for (w, word) in masks.chunks(8).enumerate() {
            let mut bytes = [0u8; 8];
            bytes[..word.len()].copy_from_slice(word);
            let mut m = u64::from_le_bytes(bytes);
            while m != 0 {
                let bit = m.trailing_zeros() as usize;
                let col = j0 + 64 * w + bit;
                bad |= dense_exception(row[col].to_f64(), col, thr, l, dropped, sc);
                m &= m - 1;
            }
        }
        bad
    }

    /// One row of a sparse chunk: (row sum, some value out of range).
    #[inline(always)]
    #[allow(clippy::manual_range_contains)] // NaN is out of range
    fn sparse_row<T: Score>(row: &[T], thr: f64, lay: &[Layout], sc: &mut [Scratch]) -> (f64, bool) {
        let k = row.len();
        let n8 = k / 8 * 8;
        let mut bad = false;
        // SAFETY: AVX2 is available (inlined into `rows` only). Loads read row[j..j+8] with
        // j + 8 <= n8 <= k; the kept values are taken from the registers, and their slots are
        // bounds-checked indexes with bins clamped into the table.
        let (s0, s1, low) = unsafe {
            let p = row.as_ptr();
            let t = _mm256_set1_pd(thr);
            let lo = _mm256_set1_pd(-RANGE_TOL);
            let (mut s0, mut s1, mut low) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
            for j in (0..n8).step_by(8) {
                let v0 = T::load4(p.add(j));
                let v1 = T::load4(p.add(j + 4));
                s0 = _mm256_add_pd(s0, v0);
                s1 = _mm256_add_pd(s1, v1);
                // Dropped entries are <= threshold < 1: only the lower bound (or NaN) can fail.
                low = _mm256_or_pd(low, _mm256_or_pd(_mm256_cmp_pd(v0, lo, _CMP_NGE_UQ), _mm256_cmp_pd(v1, lo, _CMP_NGE_UQ)));
                let m = _mm256_movemask_pd(_mm256_cmp_pd(v0, t, _CMP_GT_OQ))
                    | (_mm256_movemask_pd(_mm256_cmp_pd(v1, t, _CMP_GT_OQ)) << 4);
                if m != 0 {
                    let mut v = [0.0f64; 8];
                    _mm256_storeu_pd(v.as_mut_ptr(), v0);
                    _mm256_storeu_pd(v.as_mut_ptr().add(4), v1);
                    bad |= kept(&v, m as u32, j, lay, sc);
                }
            }
            (s0, s1, _mm256_movemask_pd(low) != 0)
        };
        let (v, n) = tail(row, n8);
        for (c, &s) in (n8..).zip(&v[..n]) {
            bad |= !(s >= -RANGE_TOL && s <= 1.0 + RANGE_TOL);
            if s > thr {
                for (l, sc) in lay.iter().zip(sc.iter_mut()) {
                    sc.add(l.slot(l.e.bin(s), c), s);
                }
            }
        }
        (lane_sum(s0, s1, &v[..n]), bad || low)
    }

    /// The kept lanes `m` (scores above the threshold >= 0) of a sparse chunk, in lane order,
    /// into every table; whether one is above the range.
    #[inline(never)]
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is out of range
    fn kept(v: &[f64; 8], mut m: u32, j: usize, lay: &[Layout], sc: &mut [Scratch]) -> bool {
        let mut bad = false;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            let s = v[i];
            bad |= !(s <= 1.0 + RANGE_TOL);
            for (l, sc) in lay.iter().zip(sc.iter_mut()) {
                sc.add(l.slot(l.e.bin(s), j + i), s);
            }
            m &= m - 1;
        }
        bad
    }
}
