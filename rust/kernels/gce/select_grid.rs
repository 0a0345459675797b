//! The first pass's grid: [`GridLocator`], a score's bucket among the grid's bounds without a
//! search, and the pass's fast path.
//!
//! The fast path ([`GridPass`]): every group's plan is the grid, its buckets below
//! the split tabled one by one and those above by super-bucket, and the later plans of the
//! grouping (higher thresholds) share those regions. One lookup of the whole grid gives a
//! score's bucket, and its table slot and count follow by arithmetic, where the general path
//! searches the group's regions and takes one of two locators; a later plan adds only the
//! scores that fall in its few slots that straddle its threshold (one unsigned comparison of
//! the key), where the general path tests the threshold (not predictable) and a bit per score.
//! Tables bit for bit those of the general path (`tests_select.rs`).

use std::cmp::Ordering;
use std::marker::PhantomData;

use super::{search, Hit, Keyed, Kind, Plan, Region, Scanner, SUPER};

pub(super) struct GridPass<'a, T: Keyed> {
    locator: GridLocator<'a, T>,
    /// Buckets of the grid below the split (the `Grid` region's, tabled one by one).
    fine: usize,
    /// Per group: the table slots of its `Grid` and `GridSuper` regions.
    slots: Vec<(usize, usize)>,
    /// Length of the first plan's grid counts (its scratch counts start there).
    counts_size: usize,
    /// Per group, per later plan: the lowest key above the plan's threshold and the width of
    /// the key range from there in which the plan has something to add.
    later: Vec<Vec<(i64, u128)>>,
}

