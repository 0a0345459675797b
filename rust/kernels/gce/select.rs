//! One chunk's share of a pass of the exact distributed selection of adaptive edges
//! (`calibkit.dask`; the coordinator is `python/calibkit/scale/select.py`).
//!
//! A pass is planned per score grouping and threshold: every group owns a few disjoint
//! *regions* of the key line (a score's key is its bit pattern, see [`Keyed`]); a region is
//! either cut into buckets by given bounds, whose tables the pass fills, or a *fetch* region,
//! whose scores (with their outcomes) the pass returns. The first pass has one region per
//! group, the whole first-pass grid, whose buckets are found from the bit pattern by
//! [`GridLocator`] and counted, while the tables are kept per *super-bucket* of [`SUPER`]
//! consecutive grid buckets (so that a class's hot state, 4 bytes a bucket and 16 a
//! super-bucket, stays in cache; the coordinator tables the super-buckets that hold an edge
//! finely in the next pass); later passes cut the buckets holding wanted ranks into finer buckets (found
//! by a binary search of their bounds) or fetch them.
//!
//! A bucket's table is its count, its outcome count and the exact sum of its scores' grid units
//! ([`units`]): integers, so the coordinator adds the tables of the buckets that lie inside a
//! bin, plus the fetched scores binned at the exact edges, and has the bin's table bit for bit
//! as one in-memory call builds it, with no counting pass.
//!
//! One read of the chunk per grouping: all probabilities read the matrix row by row (column by
//! column in a class-conditional first pass, so that one group's tables at a time stay in
//! cache); top-label groupings take each row's prediction and confidence from
//! [`toplabel::summarise`] (the kernels' first-maximum rule); top-label pairs are read as
//! given. Groupings that differ only by their threshold share the read and, while their plans
//! agree, the bucket search and the tables of the buckets above the higher threshold. Later
//! passes drop most scores by one bit test per plan (a filter on the keys' top bits) before any
//! threshold test or region search. The grid's uniform steps on [0, 1] find their bucket by
//! arithmetic (a `Uniform` run), the rest of it by the locator's table.

use std::cmp::Ordering;

use crate::kernels::core::units;
use crate::kernels::core::validate::Checks;
use crate::kernels::gce::pairs::Pairs;
use crate::kernels::gce::toplabel;
use crate::kernels::{Inputs, KernelError, Score};

/// Element types with the selection's order-preserving keys.
pub trait Keyed: Score {
    /// Mantissa bits of the type (23 or 52).
    const MANT: u32;
    /// Bits of a non-negative key (31 or 63).
    const BITS: u32;
    /// The key of a value: its bit pattern as a signed integer, the magnitude bits of negative
    /// values flipped, and -0.0 taken as +0.0; keys sort exactly as the values do.
    fn key(self) -> i64;
    /// [`Keyed::key`] of a value of this type given widened to f64 (exact: it narrows back).
    fn key_of_wide(x: f64) -> i64;
    /// The value (widened to f64) of a key: the inverse of [`Keyed::key`] (key 0 is +0.0).
    fn value_of_key(k: i64) -> f64;
}

impl Keyed for f32 {
    const MANT: u32 = 23;
    const BITS: u32 = 31;
    #[inline(always)]
    fn key(self) -> i64 {
        let b = self.to_bits() as i32;
        let k = if b < 0 { b ^ 0x7FFF_FFFF } else { b };
        (if k == -1 { 0 } else { k }) as i64
    }
    #[inline(always)]
    fn key_of_wide(x: f64) -> i64 {
        (x as f32).key()
    }
    #[inline(always)]
    fn value_of_key(k: i64) -> f64 {
        let k = k as i32;
        f32::from_bits((if k < 0 { k ^ 0x7FFF_FFFF } else { k }) as u32) as f64
    }
}

