//! Where a pass's tables live: each table's slots ([`Layout`]), the thresholds of a pass
//! ([`Cut`], raised twins included) and the tables sharing one row pass ([`Pass`]).

use super::LANES;
use crate::kernels::core::edges::EvenEdges;

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
    pub(crate) fn low(&self, z: usize) -> usize {
        self.bin_slots() + z
    }

    /// Slot of a kept score `s` (above the threshold) of column `col`, for a layout of
    /// class-conditional tables exactly when `CC`.
    #[inline(always)]
    pub(super) fn kept_slot<const CC: bool>(&self, s: f64, col: usize) -> usize {
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
    pub(super) fn outer_slot<const CC: bool>(&self, s: f64, col: usize) -> usize {
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
    pub(super) fn zero_of(&self, slot: usize) -> usize {
        if self.cc {
            self.low(slot % self.k)
        } else {
            self.low(0)
        }
    }

    /// Columns whose bin 0 is lane index `z` (per row).
    pub(super) fn columns_of(&self, z: usize) -> usize {
        if self.cc {
            1
        } else {
            self.k / LANES + usize::from(z < self.k % LANES)
        }
    }

    /// Group of the true label's score.
    #[inline(always)]
    pub(super) fn outcome_cell(&self, label: usize, bin: usize) -> usize {
        if self.cc {
            label * self.nb + bin
        } else {
            bin
        }
    }
}

/// The thresholds of a pass: its tables keep the scores above `thr`; with a finite `raise`
/// (above `thr`, below every table's first edge: [`super::can_raise`]), the pass also makes
/// each table's raised twin, the table of the same bins at threshold `raise` (see the module
/// doc). Otherwise `raise` is infinite.
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
    /// The lane ends, ascending (the first is the narrowest lane): the tables' distinct first
    /// edges, or (a shared lane) the narrowest alone.
    pub(crate) bounds: Vec<f64>,
    /// Each table's lane (an index into `bounds`).
    pub(crate) lane_of: Vec<usize>,
    pub(crate) cut: Cut,
    pub(crate) cc: bool,
    pub(crate) k: usize,
}

impl Pass {
    /// The pass of `bins` (at least one) for `k` classes: a dense lane per distinct first edge.
    pub(crate) fn new(cc: bool, k: usize, bins: &[usize], cut: Cut) -> Self {
        let lay: Vec<Layout> = bins.iter().map(|&b| Layout::new(cc, k, b)).collect();
        let mut bounds: Vec<f64> = lay.iter().map(|l| l.lane).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        let lane_of = lay.iter().map(|l| bounds.partition_point(|&u| u < l.lane)).collect();
        Pass { lay, bounds, lane_of, cut, cc, k }
    }

    /// The same pass with one lane, the narrowest, for every table. A table whose lane then
    /// ends below its first edge ([`Pass::lane_end`]) takes the kept scores from there up to
    /// its first edge through the scattered path, into its own bin 0 slots beside the lane (see
    /// `Scratch::flush`): a masked add per entry and lane saved, a scattered add per table and
    /// such score paid ([`shared_lane`](super::shared_lane) chooses).
    pub(crate) fn shared(mut self) -> Self {
        self.bounds.truncate(1);
        self.lane_of.fill(0);
        self
    }

    /// The widest of the tables' first edges (the last lane end before [`Pass::shared`]).
    pub(crate) fn widest(&self) -> f64 {
        self.lay.iter().map(|l| l.lane).fold(self.narrow(), f64::max)
    }

    /// The end of table `t`'s lane: its first edge, or below it when the lane is shared.
    #[inline(always)]
    pub(crate) fn lane_end(&self, t: usize) -> f64 {
        self.bounds[self.lane_of[t]]
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
    pub(super) fn narrow(&self) -> f64 {
        self.bounds[0]
    }
}
