//! All-probabilities metrics with even bins (SCE and its relatives): every kept entry of the
//! matrix goes into a (group, bin) cell. Per entry only the count and the score sum change; the
//! outcome is 1 only at the true label, so it is added once per row.
//!
//! # What every path computes (the canonical order)
//! Rows are cut into fixed chunks ([`chunks`]: they depend on (N, K) and the grouping only,
//! never on the bin counts or the threads). Within a chunk, each cell's score sum is the plain
//! sum of its scores in row order (then column order), starting from 0.0; the chunk sums of a
//! cell are added in chunk order. Pooled tables of at most `POOL_FROM_CLASSES`
//! class-conditional cells are their class-conditional tables summed over the classes in
//! class order (`collapse`); larger ones are a pooled pass's, which keeps bin 0 in [`LANES`]
//! cells, one per column modulo [`LANES`], added in lane order. Counts are exact integers, so
//! their order does not matter. Every strategy below produces exactly these sums, so the
//! tables are bitwise the same whatever the strategy, the instruction set, the number of
//! threads, and whichever other bin counts share the pass (several tables from one pass are
//! bitwise the single-table ones).
//!
//! # Two thresholds from one pass ("raised twins", `Cut`)
//! A table at a raised threshold (0.01, below every first edge) has the same bins above 0 as
//! the table at the lower threshold (0), holding the same scores in the same order; its bin 0
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
//!   per-class (pooled: per-lane) array by branch-free masked adds (adding 0.0 leaves a sum of
//!   scores unchanged); only the few other entries (a bit mask of the vector comparison) take
//!   the scattered path. A lane's count is the chunk's entries minus those dropped and minus
//!   the counts its table scattered into bins above 0.
//! - [`Mode::Counted`], when the threshold drops many entries but keeps many in bin 0: as
//!   dense, with each lane's count also in a dense array; only kept entries outside the
//!   narrowest lane (or above the raised threshold) are scattered.
//! - [`Mode::Sparse`], when nearly every entry is dropped: only the kept entries are visited,
//!   each through the scattered path, bin 0 included.
//!
//! Rows are checked in the same read. The vector pass checks ranges only where they can fail:
//! an entry in a lane is in (threshold, first edge), inside [0, 1]; every scattered entry is
//! checked on its way; entries dropped but not scattered, which are <= threshold < 1, with one vector
//! comparison against the lower bound. The row sum is the lane sum of [`row_sum_and_bad`], so a
//! row fails exactly when the portable check fails it.
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
use crate::kernels::validate::{failed_row_error, in_range, labels as check_labels, row_ok, row_sum_and_bad, Checks};
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

/// Lanes of a pooled pass's bin 0 (column modulo `LANES`).
pub(crate) const LANES: usize = 8;

/// How a chunk treats bin 0 (see the module doc). Only the speed depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Dense,
    Counted,
    Sparse,
}

/// Where one table's cells live. Slots are cells of the scattered path: class-conditional
/// `bin * k + class` (bin-major: the classes of a row touch consecutive slots), pooled bin
/// b >= 1 in slot `LANES - 1 + b`; bin 0's row there (class-conditional slots `0..k`, pooled
/// `0..LANES` by column mod [`LANES`]) is the raised twin's bin 0 (module doc). The table's
/// own bin 0 comes after all the bins, by lane index `z` (a column's [`Pass::zero_slot`]:
/// class-conditional its class, pooled the column mod [`LANES`]), in slot
/// [`Layout::low`]`(z)`: the dense lanes' layout.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) cc: bool,
    pub(crate) k: usize,
    pub(crate) nb: usize,
    pub(crate) e: EvenEdges,
    /// Bin 0's exclusive upper end (the first edge): its dense lane holds the kept scores below.
    pub(crate) lane: f64,
}

impl Layout {
    pub(crate) fn new(cc: bool, k: usize, b: usize) -> Self {
        let e = EvenEdges::new(b);
        Layout { cc, k, nb: b + 1, lane: e.first_edge(), e }
    }

    /// Slots of bin 0 (a dense lane's length).
    pub(crate) fn width(&self) -> usize {
        if self.cc {
            self.k
        } else {
            LANES
        }
    }

    /// Slots of the bins' rows (the table's bin 0 comes after them).
    fn bin_slots(&self) -> usize {
        if self.cc {
            self.nb * self.k
        } else {
            LANES - 1 + self.nb
        }
    }

    pub(crate) fn slots(&self) -> usize {
        self.bin_slots() + self.width()
    }

    /// Slot of the table's bin 0 of lane index `z` (`z < width()`).
    #[inline(always)]
    fn low(&self, z: usize) -> usize {
        self.bin_slots() + z
    }

    /// Slot of a kept score `s` (above the threshold) of column `col`, for a layout of
    /// class-conditional tables exactly when `CC`.
    #[inline(always)]
    fn kept_slot<const CC: bool>(&self, s: f64, col: usize) -> usize {
        if s < self.lane {
            self.low(if CC { col } else { col % LANES })
        } else {
            self.outer_slot::<CC>(s, col)
        }
    }