impl Keyed for f64 {
    const MANT: u32 = 52;
    const BITS: u32 = 63;
    #[inline(always)]
    fn key(self) -> i64 {
        let b = self.to_bits() as i64;
        let k = if b < 0 { b ^ 0x7FFF_FFFF_FFFF_FFFF } else { b };
        if k == -1 {
            0
        } else {
            k
        }
    }
    #[inline(always)]
    fn key_of_wide(x: f64) -> i64 {
        x.key()
    }
    #[inline(always)]
    fn value_of_key(k: i64) -> f64 {
        f64::from_bits((if k < 0 { k ^ 0x7FFF_FFFF_FFFF_FFFF } else { k }) as u64)
    }
}

/// The bucket of a key among sorted bounds (`bounds[i] <= key < bounds[i + 1]`), if any.
#[inline]
fn search(bounds: &[i64], key: i64) -> Option<usize> {
    let i = bounds.partition_point(|&b| b <= key);
    (i > 0 && i < bounds.len()).then(|| i - 1)
}

/// Grid buckets per super-bucket (the tables of a [`Kind::GridSuper`] region).
pub const SUPER: usize = 16;

/// What a region does with the scores in it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// Buckets of the first pass's grid, found by [`GridLocator`].
    Grid,
    /// As [`Kind::Grid`], but only each bucket's count, and the tables of super-buckets of
    /// [`SUPER`] buckets (bucket `b` in super-bucket `b / SUPER`).
    GridSuper,
    /// Buckets found by a binary search of their bounds.
    Buckets,
    /// The scores are returned, with their outcomes, under the region's target id.
    Fetch,
}

/// One region of a group's plan: keys in `[lo, hi)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    pub lo: i64,
    pub hi: i64,
    pub kind: Kind,
    /// Buckets: the range of the plan's bounds that cut the region (`bounds[0] == lo`, last
    /// `== hi`), and the table slot of its first bucket. GridSuper: the bounds, and the table
    /// slot of its first super-bucket; bucket `b`'s count goes to `counts[SUPER * slot + b]`. Fetch:
    /// unused, and the target id.
    pub bounds: std::ops::Range<usize>,
    pub slot: usize,
}

/// One grouping's plan for a pass: the regions of each group and where their tables go.
pub struct Plan {
    /// Scores are kept when `score > threshold` (f64; -inf keeps every score).
    pub threshold: f64,
    /// Per group, its regions sorted by `lo`, disjoint.
    pub groups: Vec<Vec<Region>>,
    pub bounds: Vec<i64>,
    /// Table slots (buckets, super-buckets) of the pass.
    pub size: usize,
    /// Length of the grid buckets' counts (0 without a grid region).
    pub counts_size: usize,
}

impl Plan {
    /// The first pass's plan over one grid (`bounds`, keys) for `num_groups` groups, in the
    /// shape `calibkit.scale.select` sends and [`grid::GridPass`] takes: per group, the buckets
    /// below bucket `fine` tabled one by one (`Grid`, after the group's super-buckets) and those
    /// above by super-bucket of [`SUPER`] (`GridSuper`). For the tests and the fuzz target,
    /// which build the coordinator's plan in Rust.
    pub fn first_pass(threshold: f64, num_groups: usize, bounds: Vec<i64>, fine: usize) -> Result<Self, KernelError> {
        let supers = (bounds.len().saturating_sub(1 + fine)).div_ceil(SUPER);
        let rows: Vec<[i64; 5]> = (0..num_groups)
            .flat_map(|g| {
                let base = (g * (supers + fine)) as i64;
                [[g as i64, 3, fine as i64, bounds.len().saturating_sub(fine) as i64, base], [g as i64, 0, 0, fine as i64 + 1, base + supers as i64]]
            })
            .collect();
        Plan::from_rows(threshold, num_groups, &rows, bounds, num_groups * (supers + fine))
    }