impl<'a, T: Keyed> GridPass<'a, T> {
    /// The fast path of these scanners, if their plans have the first pass's shape.
    pub(super) fn of(scanners: &[Scanner<'a, T>]) -> Option<Self> {
        let (first, rest) = scanners.split_first()?;
        if first.shares || rest.iter().any(|sc| !sc.shares) {
            return None;
        }
        let plan: &'a Plan = first.plan;
        let mut grid = None;
        let mut slots = Vec::with_capacity(plan.groups.len());
        for rs in &plan.groups {
            let [fine, coarse] = &rs[..] else { return None };
            let joined = fine.kind == Kind::Grid && coarse.kind == Kind::GridSuper && fine.bounds.end == coarse.bounds.start + 1;
            // one grid and one split for every group (the fast path's one lookup and `fine`)
            let shape = (fine.bounds.start, fine.bounds.end, coarse.bounds.end);
            if !joined || *grid.get_or_insert(shape) != shape {
                return None;
            }
            slots.push((fine.slot, coarse.slot));
        }
        let (start, split, end) = grid?;
        let keeps: Vec<i64> = rest.iter().map(|sc| first_key_above::<T>(sc.plan.threshold)).collect();
        let later = (0..plan.groups.len())
            .map(|g| {
                rest.iter()
                    .zip(&keeps)
                    .map(|(sc, &keep)| (keep, (skip_from(sc.plan, &sc.plan.groups[g], &sc.whole) as i128 - keep as i128).max(0) as u128))
                    .collect()
            })
            .collect();
        Some(GridPass { locator: GridLocator::new(&plan.bounds[start..end]), fine: split - 1 - start, slots, counts_size: plan.counts_size, later })
    }

    /// [`super::Scan::visit`] of the scores of one group `g` (one score, or a class's column),
    /// with the loop's invariants (the group's slots, the later plans' key ranges) read once.
    #[inline(always)]
    pub(super) fn visit_group(&self, scanners: &mut [Scanner<'a, T>], g: usize, scores: impl Iterator<Item = (T, bool)>) {
        let Some((first, rest)) = scanners.split_first_mut() else { return };
        let threshold = first.plan.threshold;
        let (slots, fine, scratch) = (self.slots[g], self.fine, self.counts_size);
        let later = &self.later[g][..];
        let any_later = later.iter().any(|&(_, span)| span > 0);
        for (s, outcome) in scores {
            let wide = s.to_f64();
            // plans are sorted by threshold: a score the first drops, every plan drops
            if wide.partial_cmp(&threshold) != Some(Ordering::Greater) {
                continue;
            }
            let key = s.key();
            let Some(b) = self.locator.locate(key) else { continue };
            let (slot, count) = place(slots, fine, scratch, b);
            // the first plan shares nothing (no whole slots to skip)
            first.add_grid(slot, count, wide, outcome);
            if any_later {
                for (sc, &(keep, span)) in rest.iter_mut().zip(later) {
                    // one unsigned comparison: the key is in the slots straddling the threshold
                    if ((key as i128 - keep as i128) as u128) < span {
                        sc.add(Hit::Grid(slot, count), s, wide, outcome);
                    }
                }
            }
        }
    }
}

/// The table slot and the count index of grid bucket `b` of a group whose `Grid` and
/// `GridSuper` regions start at `slots`: below the split (`fine` buckets) a slot per bucket and
/// a scratch count (`scratch + b`, discarded), above it the super-bucket's slot and the
/// bucket's count. By masks, not a branch: which side a score takes is not predictable (the
/// branch cost the class-conditional first pass a tenth of its time).
#[inline(always)]
fn place((fine_slot, super_slot): (usize, usize), fine: usize, scratch: usize, b: usize) -> (usize, usize) {
    let above = 0usize.wrapping_sub((b >= fine) as usize);
    let d = b.wrapping_sub(fine);
    let slot = ((super_slot + d / SUPER) & above) | ((fine_slot + b) & !above);
    let count = ((SUPER * super_slot).wrapping_add(d) & above) | ((scratch + b) & !above);
    (slot, count)
}

/// The lowest key of `T` whose value is above `threshold` (f64; keys order as values do).
pub(super) fn first_key_above<T: Keyed>(threshold: f64) -> i64 {
    // the first key in [key(-inf), key(+inf) + 1) whose value is above the threshold, by
    // bisection (the keys outside are NaNs'; hi when none is)
    let (mut lo, mut hi) = (T::key_of_wide(f64::NEG_INFINITY), T::key_of_wide(f64::INFINITY) + 1);
    while lo < hi {
        let mid = (lo as i128 + (hi as i128 - lo as i128) / 2) as i64; // (f64 keys span 2^64)
        if T::value_of_key(mid) > threshold {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The key from which a later plan has nothing to add in one group (given the plan's `whole`
/// bits): every key at or above it lies in a whole slot (the previous plan's table) or in no
/// region. The regions (sorted by `lo`) are walked down from the top, slot by slot, to the
/// first slot that is not whole or the first fetch region; `i64::MIN` if there is none.
fn skip_from(plan: &Plan, regions: &[Region], whole: &[u64]) -> i64 {
    let is_whole = |i: usize| whole.get(i / 64).is_some_and(|&w| w >> (i % 64) & 1 == 1);
    for r in regions.iter().rev() {
        if r.kind == Kind::Fetch {
            return r.hi;
        }
        let b = &plan.bounds[r.bounds.clone()];
        let step = if r.kind == Kind::GridSuper { SUPER } else { 1 };
        for j in (0..(b.len() - 1).div_ceil(step)).rev() {
            if !is_whole(r.slot + j) {
                return b[(step * (j + 1)).min(b.len() - 1)];
            }
        }
    }
    i64::MIN
}

/// The flag of a locator cell with one bound inside it (a bucket index is below it).
const ONE_INSIDE: i32 = 1 << 30;
/// With [`ONE_INSIDE`]: the bound's offset from the cell's start is in the cell, above the
/// bucket index (so that the lookup reads no bound).
const PACKED: i32 = 1 << 29;

/// The bucket of a score among the first pass's grid bounds without a search (exactly
/// [`search`]): non-negative keys index a table of cells by their bit pattern, each binade
/// (exponent) cut into a power of two of equal cells, at least twice as many as the bounds in
/// it (so a uniform grid's cells are narrower than half its step and hold at most one bound
/// inside them), and one comparison finishes the lookup, with the bound's offset in the cell
/// when it fits ([`PACKED`]; the grid's bounds above 2^-6 for float32) or the bound. The table
/// is about four cells per bound. Cells holding more bounds, negative keys and keys past the
/// last bound take the search.
pub struct GridLocator<'a, T: Keyed> {
    bounds: &'a [i64],
    /// Per cell: the bucket of the cell's first key (with [`ONE_INSIDE`] if a bound lies inside
    /// the cell, and [`PACKED`] with the bound's offset above `bucket_bits`), or -2 (the
    /// search).
    table: Vec<i32>,
    /// Bits of a packed cell's bucket index (the offset has the 29 - `bucket_bits` above).
    bucket_bits: u32,
    /// Per binade: its first cell and the shift of its mantissa bits to a cell.
    base: Vec<(u32, u32)>,
    mant: u32,
    /// The longest run of bounds that are consecutive multiples of one power of two (the
    /// grid's uniform steps on [0, 1]): its keys find their bucket by arithmetic, no table.
    pub(super) uniform: Option<Uniform>,
    /// The keys' type (the arithmetic reads a key's value as a `T`).
    _keys: PhantomData<T>,
}

/// A run of bounds `bounds[first..=last]` whose values are `i * step` for consecutive `i`
/// from `i0`, `step` a power of two: a key in `[lo, hi)` (`bounds[first]`, `bounds[last]`)
/// is in bucket `first + floor(value / step) - i0`, exactly (`value * scale`, `scale` =
/// 1 / `step`, is exact and its floor an integer).
#[derive(Clone, Copy)]
pub(super) struct Uniform {
    lo: i64,
    hi: i64,
    scale: f64,
    pub(super) first: usize,
    i0: usize,
}

/// Runs shorter than this take the table (not worth a test on every key).
const UNIFORM_MIN: usize = 64;

impl Uniform {
    /// The bucket of `key` if it lies in the run (a key of the `T` the run was found for).
    #[inline(always)]
    fn bucket<T: Keyed>(self, key: i64) -> Option<usize> {
        if key < self.lo || key >= self.hi {
            return None;
        }
        let i = T::value_of_key(key) * self.scale;
        // SAFETY: the key is in [lo, hi), so `i` is finite and in [i0, i0 + the run's buckets):
        // an exact integer that fits. (A checked `as` costs a tenth of the pass.)
        Some(self.first + unsafe { i.to_int_unchecked::<i64>() } as usize - self.i0)
    }

    /// The longest run of at least [`UNIFORM_MIN`] buckets in `bounds` (keys of `T`), if any.
    fn find<T: Keyed>(bounds: &[i64]) -> Option<Self> {
        // the step of bounds j, j + 1 (if a power of two they are consecutive multiples of)
        let step = |j: usize| -> Option<f64> {
            let (a, b) = (T::value_of_key(bounds[j]), T::value_of_key(bounds[j + 1]));
            let d = b - a;
            let pow2 = d > 0.0 && d.is_normal() && d.to_bits() & ((1u64 << 52) - 1) == 0;
            let i = a / d;
            (pow2 && a >= 0.0 && i.fract() == 0.0 && i + 1.0 == b / d && i < (1u64 << 52) as f64).then_some(d)
        };
        let mut best: Option<(usize, usize, f64)> = None; // (first, last bound, step)
        let mut j = 0;
        while j + 1 < bounds.len() {
            let Some(d) = step(j) else {
                j += 1;
                continue;
            };
            let mut k = j + 1;
            while k + 1 < bounds.len() && step(k) == Some(d) {
                k += 1;
            }
            if k - j >= UNIFORM_MIN && best.is_none_or(|(a, b, _)| k - j > b - a) {
                best = Some((j, k, d));
            }
            j = k;
        }
        best.map(|(first, last, d)| Uniform {
            lo: bounds[first],
            hi: bounds[last],
            scale: 1.0 / d,
            first,
            i0: (T::value_of_key(bounds[first]) / d) as usize,
        })
    }
}

impl<'a, T: Keyed> GridLocator<'a, T> {
    /// The locator of `bounds` (sorted, unique) for keys of `T`.
    pub fn new(bounds: &'a [i64]) -> Self {
        let mant = T::MANT;
        let top = bounds.last().map_or(0, |&b| b.max(0)) >> mant;
        let binades = top as usize + 1;
        let mut inside: Vec<Vec<i64>> = vec![Vec::new(); binades];
        for &b in bounds.iter().filter(|&&b| b >= 0) {
            inside[(b >> mant) as usize].push(b);
        }
        let mut base = Vec::with_capacity(binades);
        let mut cells = 0u32;
        for bs in &inside {
            // as many cells as bounds when each bound falls in a cell of its own (a uniform
            // grid aligned with the cells: half the table, and most cells answer at once),
            // else twice as many
            let fewest = bs.len().next_power_of_two().trailing_zeros().min(16).min(mant);
            let own = |bits: u32| bs.windows(2).all(|w| w[0] >> (mant - bits) != w[1] >> (mant - bits));
            let bits = if own(fewest) { fewest } else { (fewest + 1).min(16).min(mant) };
            base.push((cells, mant - bits));
            cells += 1 << bits;
        }
        let mut table = Vec::with_capacity(cells as usize);
        let bucket_bits = bounds.len().next_power_of_two().trailing_zeros().min(29);
        let offset_max = (1i64 << (29 - bucket_bits)) - 1;
        // Cells in key order: one merge with the bounds. `first` counts the bounds <= the
        // cell's start, `below_stop` those < its stop.
        let (mut first, mut below_stop) = (0usize, 0usize);
        for (e, &(_, shift)) in base.iter().enumerate() {
            let start = (e as i64) << mant;
            for c in 0..1i64 << (mant - shift) {
                let (lo, stop) = (start + (c << shift), start + ((c + 1) << shift));
                while first < bounds.len() && bounds[first] <= lo {
                    first += 1;
                }
                below_stop = below_stop.max(first);
                while below_stop < bounds.len() && bounds[below_stop] < stop {
                    below_stop += 1;
                }
                let inside = below_stop - first;
                let ok = first > 0 && first < bounds.len() && inside <= 1 && first - 1 < PACKED as usize;
                let t = match inside {
                    _ if !ok => -2,
                    0 => (first - 1) as i32,
                    _ if bounds[first] - lo <= offset_max => ONE_INSIDE | PACKED | ((bounds[first] - lo) << bucket_bits) as i32 | (first - 1) as i32,
                    _ => ONE_INSIDE | (first - 1) as i32,
                };
                table.push(t);
            }
        }
        GridLocator { bounds, table, bucket_bits, base, mant, uniform: Uniform::find::<T>(bounds), _keys: PhantomData }
    }

    #[inline(always)]
    pub fn locate(&self, key: i64) -> Option<usize> {
        // most of a pass's scores: no table read (a table miss was a fifth of the pass)
        if let Some(b) = self.uniform.and_then(|u| u.bucket::<T>(key)) {
            return Some(b);
        }
        let bounds = self.bounds;
        if key >= 0 {
            if let Some(&(first, shift)) = self.base.get((key >> self.mant) as usize) {
                let cell = first as usize + ((key & ((1i64 << self.mant) - 1)) >> shift) as usize;
                let t = self.table[cell];
                if t >= 0 {
                    if t & ONE_INSIDE == 0 {
                        return Some(t as usize); // no bound inside the cell
                    }
                    // the one bound inside the cell (the last one ends the grid)
                    let b = if t & PACKED != 0 {
                        let b = (t & ((1 << self.bucket_bits) - 1)) as usize;
                        let offset = ((t & (PACKED - 1)) >> self.bucket_bits) as i64;
                        b + ((key & ((1i64 << shift) - 1)) >= offset) as usize
                    } else {
                        let b = (t & !ONE_INSIDE) as usize;
                        b + (bounds[b + 1] <= key) as usize
                    };
                    return (b + 1 < bounds.len()).then_some(b);
                }
            }
        }
        search(bounds, key)
    }
}