    /// Slot of a logged score `s` of column `col` in bin 0's row (the raised twin's bin 0, when
    /// `s` is below the first edge) or in a bin above, without a branch on which; for a layout
    /// of class-conditional tables exactly when `CC`.
    #[inline(always)]
    fn outer_slot<const CC: bool>(&self, s: f64, col: usize) -> usize {
        let b = self.e.bin(s);
        if CC {
            b * self.k + col
        } else {
            let zero = usize::from(b == 0);
            zero * (col % LANES) + (1 - zero) * (LANES - 1 + b)
        }
    }

    /// The slot of the table's bin 0 counting the entries of bin slot `slot` among its columns
    /// (pooled: the first lane's, whose count is added to the others').
    #[inline(always)]
    fn zero_of(&self, slot: usize) -> usize {
        if self.cc {
            self.low(slot % self.k)
        } else {
            self.low(0)
        }
    }

    /// Columns whose bin 0 is lane index `z` (per row).
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

/// The thresholds of a pass: its tables keep the scores above `thr`; with a finite `raise`
/// (above `thr`, below every table's first edge: [`can_raise`]), the pass also makes each
/// table's raised twin, the table of the same bins at threshold `raise` (see the module doc).
/// Otherwise `raise` is infinite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cut {
    pub(crate) thr: f64,
    pub(crate) raise: f64,
}

impl Cut {
    /// A pass at `thr` alone.
    pub(crate) fn at(thr: f64) -> Self {
        Cut { thr, raise: f64::INFINITY }
    }

    pub(crate) fn raised(&self) -> bool {
        self.raise.is_finite()
    }
}

/// The tables of one pass and what they share.
#[derive(Debug, Clone)]
pub(crate) struct Pass {
    pub(crate) lay: Vec<Layout>,
    /// The distinct lane ends of the tables, ascending (the first is the narrowest lane).
    pub(crate) bounds: Vec<f64>,
    /// Each table's lane (an index into `bounds`).
    pub(crate) lane_of: Vec<usize>,
    pub(crate) cut: Cut,
    pub(crate) cc: bool,
    pub(crate) k: usize,
}

impl Pass {
    /// The pass of `bins` (at least one) for `k` classes.
    pub(crate) fn new(cc: bool, k: usize, bins: &[usize], cut: Cut) -> Self {
        let lay: Vec<Layout> = bins.iter().map(|&b| Layout::new(cc, k, b)).collect();
        let mut bounds: Vec<f64> = lay.iter().map(|l| l.lane).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        let lane_of = lay.iter().map(|l| bounds.partition_point(|&u| u < l.lane)).collect();
        Pass { lay, bounds, lane_of, cut, cc, k }
    }

    /// Slots of bin 0 (a dense lane's length).
    pub(crate) fn width(&self) -> usize {
        if self.cc {
            self.k
        } else {
            LANES
        }
    }

    /// Lane index (of bin 0's lanes) of column `col`.
    #[inline(always)]
    pub(crate) fn zero_slot(&self, col: usize) -> usize {
        if self.cc {
            col
        } else {
            col % LANES
        }
    }

    /// The narrowest lane's end.
    #[inline(always)]
    fn narrow(&self) -> f64 {
        self.bounds[0]
    }
}

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

/// A thread's scattered path, for every table of a pass. The entries to scatter are logged
/// once for all tables, as (column, score) in row and column order ([`Scratch::add`]: a
/// sequential write, while the tables' lines would be cold, evicted by the streamed input).
/// When the log is long, and at the chunk's end, each table applies it to its cells, entry by
/// entry, in a tight loop of its own ([`Scratch::flush`]); at the chunk's end,
/// [`Scratch::drain`] moves each table's touched slots into the chunk's part and zeroes them.
/// Each slot's sum is still the sum of its scores in row and column order.
#[derive(Debug)]
pub(crate) struct Scratch {
    log: Vec<(u32, f64)>,
    tabs: Vec<Cells>,
}

/// Entries logged before the tables apply them (128 KiB of log).
const FLUSH: usize = 1 << 13;

impl Scratch {
    /// The scratch of `pass`'s tables (their slots fit in u32:
    /// [`crate::kernels::spec::MAX_TABLE_CELLS`] slots at most).
    pub(crate) fn new(pass: &Pass) -> Self {
        let tabs = pass.lay.iter().map(|l| Cells::new(l.slots())).collect();
        Scratch { log: Vec::with_capacity(FLUSH + 8 * 64), tabs }
    }

    /// Logs score `s` of column `col` (kept: above the threshold).
    #[inline(always)]
    pub(crate) fn add(&mut self, col: usize, s: f64) {
        self.log.push((col as u32, s));
    }