    /// A plan from the coordinator's flat form: `regions` rows `[group, kind (0 grid, 1 buckets,
    /// 2 fetch, 3 grid tabled per super-bucket), bounds start, bounds length, slot or target
    /// id]`, checked.
    pub fn from_rows(threshold: f64, num_groups: usize, rows: &[[i64; 5]], bounds: Vec<i64>, size: usize) -> Result<Self, KernelError> {
        let bad = |why: &str| KernelError::Parameter(format!("selection plan: {why}"));
        if threshold.is_nan() {
            return Err(bad("the threshold is NaN"));
        }
        let mut groups: Vec<Vec<Region>> = vec![Vec::new(); num_groups];
        // The end of the slots the regions fill: `size` (allocated) may not ask for much more.
        let mut used = 0usize;
        for r in rows {
            let g = usize::try_from(r[0]).ok().filter(|&g| g < num_groups).ok_or_else(|| bad("group out of range"))?;
            let kind = match r[1] {
                0 => Kind::Grid,
                1 => Kind::Buckets,
                2 => Kind::Fetch,
                3 => Kind::GridSuper,
                _ => return Err(bad("unknown region kind")),
            };
            let (start, len) = (usize::try_from(r[2]).map_err(|_| bad("negative bounds start"))?, usize::try_from(r[3]).map_err(|_| bad("negative bounds length"))?);
            if len < 2 || start.checked_add(len).is_none_or(|e| e > bounds.len()) {
                return Err(bad("bounds out of range"));
            }
            let b = &bounds[start..start + len];
            if b.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad("bounds must increase"));
            }
            let slot = usize::try_from(r[4]).map_err(|_| bad("negative slot or id"))?;
            let slots = if kind == Kind::GridSuper { (len - 1).div_ceil(SUPER) } else { len - 1 };
            if kind != Kind::Fetch {
                match slot.checked_add(slots) {
                    Some(e) if e <= size => used = used.max(e),
                    _ => return Err(bad("slots out of range")),
                }
            }
            let (lo, hi) = (b[0], b[len - 1]);
            let bounds = if kind == Kind::Fetch { 0..0 } else { start..start + len };
            groups[g].push(Region { lo, hi, kind, bounds, slot });
        }
        // (a size as large as the bounds sent is allowed: it costs no more than they do)
        if size > used.max(bounds.len()) {
            return Err(bad(&format!("size {size} is more than the {used} slots its regions fill")));
        }
        let mut counts_size = 0;
        for regions in &mut groups {
            regions.sort_by_key(|r| r.lo);
            if regions.windows(2).any(|w| w[0].hi > w[1].lo) {
                return Err(bad("regions overlap"));
            }
            for r in regions.iter().filter(|r| r.kind == Kind::GridSuper) {
                counts_size = counts_size.max(SUPER * r.slot + r.bounds.len() - 1);
            }
        }
        let grids: Vec<&Region> = groups.iter().flatten().filter(|r| r.kind == Kind::GridSuper).collect();
        for (i, a) in grids.iter().enumerate() {
            let fine = |r: &Region| SUPER * r.slot..SUPER * r.slot + r.bounds.len() - 1;
            if grids[..i].iter().any(|b| fine(a).start < fine(b).end && fine(b).start < fine(a).end) {
                return Err(bad("grid counts overlap"));
            }
        }
        Ok(Plan { threshold, groups, bounds, size, counts_size })
    }

    fn same_regions(&self, other: &Plan) -> bool {
        self.groups == other.groups && self.bounds == other.bounds
    }
}

/// A bucket's exact table.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Cell {
    pub count: u64,
    pub outcome: u64,
    pub units: i128,
}

/// What one chunk gives back for one plan.
#[derive(Debug, Default, PartialEq)]
pub struct Scanned<T> {
    pub cells: Vec<Cell>,
    /// The grid buckets' counts ([`Plan::counts_size`]; `u32`, half the bytes a pass's
    /// tables ship and allocate, as most of them are these counts).
    pub counts: Vec<u32>,
    pub fetched_id: Vec<i64>,
    pub fetched_score: Vec<T>,
    pub fetched_outcome: Vec<bool>,
}

