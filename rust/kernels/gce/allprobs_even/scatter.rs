//! The scattered path of a pass: every entry outside the dense lanes is logged once per chunk
//! and applied to each table's cells in a loop of its own ([`Scratch`]). Each cell adds its
//! scores' units ([`units`]) exactly.

use super::{Layout, Mode, Part, Pass, TabPart, LANES};
use crate::kernels::core::units;

/// A thread's scattered path, for every table of a pass. The entries to scatter are logged
/// once for all tables, as (column, score) in row and column order ([`Scratch::add`]: a
/// sequential write, while the tables' lines would be cold, evicted by the streamed input).
/// When the log is long, and at the chunk's end, each table applies it to its cells, entry by
/// entry, in a tight loop of its own ([`Scratch::flush`]); at the chunk's end,
/// [`Scratch::drain`] moves each table's touched slots into the chunk's part and zeroes them.
#[derive(Debug)]
pub(crate) struct Scratch {
    log: Vec<(u32, f64)>,
    tabs: Vec<Cells>,
}

/// Entries logged before the tables apply them (128 KiB of log).
const FLUSH: usize = 1 << 13;

impl Scratch {
    /// The scratch of `pass`'s tables (their slots fit in u32:
    /// [`crate::kernels::core::spec::MAX_TABLE_CELLS`] slots at most).
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
    /// 0's row (its raised twin's bin 0; unused without one); those from the end of the
    /// table's lane ([`Pass::lane_end`]: below its first edge when the lane is shared) up to
    /// its first edge also go to its own bin 0 ([`Layout::low`]), which the lane holds the rest
    /// of.
    pub(crate) fn flush(&mut self, pass: &Pass, mode: Mode) {
        let (sparse, raise) = (mode == Mode::Sparse, pass.cut.raise);
        for (t, (l, c)) in pass.lay.iter().zip(&mut self.tabs).enumerate() {
            let lane = pass.lane_end(t);
            if l.cc {
                c.apply::<true>(&self.log, l, sparse, raise, lane);
            } else {
                c.apply::<false>(&self.log, l, sparse, raise, lane);
            }
        }
        self.log.clear();
    }

    /// Applies the log, then moves every table's touched slots into the chunk's part (always:
    /// the scratch must be all zero for the next chunk), and folds the part's lane runs
    /// ([`Part::fold_lanes`]): the part is then complete.
    pub(crate) fn drain(&mut self, pass: &Pass, part: &mut Part) {
        self.flush(pass, part.mode);
        part.fold_lanes();
        for (c, p) in self.tabs.iter_mut().zip(&mut part.tabs) {
            c.drain(p);
        }
    }
}

/// One table's cells of the scattered path, and a bit per slot touched since the last drain
/// (a small bitmap: marking a slot never waits for its cell, cold in cache, to be read).
#[derive(Debug)]
struct Cells {
    cells: Vec<Cell>,
    touched: Vec<u64>,
    /// (slot, exact unit sum) of the full runs of [`units::RUN`] scores taken out of a cell.
    spilled: Vec<(usize, i128)>,
}

/// A slot's count and the lane-biased units ([`units::biased`]: scattered scores are valid
/// scores, in [-1e-4, 1 + 1e-4], or their row fails) of its current run, the scores since
/// its count was last a multiple of [`units::RUN`] (wrapping adds: the run's unit sum fits in
/// an `i64`). Sixteen bytes: the cells' cache misses are the scattered path's cost.
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    count: u64,
    run: i64,
}

impl Cell {
    /// The exact unit sum of the current run (its `count % RUN` scores).
    fn run_units(&self) -> i128 {
        units::unbias(self.run, self.count % units::RUN as u64)
    }
}

impl Cells {
    fn new(slots: usize) -> Self {
        Cells { cells: vec![Cell::default(); slots], touched: vec![0; slots.div_ceil(64)], spilled: Vec::new() }
    }

    /// Adds score `s` to slot `slot` (a slot of the table's [`Layout`]: panics otherwise); a
    /// full run is taken out of the cell into `spilled`.
    #[inline(always)]
    fn add(&mut self, slot: usize, s: f64) {
        let c = &mut self.cells[slot];
        c.count += 1;
        c.run = c.run.wrapping_add(units::biased(s));
        if c.count.is_multiple_of(units::RUN as u64) {
            let full = units::unbias(c.run, units::RUN as u64);
            c.run = 0;
            self.spilled.push((slot, full));
        }
        self.touched[slot / 64] |= 1 << (slot % 64);
    }

    /// Adds the logged entries `log` to the cells of table `l` (class-conditional exactly when
    /// `CC`; see [`Scratch::flush`]). In a `sparse` chunk an entry of bin 0 goes to the table's
    /// own bin 0, and also to bin 0's row when above `raise`; otherwise an entry of bin 0 from
    /// `lane` (the end of the table's lane) up goes to both.
    #[inline(always)]
    fn apply<const CC: bool>(&mut self, log: &[(u32, f64)], l: &Layout, sparse: bool, raise: f64, lane: f64) {
        if sparse {
            for &(col, s) in log {
                let col = col as usize;
                self.add(l.kept_slot::<CC>(s, col), s);
                if s > raise && s < l.lane {
                    // Also in the raised twin's bin 0 (slot `col`'s in bin 0's row).
                    self.add(l.outer_slot::<CC>(s, col), s);
                }
            }
        } else if lane < l.lane {
            for &(col, s) in log {
                let col = col as usize;
                self.add(l.outer_slot::<CC>(s, col), s);
                if s >= lane && s < l.lane {
                    self.add(l.low(if CC { col } else { col % LANES }), s);
                }
            }
        } else {
            // The table's own lane: nothing of its bin 0 beside it.
            for &(col, s) in log {
                self.add(l.outer_slot::<CC>(s, col as usize), s);
            }
        }
    }

    /// Moves the touched slots into `p.cells` (in slot order; then the spilled runs, with count
    /// 0) and zeroes them.
    fn drain(&mut self, p: &mut TabPart) {
        for (w, word) in self.touched.iter_mut().enumerate() {
            let mut m = std::mem::take(word);
            while m != 0 {
                let slot = 64 * w + m.trailing_zeros() as usize;
                let c = std::mem::take(&mut self.cells[slot]);
                p.cells.push((slot, c.count as f64, c.run_units()));
                m &= m - 1;
            }
        }
        p.cells.extend(self.spilled.drain(..).map(|(slot, u)| (slot, 0.0, u)));
    }
}