    /// Applies the log when it is long (between rows).
    #[inline(always)]
    pub(crate) fn flush_if_long(&mut self, pass: &Pass, mode: Mode) {
        if self.log.len() >= FLUSH {
            self.flush(pass, mode);
        }
    }

    /// Applies the log to every table's cells and empties it. In a sparse chunk the log holds
    /// every kept entry; otherwise the kept entries outside the pass's narrowest lane or above
    /// the raised threshold, which go to bins above 0 or, below a table's first edge, to bin
    /// 0's row (its raised twin's bin 0; unused without one).
    pub(crate) fn flush(&mut self, pass: &Pass, mode: Mode) {
        let (sparse, raise) = (mode == Mode::Sparse, pass.cut.raise);
        for (l, c) in pass.lay.iter().zip(&mut self.tabs) {
            if l.cc {
                c.apply::<true>(&self.log, l, sparse, raise);
            } else {
                c.apply::<false>(&self.log, l, sparse, raise);
            }
        }
        self.log.clear();
    }

    /// Applies the log, then moves every table's touched slots into the chunk's part (always:
    /// the scratch must be all zero for the next chunk).
    pub(crate) fn drain(&mut self, pass: &Pass, part: &mut Part) {
        self.flush(pass, part.mode);
        for (c, p) in self.tabs.iter_mut().zip(&mut part.tabs) {
            c.drain(p);
        }
    }
}

/// One table's cells of the scattered path, and a bit per slot touched since the last drain
/// (a small bitmap, not a list appended to on the cell's first touch: that made each update
/// wait for the previous one's cell, cold in cache, to be read).
#[derive(Debug)]
struct Cells {
    cells: Vec<[f64; 2]>,
    touched: Vec<u64>,
}

impl Cells {
    fn new(slots: usize) -> Self {
        Cells { cells: vec![[0.0; 2]; slots], touched: vec![0; slots.div_ceil(64)] }
    }

    /// Adds score `s` to slot `slot` (a slot of the table's [`Layout`]: panics otherwise).
    #[inline(always)]
    fn add(&mut self, slot: usize, s: f64) {
        let c = &mut self.cells[slot];
        c[0] += 1.0;
        c[1] += s;
        self.touched[slot / 64] |= 1 << (slot % 64);
    }

    /// Adds the logged entries `log` to the cells of table `l` (class-conditional exactly when
    /// `CC`; see [`Scratch::flush`]). In a `sparse` chunk an entry of bin 0 goes to the table's
    /// own bin 0, and also to bin 0's row when above `raise`.
    #[inline(always)]
    fn apply<const CC: bool>(&mut self, log: &[(u32, f64)], l: &Layout, sparse: bool, raise: f64) {
        if sparse {
            for &(col, s) in log {
                let col = col as usize;
                self.add(l.kept_slot::<CC>(s, col), s);
                if s > raise && s < l.lane {
                    // Also in the raised twin's bin 0 (slot `col`'s in bin 0's row).
                    self.add(l.outer_slot::<CC>(s, col), s);
                }
            }
        } else {
            for &(col, s) in log {
                self.add(l.outer_slot::<CC>(s, col as usize), s);
            }
        }
    }