/// The later passes' filter: at most 2^20 cells (128 KB) per group, and at most 2^27 cells
/// (16 MB) in all.
fn filter_bits(groups: usize) -> u32 {
    (27 - groups.max(1).next_power_of_two().trailing_zeros()).clamp(10, 20)
}

/// The filter of one group's regions: the cells (the top `bits` bits of a non-negative key)
/// that hold a key of some region are set.
fn region_filter<T: Keyed>(regions: &[Region], bits: u32) -> Vec<u64> {
    let mut set = vec![0u64; ((1usize << bits) / 64).max(1)];
    let shift = T::BITS - bits;
    for r in regions.iter().filter(|r| r.hi > 0) {
        let (first, last) = ((r.lo.max(0) >> shift) as usize, ((r.hi - 1) >> shift) as usize);
        for c in first..=last.min((1 << bits) - 1) {
            set[c / 64] |= 1 << (c % 64);
        }
    }
    set
}

/// Where a key goes in one plan: a bucket's table slot, a fetch target, or nowhere.
#[derive(Clone, Copy)]
enum Hit {
    Miss,
    Slot(usize),
    /// A grid bucket: its table slot (its super-bucket's) and its count's index.
    Grid(usize, usize),
    Fetch(i64),
}

/// A bucket's running table during a scan: 16 bytes (half a [`Cell`], so that a chunk's hot
/// buckets stay in cache), folded into the bucket's [`Cell`] every [`units::RUN`] scores (the
/// `i64` unit sum of that many scores cannot overflow).
#[derive(Clone, Copy, Default)]
struct Run {
    units: i64,
    count: u32,
    outcome: u32,
}

impl Run {
    #[inline]
    fn fold_into(&mut self, c: &mut Cell) {
        c.count += self.count as u64;
        c.outcome += self.outcome as u64;
        c.units += self.units as i128;
        *self = Run::default();
    }
}

struct Scanner<'a, T: Keyed> {
    plan: &'a Plan,
    runs: Vec<Run>,
    /// The grid buckets' counts modulo 2^16 (2 bytes a bucket, to stay in cache) ...
    counts: Vec<u16>,
    /// ... and the times each wrapped (rare: a small map).
    wraps: std::collections::HashMap<usize, u64>,
    /// Runs already folded (a bucket reaches [`units::RUN`] scores rarely: a small map).
    folded: std::collections::HashMap<usize, Cell>,
    /// One locator per distinct grid bounds range of the plan, and per group and region, the
    /// region's locator (0 where none); empty when the first pass's fast path runs
    /// ([`Scanner::locate_grids`]).
    grids: Vec<(std::ops::Range<usize>, GridLocator<'a, T>)>,
    locs: Vec<Vec<usize>>,
    /// Per group, the lowest key of each region (for the search).
    los: Vec<Vec<i64>>,
    /// Plans without a grid (the later passes, whose regions are narrow): per group a bitmap
    /// of cells of the non-negative keys (their top `filter_bits` bits), set where a region
    /// may hold the key, so that most scores are dropped by one bit test, not a search.
    filter: Option<Vec<Vec<u64>>>,
    filter_bits: u32,
    /// Whether the previous plan has the same regions (its hit is this plan's). Such a plan
    /// (a higher threshold) fills only the buckets that straddle its threshold: a bucket whose
    /// lowest value is above it holds scores this plan and the previous one both keep, so its
    /// table is the previous plan's.
    shares: bool,
    /// For a plan that shares: a bit per slot, set where its bucket's lowest value is above
    /// the threshold (its table is the previous plan's); empty otherwise.
    whole: Vec<u64>,
    fetched: Scanned<T>,
}