    /// Moves the touched slots into `p.cells` (in slot order) and zeroes them.
    fn drain(&mut self, p: &mut TabPart) {
        for (w, word) in self.touched.iter_mut().enumerate() {
            let mut m = std::mem::take(word);
            while m != 0 {
                let slot = 64 * w + m.trailing_zeros() as usize;
                let c = std::mem::replace(&mut self.cells[slot], [0.0; 2]);
                p.cells.push((slot, c[0], c[1]));
                m &= m - 1;
            }
        }
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

    /// Adds a chunk's part of table `l` (with lane `lane`, none for sparse chunks).
    fn fold(&mut self, l: &Layout, part: &Part, lane: Option<&LanePart>, p: &TabPart) {
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
    fn into_stats(self, l: &Layout, twin: bool) -> BinStats {
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

/// Statistics for each bin count in `bins`, from one pass over the data. Each table is
/// bitwise the table of a pass with that bin count alone.
pub fn stats<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<BinStats>, KernelError> {
    stats_with(x, g, bins, check, None, Cut::at(g.threshold))
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
    let mut v = stats_with(x, g, bins, check, None, raised_cut(g.threshold, raise, bins)?)?;
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

/// [`stats`], with the strategy forced (tests: every strategy gives the same tables) and the
/// pass's thresholds `cut`: the tables, then (raised) their twins.
pub(crate) fn stats_with<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
    force: Option<Mode>,
    cut: Cut,
) -> Result<Vec<BinStats>, KernelError> {
    if g.class_conditional {
        return pass_tables(x, true, bins, check, force, cut);
    }
    let (mut tables, mut twins) = pooled_tables(x, bins, check, force, cut, None)?;
    tables.append(&mut twins);
    Ok(tables)
}

/// Pooled tables of at most this many class-conditional cells (K x (B + 1)) are their
/// class-conditional tables summed over the classes (`collapse`); larger ones take a pooled
/// pass of their own. Which one depends on (K, B) only, so every entry point agrees.
pub(crate) const POOL_FROM_CLASSES: usize = 1 << 22;

/// Whether the pooled table of `b` bins over `k` classes is its class-conditional table
/// collapsed (`POOL_FROM_CLASSES`).
pub(crate) fn pooled_from_classes(k: usize, b: usize) -> bool {
    k.saturating_mul(b + 1) <= POOL_FROM_CLASSES
}

/// The pooled table of a class-conditional one: each bin's count, score sum and outcome
/// count added over the classes, in class order.
pub(crate) fn collapse(t: &BinStats) -> BinStats {
    let nb = t.nb;
    let mut st = BinStats::zeros(1, nb);
    for g in 0..t.groups {
        for b in 0..nb {
            st.count[b] += t.count[g * nb + b];
            st.sum_score[b] += t.sum_score[g * nb + b];
            st.sum_outcome[b] += t.sum_outcome[g * nb + b];
        }
    }
    st.edges = t.edges[..nb + 1].to_vec();
    st
}

/// The pooled tables (and, raised, their twins) of `bins`: collapsed from the
/// class-conditional tables where `pooled_from_classes` (from `classes`, the
/// class-conditional tables and twins of the same `bins` and `cut`, when the caller has them),
/// else from a pooled pass.
fn pooled_tables<T: Score>(
    x: &Inputs<T>,
    bins: &[usize],
    check: &Checks,
    force: Option<Mode>,
    cut: Cut,
    classes: Option<(&[BinStats], &[BinStats])>,
) -> Result<(Vec<BinStats>, Vec<BinStats>), KernelError> {
    let (from, own): (Vec<usize>, Vec<usize>) = bins.iter().partition(|&&b| pooled_from_classes(x.k, b));
    let split = |mut v: Vec<BinStats>, n: usize| {
        let twins = v.split_off(n);
        (v, twins)
    };
    // The class-conditional tables of `from`, in order.
    let (cc, cc_twins): (Vec<BinStats>, Vec<BinStats>) = match classes {
        Some((t, w)) => {
            let pick = |v: &[BinStats]| -> Vec<BinStats> {
                bins.iter().zip(v).filter(|(&b, _)| pooled_from_classes(x.k, b)).map(|(_, t)| t.clone()).collect()
            };
            (pick(t), pick(w))
        }
        None => split(pass_tables(x, true, &from, check, force, cut)?, from.len()),
    };
    let (mine, mine_twins) = split(pass_tables(x, false, &own, check, force, cut)?, own.len());
    let (mut cc, mut cc_twins, mut mine, mut mine_twins) =
        (cc.iter().map(collapse), cc_twins.iter().map(collapse), mine.into_iter(), mine_twins.into_iter());
    let (mut tables, mut twins) = (Vec::with_capacity(bins.len()), Vec::new());
    for &b in bins {
        let (t, w) = if pooled_from_classes(x.k, b) { (cc.next(), cc_twins.next()) } else { (mine.next(), mine_twins.next()) };
        tables.extend(t);
        twins.extend(w);
    }
    Ok((tables, twins))
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
    let at = |class_conditional: bool, threshold: f64| Grouping {
        binning: crate::kernels::Binning::Even,
        max_prob: false,
        class_conditional,
        threshold,
    };
    let mut out = Vec::new();
    let (mut ct, mut cw) = (Vec::new(), Vec::new());
    if cc {
        let mut v = pass_tables(x, true, bins, check, None, cut)?;
        cw = v.split_off(bins.len());
        ct = v;
    }
    if pooled {
        let classes = cc.then_some((&ct[..], &cw[..]));
        let (pt, pw) = pooled_tables(x, bins, check, None, cut, classes)?;
        out.push((at(false, thr), pt));
        if let Some(r) = raise {
            out.push((at(false, r), pw));
        }
    }
    if cc {
        out.push((at(true, thr), ct));
        if let Some(r) = raise {
            out.push((at(true, r), cw));
        }
    }
    Ok(out)
}

/// One row pass over `bins` (class-conditional exactly when `cc`): its tables, then (raised)
/// their twins.
fn pass_tables<T: Score>(
    x: &Inputs<T>,
    cc: bool,
    bins: &[usize],
    check: &Checks,
    force: Option<Mode>,
    cut: Cut,
) -> Result<Vec<BinStats>, KernelError> {
    if check.labels {
        check_labels(x)?;
    }
    if bins.is_empty() {
        return Ok(Vec::new());
    }
    let pass = Pass::new(cc, x.k, bins, cut);
    let mut total: Vec<Total> = pass.lay.iter().map(Total::new).collect();
    let mut raised: Vec<Total> = if cut.raised() { pass.lay.iter().map(Total::new).collect() } else { Vec::new() };
    let scratch = PerThread::<Option<Scratch>>::new();
    let chunks = chunks(x.n, x.k, cc);
    map_fold(
        &chunks,
        |rows| scratch.with(|guard| {
            let sc = guard.get_or_insert_with(|| Scratch::new(&pass));
            let mode = force.unwrap_or_else(|| choose(x.row(rows.start), &pass));
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
            for (t, (l, p)) in pass.lay.iter().zip(&part.tabs).enumerate() {
                total[t].fold(l, &part, part.lanes.get(pass.lane_of[t]), p);
                if let Some(r) = raised.get_mut(t) {
                    for &o in &p.raised {
                        r.outcome[o] += 1.0;
                    }
                }
            }
        },
    )?;
    // A twin's cells are its table's: bins above 0 the same, bin 0 in bin 0's row.
    for ((r, t), l) in raised.iter_mut().zip(&total).zip(&pass.lay) {
        let bins = l.low(0);
        r.cells[..bins].copy_from_slice(&t.cells[..bins]);
    }
    let twins = raised.into_iter().zip(&pass.lay).map(|(t, l)| t.into_stats(l, true));
    Ok(total.into_iter().zip(&pass.lay).map(|(t, l)| t.into_stats(l, false)).chain(twins).collect())
}

/// The fixed row chunks of a pass: they depend on the shape and the grouping only (never on
/// the bin counts, so that tables sharing a pass are the single-pass ones), and hold at least
/// 1024 rows' worth of a dense chunk's lane: chunk parts are folded on one thread, so they
/// must be few and small next to the work of their chunk.
pub(crate) fn chunks(n: usize, k: usize, cc: bool) -> Vec<Range<usize>> {
    let width = if cc { k } else { LANES };
    row_chunks_min(n, k, 1024 * width)
}

/// The strategy for a chunk starting with `row`, from its entries in the narrowest lane, and
/// kept: dense if at most 1/16 are not in the lane, sparse if at most 1/256 are kept (1/16
/// with several tables), else counted.
fn choose<T: Score>(row: &[T], pass: &Pass) -> Mode {
    let (thr, u) = (pass.cut.thr, pass.narrow());
    let (mut fast, mut kept) = (0usize, 0usize);
    for v in row {
        let s = v.to_f64();
        fast += (s > thr && s < u) as usize;
        kept += (s > thr) as usize;
    }
    let k = row.len();
    // A kept entry costs one scattered update per table; the dense lane, a pass per lane.
    let sparse_at = if pass.lay.len() > 1 { 16 } else { 256 };
    if 16 * (k - fast) <= k {
        Mode::Dense
    } else if sparse_at * kept <= k {
        Mode::Sparse
    } else {
        Mode::Counted
    }
}

/// An entry `s` of column `col` flagged by a dense or counted chunk (outside the narrowest
/// lane, or above the raised threshold; counted chunks flag only kept entries): if kept,
/// logged for the tables' cells; if not, counted once in `dropped`. Whether it fails the range
/// check (the lanes' entries cannot).
#[inline(always)]
fn outside(s: f64, col: usize, pass: &Pass, dropped: &mut [f64], sc: &mut Scratch) -> bool {
    if s > pass.cut.thr {
        sc.add(col, s);
    } else {
        dropped[pass.zero_slot(col)] += 1.0;
    }
    !in_range(s)
}

/// The outcomes of a row (`label < row.len()`) in every table of the pass, and in their raised
/// twins: its true-label score's cell, where kept.
#[inline(always)]
fn outcomes<T: Score>(row: &[T], label: usize, pass: &Pass, part: &mut Part) {
    let s = row[label].to_f64();
    if s > pass.cut.thr {
        for (l, p) in pass.lay.iter().zip(part.tabs.iter_mut()) {
            let cell = l.outcome_cell(label, l.e.bin(s));
            p.outcome.push(cell);
            if s > pass.cut.raise {
                p.raised.push(cell);
            }
        }
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
        pass: &Pass,
        part: &mut Part,
        sc: &mut Scratch,
        check: &Checks,
    ) -> Option<usize> {
        let thr = pass.cut.thr;
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = row_sum_and_bad(row);
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, bad, check) || label >= row.len() {
                return Some(i);
            }
            match part.mode {
                Mode::Dense => dense_row::<T, false>(row, pass, part, sc),
                Mode::Counted => dense_row::<T, true>(row, pass, part, sc),
                Mode::Sparse => {
                    for (c, v) in row.iter().enumerate() {
                        let v = v.to_f64();
                        if v > thr {
                            sc.add(c, v);
                        }
                    }
                }
            }
            outcomes(row, label, pass, part);
            sc.flush_if_long(pass, part.mode);
        }
        None
    }
}

/// One row of a dense (`COUNT`: counted) chunk, portable: each lane (masked adds,
/// vectorised), then the entries outside the narrowest lane in column order.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is in no lane
fn dense_row<T: Score, const COUNT: bool>(row: &[T], pass: &Pass, part: &mut Part, sc: &mut Scratch) {
    let thr = pass.cut.thr;
    for (lp, &u) in part.lanes.iter_mut().zip(&pass.bounds) {
        let lane = |z: &mut f64, a: &mut f64, v: &T| {
            let s = v.to_f64();
            let f = s > thr && s < u;
            *z += if f { s } else { 0.0 };
            if COUNT {
                *a += if f { 1.0 } else { 0.0 };
            }
        };
        if pass.cc {
            let (sum0, count) = (&mut lp.sum0[..row.len()], &mut lp.count[..row.len()]);
            for ((z, a), v) in sum0.iter_mut().zip(count.iter_mut()).zip(row) {
                lane(z, a, v);
            }
        } else {
            let (sum0, count) = (&mut lp.sum0[..LANES], &mut lp.count[..LANES]);
            let mut it = row.chunks_exact(LANES);
            for c in &mut it {
                for ((z, a), v) in sum0.iter_mut().zip(count.iter_mut()).zip(c) {
                    lane(z, a, v);
                }
            }
            for ((z, a), v) in sum0.iter_mut().zip(count.iter_mut()).zip(it.remainder()) {
                lane(z, a, v);
            }
        }
    }
    let u = pass.narrow();
    for (c, v) in row.iter().enumerate() {
        let s = v.to_f64();
        let fast = s > thr && s < u;
        // Outside the narrowest lane, or above the raised threshold (the twins' entries).
        if (if COUNT { s > thr && !fast } else { !fast }) || s > pass.cut.raise {
            outside(s, c, pass, &mut part.dropped, sc);
        }
    }
}

/// [`accumulate_portable`], with AVX2 when available.
pub(crate) fn accumulate<T: Score>(
    x: &Inputs<T>,
    rows: Range<usize>,
    pass: &Pass,
    part: &mut Part,
    sc: &mut Scratch,
    check: &Checks,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        simd::record(simd::Kernel::SceRows, simd::Level::Avx2);
        // SAFETY: the CPU has AVX2, the only feature `x86::rows` is compiled for (it asserts
        // the shapes of the part and scratch tables itself).
        return unsafe { x86::rows(x, rows, pass, part, sc, check) };
    }
    simd::record(simd::Kernel::SceRows, simd::Level::Portable);
    accumulate_portable(x, rows, pass, part, sc, check)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::{outcomes, outside, Mode, Part, Pass, Scratch};
    use crate::kernels::validate::{in_range, row_ok, Checks, RANGE_TOL};
    use crate::kernels::{Inputs, Score};

    /// [`super::accumulate_portable`] with AVX2: the same updates of every cell in the same
    /// order, and the same row checks (see the module doc). Eight values at a time: row-sum
    /// lanes as [`crate::kernels::validate::row_sum_and_bad`] adds them, one comparison pair
    /// per lane of the pass (masked adds into the per-class array, or, pooled, into registers
    /// holding the eight lanes), and a bit mask sending the entries outside the narrowest lane
    /// (and, with raised twins, those above the raised threshold) to the scattered path.
    ///
    /// Every table must have `x.k` classes, and `part`/`sc` be shaped by `pass` (asserted).
    #[target_feature(enable = "avx2")]
    pub(super) fn rows<T: Score>(
        x: &Inputs<T>,
        rows: Range<usize>,
        pass: &Pass,
        part: &mut Part,
        sc: &mut Scratch,
        check: &Checks,
    ) -> Option<usize> {
        let k = x.k;
        assert!(pass.k == k && pass.lay.iter().all(|l| l.k == k));
        assert!(part.tabs.len() == pass.lay.len() && !pass.bounds.is_empty());
        if part.mode != Mode::Sparse {
            let w = pass.width();
            assert!(part.lanes.len() == pass.bounds.len() && part.dropped.len() == w);
            assert!(part.lanes.iter().all(|lp| lp.sum0.len() == w && lp.count.len() == w));
        }
        let raised = pass.cut.raised();
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = match part.mode {
                Mode::Dense if raised => dense_row::<T, false, true>(row, pass, part, sc),
                Mode::Dense => dense_row::<T, false, false>(row, pass, part, sc),
                Mode::Counted if raised => dense_row::<T, true, true>(row, pass, part, sc),
                Mode::Counted => dense_row::<T, true, false>(row, pass, part, sc),
                Mode::Sparse => sparse_row(row, pass, sc),
            };
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, bad, check) || label >= k {
                return Some(i);
            }
            outcomes(row, label, pass, part);
            sc.flush_if_long(pass, part.mode);
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
    /// Block by block of [`BLOCK`] groups of eight columns, and within a block lane by lane:
    /// the first (narrowest) lane's pass over a block also sums and checks it and flags the
    /// entries to scatter; the other lanes (one per other first edge) re-read it from L1.
    #[inline(always)]
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is in no lane
    fn dense_row<T: Score, const COUNT: bool, const RAISE: bool>(
        row: &[T],
        pass: &Pass,
        part: &mut Part,
        sc: &mut Scratch,
    ) -> (f64, bool) {
        let n8 = row.len() / 8 * 8;
        let thr = pass.cut.thr;
        let mut first = RowCheck::default();
        let raise = pass.cut.raise;
        for j0 in (0..n8).step_by(8 * BLOCK) {
            let cols = j0..(j0 + 8 * BLOCK).min(n8);
            let mut masks = [0u8; BLOCK];
            let mut any = false;
            for (li, (lp, &u)) in part.lanes.iter_mut().zip(&pass.bounds).enumerate() {
                let (z, a, c) = (&mut lp.sum0[..], &mut lp.count[..], cols.clone());
                any |= match (li == 0, pass.cc) {
                    (true, true) => lane_block::<T, true, RAISE, COUNT, false>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                    (true, false) => lane_block::<T, true, RAISE, COUNT, true>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                    (false, true) => lane_block::<T, false, false, COUNT, false>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                    (false, false) => lane_block::<T, false, false, COUNT, true>(row, c, thr, u, raise, z, a, &mut first, &mut masks),
                };
            }
            if any {
                first.bad |= exceptions(row, &masks[..cols.len() / 8], j0, pass, &mut part.dropped, sc);
            }
        }
        row_tail::<T, COUNT>(row, n8, pass, part, sc, first)
    }

    /// The tail of a dense (`COUNT`: counted) row (columns `n8..`, fewer than eight) into the
    /// lanes and the scattered path, and the row's checks `first` completed: (row sum, some
    /// value out of range).
    #[inline(always)]
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is in no lane
    fn row_tail<T: Score, const COUNT: bool>(
        row: &[T],
        n8: usize,
        pass: &Pass,
        part: &mut Part,
        sc: &mut Scratch,
        mut first: RowCheck,
    ) -> (f64, bool) {
        let thr = pass.cut.thr;
        let (v, n) = tail(row, n8);
        let narrow = pass.narrow();
        for (c, &s) in (n8..).zip(&v[..n]) {
            let z = pass.zero_slot(c);
            for (lp, &u) in part.lanes.iter_mut().zip(&pass.bounds) {
                let fast = s > thr && s < u;
                lp.sum0[z] += if fast { s } else { 0.0 };
                if COUNT {
                    lp.count[z] += if fast { 1.0 } else { 0.0 };
                }
            }
            let fast = s > thr && s < narrow && !(s > pass.cut.raise);
            if COUNT && !(s > thr) {
                first.bad |= !(s >= -RANGE_TOL);
            } else if !fast {
                first.bad |= outside(s, c, pass, &mut part.dropped, sc);
            }
        }
        // SAFETY: AVX2 is available (inlined into `rows` only); register operations only.
        let low = unsafe { _mm256_movemask_pd(first.low) != 0 };
        (lane_sum(first.s0, first.s1, &v[..n]), first.bad || low)
    }

    /// The first lane's checks of a row, carried from block to block: the row-sum lanes, the
    /// lanes below the range (counted chunks), and whether a scattered entry failed.
    struct RowCheck {
        s0: __m256d,
        s1: __m256d,
        low: __m256d,
        bad: bool,
    }

    impl Default for RowCheck {
        fn default() -> Self {
            // SAFETY: SSE2/AVX register initialisation only (x86_64 code built for AVX2 use).
            unsafe { RowCheck { s0: _mm256_setzero_pd(), s1: _mm256_setzero_pd(), low: _mm256_setzero_pd(), bad: false } }
        }
    }

    /// Columns `cols` (groups of eight, at most [`BLOCK`]) of a row into one lane (scores in
    /// (`thr`, `u`)) of a dense (`COUNT`: counted) chunk, class-conditional or `POOLED`. With
    /// `FIRST` (the narrowest lane), also the row's checks in `first` and each group's mask of
    /// the entries to scatter in `masks` (dense: all outside the lane; counted: the kept ones
    /// outside it, the dropped ones being checked against the lower bound here; with `RAISE`,
    /// also those above `raise`): those are all the entries that can fail. Whether any entry
    /// is to scatter (`FIRST` only).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn lane_block<T: Score, const FIRST: bool, const RAISE: bool, const COUNT: bool, const POOLED: bool>(
        row: &[T],
        cols: Range<usize>,
        thr: f64,
        u: f64,
        raise: f64,
        sum0: &mut [f64],
        count: &mut [f64],
        first: &mut RowCheck,
        masks: &mut [u8; BLOCK],
    ) -> bool {
        let k = row.len();
        let groups = cols.len() / 8;
        let j0 = cols.start;
        // Pooled: the eight lanes; class-conditional: one entry per column.
        assert!(sum0.len() == if POOLED { 8 } else { k } && count.len() == sum0.len());
        assert!(cols.end <= k && cols.len().is_multiple_of(8) && groups <= BLOCK);
        // SAFETY: AVX2 is available (inlined into `rows` only). Loads read row[j..j+8] with
        // j + 8 <= cols.end <= k (asserted); the vector loads/stores of `sum0` and `count`
        // touch entries j..j+8 (j + 8 <= k = their length) or, pooled, 0..8 (their length,
        // asserted above). Offsets depend only on k and `cols`, which no other thread can
        // change; values another thread may change are only compared and added, and the
        // scattered path reads them again and tests them again, with bins clamped into the
        // table.
        unsafe {
            let p = row.as_ptr();
            let (t, up, rise) = (_mm256_set1_pd(thr), _mm256_set1_pd(u), _mm256_set1_pd(raise));
            let (lo, one) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0));
            let every = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
            let (mut s0, mut s1, mut low) = (first.s0, first.s1, first.low);
            let (zp, ap) = (sum0.as_mut_ptr(), count.as_mut_ptr());
            let (mut z0, mut z1, mut a0, mut a1) = if POOLED {
                (_mm256_loadu_pd(zp), _mm256_loadu_pd(zp.add(4)), _mm256_loadu_pd(ap), _mm256_loadu_pd(ap.add(4)))
            } else {
                (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd())
            };
            // Each group's scatter mask is stored (no branch), and the block's scattered
            // entries are handled after it, in column order.
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
                let f0 = _mm256_and_pd(k0, _mm256_cmp_pd(v0, up, _CMP_LT_OQ));
                let f1 = _mm256_and_pd(k1, _mm256_cmp_pd(v1, up, _CMP_LT_OQ));
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
                if FIRST {
                    let (m0, m1) = if COUNT {
                        let out = _mm256_or_pd(_mm256_cmp_pd(v0, lo, _CMP_NGE_UQ), _mm256_cmp_pd(v1, lo, _CMP_NGE_UQ));
                        low = _mm256_or_pd(low, out);
                        (_mm256_andnot_pd(f0, k0), _mm256_andnot_pd(f1, k1))
                    } else {
                        (_mm256_andnot_pd(f0, every), _mm256_andnot_pd(f1, every))
                    };
                    // With `RAISE`, also those above the raised threshold.
                    let (m0, m1) = if RAISE {
                        (_mm256_or_pd(m0, _mm256_cmp_pd(v0, rise, _CMP_GT_OQ)), _mm256_or_pd(m1, _mm256_cmp_pd(v1, rise, _CMP_GT_OQ)))
                    } else {
                        (m0, m1)
                    };
                    let m = _mm256_movemask_pd(m0) | (_mm256_movemask_pd(m1) << 4);
                    *mask = m as u8;
                    any |= m;
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
            if FIRST {
                (first.s0, first.s1, first.low) = (s0, s1, low);
            }
            any != 0
        }
    }