impl<'a, T: Keyed> Scanner<'a, T> {
    /// The scanner of `plan`, without its grid locators ([`Scanner::locate_grids`]: only the
    /// general path searches, and building them is a fixed cost of every chunk's call).
    fn new(plan: &'a Plan, shares: bool) -> Self {
        let (grids, locs) = (Vec::new(), Vec::new());
        let runs = vec![Run::default(); plan.size];
        let los = plan.groups.iter().map(|rs| rs.iter().map(|r| r.lo).collect()).collect();
        let filter_bits = filter_bits(plan.groups.len());
        let no_grid = !plan.groups.iter().flatten().any(|r| matches!(r.kind, Kind::Grid | Kind::GridSuper));
        let filter = (no_grid && !shares).then(|| plan.groups.iter().map(|rs| region_filter::<T>(rs, filter_bits)).collect());
        let mut whole = Vec::new();
        if shares {
            whole = vec![0u64; plan.size.div_ceil(64)];
            for r in plan.groups.iter().flatten().filter(|r| r.kind != Kind::Fetch) {
                let step = if r.kind == Kind::GridSuper { SUPER } else { 1 };
                for (b, &lo) in plan.bounds[r.bounds.start..r.bounds.end - 1].iter().step_by(step).enumerate() {
                    let i = r.slot + b;
                    whole[i / 64] |= ((T::value_of_key(lo) > plan.threshold) as u64) << (i % 64);
                }
            }
        }
        // past the counts: scratch counts of the grids tabled per bucket (discarded; no branch,
        // and no chain of increments of one cell)
        let scratch = plan.groups.iter().flatten().filter(|r| r.kind == Kind::Grid).map(|r| r.bounds.len()).max().unwrap_or(0);
        let counts = vec![0u16; plan.counts_size + scratch];
        let fetched = Scanned::default();
        Scanner { plan, runs, counts, wraps: Default::default(), folded: Default::default(), grids, locs, los, filter, filter_bits, shares, whole, fetched }
    }

    /// Builds the locators of the plan's grid regions, one per distinct bounds range, for the
    /// general path's [`Scanner::find`].
    fn locate_grids(&mut self) {
        let plan = self.plan;
        // a plan that shares never searches: the previous plan's hits are its own
        for r in plan.groups.iter().flatten().filter(|r| matches!(r.kind, Kind::Grid | Kind::GridSuper) && !self.shares) {
            if !self.grids.iter().any(|(b, _)| *b == r.bounds) {
                self.grids.push((r.bounds.clone(), GridLocator::new(&plan.bounds[r.bounds.clone()])));
            }
        }
        let grids = &self.grids;
        self.locs = plan.groups.iter().map(|rs| rs.iter().map(|r| grids.iter().position(|(b, _)| *b == r.bounds).unwrap_or(0)).collect()).collect();
    }

    #[inline(always)]
    fn find(&self, g: usize, key: i64) -> Hit {
        if let Some(f) = &self.filter {
            if key >= 0 {
                let c = (key >> (T::BITS - self.filter_bits)) as usize;
                if f[g][c / 64] >> (c % 64) & 1 == 0 {
                    return Hit::Miss;
                }
            }
        }
        let regions = &self.plan.groups[g];
        let ri = match regions.len() {
            0 => return Hit::Miss,
            1 => 0,
            mut n => {
                // the last region starting at or below the key, by a search whose steps are
                // arithmetic, not branches (keys fall between the targets at random: branches
                // would mispredict about every other step)
                let los = &self.los[g];
                let mut base = 0usize;
                while n > 1 {
                    let half = n / 2;
                    base += half * (los[base + half] <= key) as usize;
                    n -= half;
                }
                base
            }
        };
        let r = &regions[ri];
        if key < r.lo || key >= r.hi {
            return Hit::Miss;
        }
        match r.kind {
            Kind::Fetch => Hit::Fetch(r.slot as i64),
            Kind::Grid | Kind::GridSuper => match self.grids[self.locs[g][ri]].1.locate(key) {
                // one path for both kinds (which one a score takes is not predictable)
                Some(b) => {
                    let sup = r.kind == Kind::GridSuper;
                    let shift = sup as u32 * SUPER.trailing_zeros();
                    Hit::Grid(r.slot + (b >> shift), if sup { SUPER * r.slot } else { self.plan.counts_size } + b)
                }
                None => Hit::Miss,
            },
            Kind::Buckets => search(&self.plan.bounds[r.bounds.clone()], key).map_or(Hit::Miss, |b| Hit::Slot(r.slot + b)),
        }
    }

    #[inline(always)]
    fn add_run(&mut self, i: usize, wide: f64, outcome: bool) {
        let r = &mut self.runs[i];
        r.count += 1;
        r.outcome += outcome as u32;
        r.units += units::units(wide);
        if r.count as usize == units::RUN {
            r.fold_into(self.folded.entry(i).or_default());
        }
    }

    /// A score in grid bucket `f` (its count) of table slot `i`.
    #[inline(always)]
    fn add_grid(&mut self, i: usize, f: usize, wide: f64, outcome: bool) {
        let c = &mut self.counts[f];
        *c = c.wrapping_add(1);
        if *c == 0 {
            *self.wraps.entry(f).or_default() += 1;
        }
        self.add_run(i, wide, outcome);
    }

    #[inline(always)]
    fn add(&mut self, hit: Hit, s: T, wide: f64, outcome: bool) {
        match hit {
            Hit::Miss => {}
            Hit::Slot(i) => {
                if self.whole.get(i / 64).is_some_and(|&w| w >> (i % 64) & 1 == 1) {
                    return; // a whole bucket: the previous plan's table
                }
                self.add_run(i, wide, outcome);
            }
            Hit::Grid(i, f) => {
                if self.whole.get(i / 64).is_some_and(|&w| w >> (i % 64) & 1 == 1) {
                    return; // a whole super-bucket: the previous plan's table and counts
                }
                self.add_grid(i, f, wide, outcome);
            }
            Hit::Fetch(id) => {
                self.fetched.fetched_id.push(id);
                self.fetched.fetched_score.push(s);
                self.fetched.fetched_outcome.push(outcome);
            }
        }
    }

    /// The plan's tables (`previous`: the previous plan's, when this one shares its regions).
    fn finish(mut self, previous: Option<&Scanned<T>>) -> Result<Scanned<T>, KernelError> {
        let mut cells: Vec<Cell> = self.runs.iter().map(|r| Cell { count: r.count as u64, outcome: r.outcome as u64, units: r.units as i128 }).collect();
        for (i, c) in self.folded {
            cells[i].count += c.count;
            cells[i].outcome += c.outcome;
            cells[i].units += c.units;
        }
        let n = self.plan.counts_size;
        let mut counts: Vec<u32> = self.counts[..n].iter().map(|&c| c as u32).collect();
        for (f, w) in self.wraps.into_iter().filter(|&(f, _)| f < n) {
            counts[f] = u32::try_from((w << 16) + counts[f] as u64).map_err(|_| {
                KernelError::Parameter("a chunk holds 2^32 scores or more in one bucket of the selection's grid: split the arrays into smaller chunks".into())
            })?;
        }
        if let Some(prev) = previous.filter(|_| self.shares) {
            let whole = |i: usize| self.whole[i / 64] >> (i % 64) & 1 == 1;
            for (i, (c, p)) in cells.iter_mut().zip(&prev.cells).enumerate() {
                if whole(i) {
                    *c = *p;
                }
            }
            for r in self.plan.groups.iter().flatten().filter(|r| r.kind == Kind::GridSuper) {
                let buckets = SUPER * r.slot..SUPER * r.slot + r.bounds.len() - 1;
                for (j, (c, p)) in counts[buckets.clone()].chunks_mut(SUPER).zip(prev.counts[buckets].chunks(SUPER)).enumerate() {
                    if whole(r.slot + j) {
                        c.copy_from_slice(p);
                    }
                }
            }
        }
        self.fetched.cells = cells;
        self.fetched.counts = counts;
        Ok(self.fetched)
    }
}