    /// Groups of eight per block of the dense pass.
    const BLOCK: usize = 64;

    /// The entries of `row` flagged in `masks` (one byte per group of eight columns from
    /// column `j0`), in column order, through [`outside`]: whether one fails the range check.
    /// The values are read again from the row (in L1): if another thread changed one
    /// meanwhile, it lands in the cell of its new value (a wrong value, never an access
    /// outside the tables).
    #[inline(never)]
    fn exceptions<T: Score>(row: &[T], masks: &[u8], j0: usize, pass: &Pass, dropped: &mut [f64], sc: &mut Scratch) -> bool {
        let mut bad = false;
        for (w, word) in masks.chunks(8).enumerate() {
            let mut bytes = [0u8; 8];
            bytes[..word.len()].copy_from_slice(word);
            let mut m = u64::from_le_bytes(bytes);
            while m != 0 {
                let col = j0 + 64 * w + m.trailing_zeros() as usize;
                bad |= outside(row[col].to_f64(), col, pass, dropped, sc);
                m &= m - 1;
            }
        }
        bad
    }

    /// One row of a sparse chunk: (row sum, some value out of range).
    #[inline(always)]
    fn sparse_row<T: Score>(row: &[T], pass: &Pass, sc: &mut Scratch) -> (f64, bool) {
        let thr = pass.cut.thr;
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
                    bad |= kept(&v, m as u32, j, sc);
                }
            }
            (s0, s1, _mm256_movemask_pd(low) != 0)
        };
        let (v, n) = tail(row, n8);
        for (c, &s) in (n8..).zip(&v[..n]) {
            bad |= !in_range(s);
            if s > thr {
                sc.add(c, s);
            }
        }
        (lane_sum(s0, s1, &v[..n]), bad || low)
    }

    /// The kept lanes `m` (scores above the threshold >= 0) of a sparse chunk, in lane order,
    /// into every table; whether one is above the range.
    #[inline(never)]
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is out of range
    fn kept(v: &[f64; 8], mut m: u32, j: usize, sc: &mut Scratch) -> bool {
        let mut bad = false;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            let s = v[i];
            bad |= !(s <= 1.0 + RANGE_TOL);
            sc.add(j + i, s);
            m &= m - 1;
        }
        bad
    }
}