/// Every plan of one grouping (sorted by threshold, ascending) over a stream of
/// `(group, score, outcome)` entries: [`Scan::visit`] each, then [`Scan::finish`].
struct Scan<'a, T: Keyed> {
    scanners: Vec<Scanner<'a, T>>,
    num_groups: usize,
    /// When every plan has a filter (a later pass): their union per group, and its bits; a
    /// non-negative key outside it is dropped by one bit test, before the per-plan work.
    filter: Option<(Vec<Vec<u64>>, u32)>,
    /// The first pass's fast path, when the plans have its shape.
    grid: Option<grid::GridPass<'a, T>>,
}

impl<'a, T: Keyed> Scan<'a, T> {
    fn new(plans: &'a [Plan], num_groups: usize) -> Result<Self, KernelError> {
        if plans.windows(2).any(|w| !matches!(w[0].threshold.partial_cmp(&w[1].threshold), Some(Ordering::Less | Ordering::Equal))) {
            return Err(KernelError::Parameter("selection plans must be sorted by threshold".into()));
        }
        if plans.iter().any(|p| p.groups.len() != num_groups) {
            return Err(KernelError::Parameter(format!("selection plans must have {num_groups} groups")));
        }
        let scanners: Vec<Scanner<T>> = plans.iter().enumerate().map(|(i, p)| Scanner::new(p, i > 0 && p.same_regions(&plans[i - 1]))).collect();
        // every plan's filter has the same bits (they depend on the number of groups only)
        let filter = scanners.iter().map(|sc| sc.filter.as_ref()).collect::<Option<Vec<_>>>().and_then(|fs| {
            let mut union = fs.first()?.to_vec();
            for f in &fs[1..] {
                union.iter_mut().flatten().zip(f.iter().flatten()).for_each(|(a, b)| *a |= b);
            }
            Some((union, filter_bits(num_groups)))
        });
        let grid = if fast_grid() { grid::GridPass::of(&scanners) } else { None };
        let mut scanners = scanners;
        if grid.is_none() {
            scanners.iter_mut().for_each(Scanner::locate_grids);
        }
        Ok(Scan { scanners, num_groups, filter, grid })
    }

    #[inline(always)]
    fn visit(&mut self, g: usize, s: T, outcome: bool) {
        if g >= self.num_groups {
            return; // a changed input (validated before the first pass); the counts will say so
        }
        let key = s.key();
        if let Some(gp) = &self.grid {
            gp.visit_group(&mut self.scanners, g, std::iter::once((s, outcome)));
            return;
        }
        if let Some((f, bits)) = &self.filter {
            // Most scores of a later pass lie in no plan's regions: one bit test of the
            // filters' union and one well-predicted branch drop the score (the threshold tests
            // and region searches below mispredict; halves the pass).
            let c = (key >> (T::BITS - bits)) as usize;
            if key >= 0 && f[g].get(c / 64).is_none_or(|w| w >> (c % 64) & 1 == 0) {
                return;
            }
        }
        let wide = s.to_f64();
        let mut hit = Hit::Miss;
        for sc in self.scanners.iter_mut() {
            // plans are sorted by threshold: once one drops the score, the later ones do too
            if wide.partial_cmp(&sc.plan.threshold) != Some(Ordering::Greater) {
                break;
            }
            if !sc.shares {
                hit = sc.find(g, key);
            }
            sc.add(hit, s, wide, outcome);
        }
    }

    fn finish(self) -> Result<Vec<Scanned<T>>, KernelError> {
        let mut out: Vec<Scanned<T>> = Vec::with_capacity(self.scanners.len());
        for sc in self.scanners {
            let done = sc.finish(out.last())?;
            out.push(done);
        }
        Ok(out)
    }
}

/// The most bytes of filters (all groups') a class-conditional later pass reads row by row.
const ROW_ORDER_FILTERS: usize = 2 << 20;

/// One chunk of a probability matrix (validated by the first pass), every plan of one
/// grouping (`max_prob`, `class_conditional`) at once.
pub fn scan_matrix<T: Keyed>(x: &Inputs<T>, max_prob: bool, class_conditional: bool, plans: &[Plan]) -> Result<Vec<Scanned<T>>, KernelError> {
    let mut scan = Scan::new(plans, if class_conditional { x.k } else { 1 })?;
    if max_prob {
        let none = Checks { values: false, row_sums: false, labels: false };
        let top = toplabel::summarise(x, &none)?;
        for i in 0..x.n {
            scan.visit(top.group(class_conditional, i), x.row(i)[(top.pred[i] as usize).min(x.k - 1)], top.correct[i]);
        }
    } else if class_conditional && scan.filter.as_ref().is_some_and(|(f, _)| f.iter().map(Vec::len).sum::<usize>() * 8 <= ROW_ORDER_FILTERS) {
        // a later pass whose filters, every group's, stay in cache: row by row, one read of
        // the chunk (the column order's strided reads cost a quarter of the pass at K = 10;
        // at K = 100 the groups' filters would miss and the pass take 5x as long)
        for (i, &label) in x.labels.iter().enumerate() {
            for (c, &s) in x.row(i).iter().enumerate() {
                scan.visit(c, s, label == c as i64);
            }
        }
    } else if let (true, Some(gp)) = (class_conditional, &scan.grid) {
        // the first pass's fast path, column by column as below
        for c in 0..x.k {
            gp.visit_group(&mut scan.scanners, c, x.labels.iter().enumerate().map(|(i, &label)| (x.probs[i * x.k + c], label == c as i64)));
        }
    } else if class_conditional {
        // column by column: one group's buckets (or filter) at a time stay in cache (the
        // strided reads of the chunk cost far less than misses on every group's table)
        for c in 0..x.k {
            for (i, &label) in x.labels.iter().enumerate() {
                scan.visit(c, x.probs[i * x.k + c], label == c as i64);
            }
        }
    } else {
        for (i, &label) in x.labels.iter().enumerate() {
            for (c, &s) in x.row(i).iter().enumerate() {
                scan.visit(0, s, label == c as i64);
            }
        }
    }
    scan.finish()
}

/// One chunk of top-label pairs (validated by the first pass); groups are the predicted classes
/// when `class_conditional` (then `pairs.pred` is given).
pub fn scan_pairs<T: Keyed>(pairs: &Pairs<T>, class_conditional: bool, plans: &[Plan]) -> Result<Vec<Scanned<T>>, KernelError> {
    let mut scan = Scan::new(plans, if class_conditional { pairs.k } else { 1 })?;
    match (class_conditional, pairs.pred) {
        (false, _) => {
            for (&s, &o) in pairs.conf.iter().zip(pairs.correct) {
                scan.visit(0, s, o != 0);
            }
        }
        (true, Some(pred)) => {
            for ((&s, &o), &p) in pairs.conf.iter().zip(pairs.correct).zip(pred) {
                scan.visit(usize::try_from(p).unwrap_or(usize::MAX), s, o != 0);
            }
        }
        (true, None) => return Err(KernelError::Parameter("class-conditional pairs need predicted".into())),
    }
    scan.finish()
}

#[path = "select_grid.rs"]
mod grid;
pub use grid::GridLocator;

/// Whether scans take [`grid::GridPass`] where they can (tests compare both paths).
#[cfg(not(test))]
fn fast_grid() -> bool {
    true
}
#[cfg(test)]
thread_local!(static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
#[cfg(test)]
fn fast_grid() -> bool {
    !GENERAL_ONLY.with(|g| g.get())
}

#[cfg(test)]
#[path = "tests_select.rs"]
mod tests;
