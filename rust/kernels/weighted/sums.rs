//! Exact weighted cell sums in grid units ([`units`]): the arithmetic the weighted primitive
//! ([`crate::kernels::weighted::grouped`]) and the resamplers
//! ([`crate::kernels::weighted::resample`], [`crate::kernels::weighted::adaptive`]) share.
//!
//! A row of weight `w`, score `x` and outcome `y` adds three whole numbers to its cell, each
//! computed from the row alone:
//! - count units `round(w * s * 2^50)` ([`count_units`]),
//! - score units `w * s * units(x * t)` ([`weighted_units`]: exact for a whole `w * s`, else
//!   the float product rounded to a whole number),
//! - outcome units `w * s * units(y * t_y)` (the same),
//!
//! rounded to nearest, ties to even. `s`, `t` and `t_y` are powers of two chosen once per call
//! ([`Scales`]): `s` lifts small weights to the resolution of unit weights and keeps every
//! sum within `i128`; `t` and `t_y` are 1 for values in (-2, 2) (every score and 0/1 outcome:
//! then the units are those of the unweighted kernels) and bring larger values into that
//! range. The cells hold `i128` sums, so a table does not depend on the order of its rows, on
//! chunking or on threads; its float sums are the unit sums rounded once and divided by the
//! scales again (exact: powers of two).
//!
//! Weight 1 gives `units(x)` and `2^50`, so a table with unit weights is the unweighted table
//! bit for bit; a whole weight `m` gives exactly `m` times a row's units (the row repeated `m`
//! times).

use crate::kernels::core::units;
use crate::kernels::BinStats;

/// 2^51: below it, adding [`units::MAGIC`] rounds a float to a whole number exactly.
const TWO51: f64 = 2_251_799_813_685_248.0;
/// 2^52: from it on, every float is a whole number.
const TWO52: f64 = 4_503_599_627_370_496.0;
/// 2^63.
const TWO63: f64 = 9_223_372_036_854_775_808.0;
/// Largest `s * rows * (largest weight)` of a call (a bound on its scaled total weight): every
/// sum of its terms, each below `w * s * 2^51` in magnitude, then stays below 2^126 (`i128`
/// cannot overflow).
const WEIGHT_LIMIT: f64 = 18_889_465_931_478_580_854_784.0; // 2^74
/// Largest `s * (largest weight)` of the resamplers' per-row terms: they then fit in `i64`
/// (a term is below 2^11 * 2^51 = 2^62 in magnitude).
const TERM_LIMIT: f64 = 2048.0;

/// The whole number nearest to `v` (ties to even), exactly, for any float; saturating beyond
/// `i128` (NaN gives 0).
#[inline(always)]
pub fn round_units(v: f64) -> i128 {
    let a = v.abs();
    if a < TWO51 {
        // `v + MAGIC` is rounded to a whole number held in the low bits (ties to even).
        ((v + units::MAGIC).to_bits() as i64).wrapping_sub(units::MAGIC_BITS) as i128
    } else if a >= TWO52 || a.is_nan() {
        v as i128
    } else {
        // A multiple of 1/2 (the spacing of floats in [2^51, 2^52)): h = 2v is exact.
        let h = (v * 2.0) as i128;
        let q = h >> 1;
        q + (h & q & 1)
    }
}

/// Count units of a scaled weight `w` (the weight times the call's [`Scales::weight`]):
/// `round(w * 2^50)`, exactly (`w * 2^50` is exact: a power of two).
#[inline(always)]
pub fn count_units(w: f64) -> i128 {
    round_units(w * units::SCALE)
}

/// The units of a weighted value: a scaled weight `w` (the weight times the call's
/// [`Scales::weight`]) times the value's units `u`, as a whole number. A whole `w` gives
/// exactly `w * u` (a row of whole weight `m` is `m` rows; weight 1 is the unweighted row);
/// otherwise the float product `w * u` (one rounding, a relative error of at most 2^-53) is
/// rounded to the nearest whole number, ties to even. Either way the result depends on the
/// row alone. A weight that is negative or not finite (possible only for an input written by
/// another thread during a call) gives some number, never a panic.
#[inline(always)]
pub fn weighted_units(w: f64, u: i64) -> i128 {
    let (r, small) = weighted_units_small(w, u as f64);
    if small {
        return r as i128;
    }
    large_weighted_units(w, u, w * u as f64)
}

/// [`weighted_units`] of a scaled weight `w` and a value's units `u` (given as a float,
/// exactly: [`units::units_f64`]) when their product is below 2^51 in magnitude: the whole
/// number, and whether that case holds (if not, or for a NaN product, the number is
/// meaningless and the caller takes [`weighted_units`]). Register operations only, so a loop
/// of them vectorises.
#[inline(always)]
pub fn weighted_units_small(w: f64, u: f64) -> (i64, bool) {
    let v = w * u;
    // For a whole `w` the product is a whole number below 2^51, so the float product is
    // exact; either way `v + MAGIC` rounds it to a whole number (ties to even).
    (((v + units::MAGIC).to_bits() as i64).wrapping_sub(units::MAGIC_BITS), v.abs() < TWO51)
}

/// [`weighted_units`] for products of 2^51 or more (or NaN), `v` the float product.
#[inline(never)]
fn large_weighted_units(w: f64, u: i64, v: f64) -> i128 {
    // below 2^52, adding 2^52 rounds to a whole number: exact only for a whole `w`
    let whole = w >= TWO52 || (w + TWO52) - TWO52 == w;
    if whole && w < TWO63 {
        (w as i64 as i128) * u as i128
    } else if whole {
        // 2^63 or more: only for a single weight near the 2^74 total the scales allow
        (w as i128).wrapping_mul(u as i128)
    } else {
        round_units(v)
    }
}

/// Halves `s` while `x * s > limit` (at most 2100 times: a NaN or infinite `x`, possible only
/// for an input written during a call, stops there).
fn lower(mut s: f64, x: f64, limit: f64) -> f64 {
    for _ in 0..2100 {
        // (a NaN product ends the loop too)
        if x * s > limit {
            s *= 0.5;
        } else {
            break;
        }
    }
    s
}

/// [`units::weight_scale`], kept finite for the smallest subnormal weights (2^1000 then).
fn lift(max_weight: f64) -> f64 {
    let s = units::weight_scale(max_weight);
    if s.is_finite() {
        s
    } else {
        2f64.powi(1000)
    }
}

/// The power-of-two scales of one call (module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scales {
    /// Multiplies every weight.
    pub weight: f64,
    /// Multiplies every score before [`units::units`].
    pub score: f64,
    /// Multiplies every outcome before [`units::units`].
    pub outcome: f64,
}

impl Scales {
    /// Unit weights, scores and outcomes in (-2, 2): every scale 1.
    pub const ONE: Scales = Scales { weight: 1.0, score: 1.0, outcome: 1.0 };

    /// The scale of values whose largest magnitude is `max_abs`: 1 within (-2, 2) (the range
    /// of [`units::units`]), else the power of two that brings them into it.
    pub fn of_values(max_abs: f64) -> f64 {
        // halved while `max_abs * s >= 2`
        lower(1.0, max_abs, 2.0f64.next_down())
    }

    /// The weight scale of the primitive for `rows` weights of which the largest is
    /// `max_weight`: [`units::weight_scale`] of it (1 when it is at least 1/2), lowered while
    /// the scaled bound `rows * max_weight` on the total weight passes 2^74.
    pub fn of_weights(max_weight: f64, rows: usize) -> f64 {
        lower(lift(max_weight), max_weight, WEIGHT_LIMIT / (rows.max(1) as f64))
    }

    /// The weight scale of the resamplers' per-row terms: as [`Scales::of_weights`], but
    /// lowered while the largest scaled weight is 2^11 or more, so that each term fits in an
    /// `i64` (a resample multiplies it by a whole multiplicity into an `i128` sum).
    pub fn of_terms(max_weight: f64) -> f64 {
        let s = lower(lift(max_weight), max_weight, TERM_LIMIT);
        if max_weight * s >= TERM_LIMIT {
            s * 0.5
        } else {
            s
        }
    }

    /// Whether tables of this call may be added as units to unscaled tables of other calls.
    pub fn is_one(&self) -> bool {
        *self == Scales::ONE
    }

    /// The units of a score.
    #[inline(always)]
    pub fn score_units(&self, x: f64) -> i64 {
        units::units(x * self.score)
    }

    /// The units of an outcome.
    #[inline(always)]
    pub fn outcome_units(&self, y: f64) -> i64 {
        units::units(y * self.outcome)
    }

    /// Writes cell `i` of `st` from its unit sums: counts, score and outcome sums, each rounded
    /// once and divided by the scales; the score units too when every scale is 1.
    #[inline]
    pub fn write(&self, st: &mut BinStats, i: usize, count: i128, score: i128, outcome: i128) {
        st.count[i] = units::value(count) / self.weight;
        st.sum_score[i] = units::value(score) / self.weight / self.score;
        st.sum_outcome[i] = units::value(outcome) / self.weight / self.outcome;
        if let Some(u) = st.units.get_mut(i) {
            *u = score;
        }
    }

    /// A zero table of `groups x nb` cells for this call: with units when every scale is 1,
    /// else without (a scaled table must not be added as units to another).
    pub fn table(&self, groups: usize, nb: usize) -> BinStats {
        let mut st = BinStats::zeros(groups, nb);
        if !self.is_one() {
            st.units = Vec::new();
        }
        st
    }
}

/// Per-cell unit sums (count, score, outcome), added with wrapping `i128` arithmetic (the
/// scales keep true sums far from overflow; wrapping keeps an input written during a call from
/// panicking).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnitSums {
    pub count: Vec<i128>,
    pub score: Vec<i128>,
    pub outcome: Vec<i128>,
}

impl UnitSums {
    pub fn zeros(cells: usize) -> Self {
        UnitSums { count: vec![0; cells], score: vec![0; cells], outcome: vec![0; cells] }
    }

    /// Adds `(count, score, outcome)` units to cell `c` (ignored beyond the table).
    #[inline(always)]
    pub fn add(&mut self, c: usize, count: i128, score: i128, outcome: i128) {
        if c < self.count.len() {
            self.count[c] = self.count[c].wrapping_add(count);
            self.score[c] = self.score[c].wrapping_add(score);
            self.outcome[c] = self.outcome[c].wrapping_add(outcome);
        }
    }

    /// Adds count and score units to cell `c` (ignored beyond the table).
    #[inline(always)]
    pub fn add_count_score(&mut self, c: usize, count: i128, score: i128) {
        if c < self.count.len() && c < self.score.len() {
            self.count[c] = self.count[c].wrapping_add(count);
            self.score[c] = self.score[c].wrapping_add(score);
        }
    }

    /// Adds outcome units to cell `c` (ignored beyond the table).
    #[inline(always)]
    pub fn add_outcome(&mut self, c: usize, outcome: i128) {
        if let Some(x) = self.outcome.get_mut(c) {
            *x = x.wrapping_add(outcome);
        }
    }

    /// Adds another table's sums, cell by cell.
    pub fn add_all(&mut self, other: &UnitSums) {
        for (a, b) in [(&mut self.count, &other.count), (&mut self.score, &other.score), (&mut self.outcome, &other.outcome)] {
            for (x, y) in a.iter_mut().zip(b) {
                *x = x.wrapping_add(*y);
            }
        }
    }

    /// Writes every cell into `st` ([`Scales::write`]).
    pub fn write(&self, sc: &Scales, st: &mut BinStats) {
        for i in 0..self.count.len().min(st.count.len()) {
            sc.write(st, i, self.count[i], self.score[i], self.outcome[i]);
        }
    }
}

/// Added to score units before they are split into two halves ([`split`]), so that both are
/// non-negative: units are within (-2^51, 2^51).
pub const BIAS: i64 = 1 << 51;

/// A sum kept as its low 32-bit halves' sum `lo` and the rest's `hi`, put together.
#[inline(always)]
pub fn join(lo: u64, hi: u64) -> i128 {
    ((hi as i128) << 32) + lo as i128
}

/// A sum of `count` values each biased by `bias` ([`BIAS`], [`TERM_BIAS`]), the bias taken off.
#[inline(always)]
pub fn less_bias(sum: i128, count: i128, bias: i64) -> i128 {
    sum.wrapping_sub(count.wrapping_mul(bias as i128))
}

/// The biased units `u + BIAS` as (low 32 bits, the rest): a multiplicity times each half is a
/// 32 x 32-bit product ([`plain_sums`]).
#[inline(always)]
pub fn split(u: i64) -> (u32, u32) {
    let b = u.wrapping_add(BIAS) as u64;
    (b as u32, (b >> 32) as u32)
}

/// Whole weights as the adaptive resampler's edge walk reads them: each as an integer, and a
/// block's sum, exact (integers below 2^53 in any grouping), so it may be taken in whatever
/// order is fastest.
pub trait BlockSum: Copy {
    /// The weight as an integer (a whole weight below 2^53, so exact).
    fn whole(self) -> u64;
    fn block_sum(c: &[Self]) -> u64;
}

impl BlockSum for f64 {
    fn whole(self) -> u64 {
        self as u64
    }
    fn block_sum(c: &[f64]) -> u64 {
        c.iter().sum::<f64>() as u64
    }
}

impl BlockSum for u8 {
    fn whole(self) -> u64 {
        self as u64
    }
    /// Integer adds (a vector loop, where float adds form one serial chain).
    fn block_sum(c: &[u8]) -> u64 {
        c.iter().map(|&x| x as u32).sum::<u32>() as u64
    }
}

impl BlockSum for u32 {
    fn whole(self) -> u64 {
        self as u64
    }
    fn block_sum(c: &[u32]) -> u64 {
        c.iter().map(|&x| x as u64).sum::<u64>()
    }
}

/// A resample's multiplicities, as bytes when they fit (the gathers stay in cache) or as
/// `u32`.
pub trait Multiplicity: BlockSum + Default + Into<u64> + Send + Sync {}
impl Multiplicity for u8 {}
impl Multiplicity for u32 {}

/// The longest run [`plain_sums`] may take when no multiplicity passes `max_m`: its sums of
/// `m * low` then stay below 2^64.
pub fn plain_chunk(max_m: u64) -> usize {
    (u32::MAX as u64 / max_m.max(1)).clamp(1, 1 << 30) as usize
}

crate::kernels::core::simd::multiversion! {
    /// (count, score, outcome) units of a run of entries with no base weights, given each entry's
    /// multiplicity `m`, its biased score units in halves ([`split`]) and a `hit` mask (all ones
    /// where its outcome is 1, else 0): the sums `sum m`, `sum m * low`, `sum m * high` and
    /// `sum m` over the hits, in `u64`, for at most `chunk` entries at a time ([`plain_chunk`]);
    /// the score units are `(high << 32) + low - count * BIAS`. Integer sums in independent
    /// lanes: the compiler vectorises the loop (32 x 32-bit products).
    pub fn plain_sums<M: Multiplicity>(m: &[M], lo: &[u32], hi: &[u32], hit: &[u32], chunk: usize) -> (i128, i128, i128) {
        let (mut count, mut score, mut outcome) = (0i128, 0i128, 0i128);
        let n = m.len().min(lo.len()).min(hi.len()).min(hit.len());
        for q in (0..n).step_by(chunk.max(1)) {
            let e = (q + chunk.max(1)).min(n);
            let (mut c, mut sl, mut sh, mut o) = (0u64, 0u64, 0u64, 0u64);
            for (((&k, &l), &h), &y) in m[q..e].iter().zip(&lo[q..e]).zip(&hi[q..e]).zip(&hit[q..e]) {
                let k: u64 = k.into();
                c = c.wrapping_add(k);
                sl = sl.wrapping_add(k * l as u64);
                sh = sh.wrapping_add(k * h as u64);
                o = o.wrapping_add(k & y as u64);
            }
            count += c as i128;
            score += less_bias(join(sl, sh), c as i128, BIAS);
            outcome += o as i128;
        }
        let one = units::SCALE as i128;
        (count * one, score, outcome * one)
    }
}

/// Added to a resampler's per-entry score units (below 2^62 in magnitude with the weight scale
/// of [`Scales::of_terms`]) so that they are non-negative, below 2^63 ([`term_sums`]).
pub const TERM_BIAS: i64 = 1 << 62;

/// Entries per call of [`term_sums`] at most: products of a multiplicity below 2^11 and a
/// 32-bit half are below 2^43, so the sums of 2^20 of them stay below 2^63.
pub const TERM_CHUNK: usize = 1 << 20;

crate::kernels::core::simd::multiversion! {
    /// (count, score) units of a run of entries with base weights: `m` their multiplicities
    /// (each below 2^11; at most [`TERM_CHUNK`] entries), `count` their count units and
    /// `score` their score units plus [`TERM_BIAS`] (each below 2^63). Each term is split into
    /// its low 32 bits and the rest, and `m` times each half summed in `u64` lanes (32 x 32-bit
    /// products and independent adds the compiler vectorises, where whole `i128` products would
    /// be one serial add-with-carry chain); the halves are put together once.
    pub fn term_sums(m: &[u32], count: &[u64], score: &[u64]) -> (i128, i128) {
        debug_assert!(m.len() <= TERM_CHUNK);
        let (mut ms, mut cl, mut ch, mut sl, mut sh) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let n = m.len().min(count.len()).min(score.len());
        let (m, count, score) = (&m[..n], &count[..n], &score[..n]);
        for i in 0..n {
            let k = m[i] as u64;
            ms = ms.wrapping_add(k);
            cl = cl.wrapping_add(k * (count[i] as u32 as u64));
            ch = ch.wrapping_add(k * (count[i] >> 32));
            sl = sl.wrapping_add(k * (score[i] as u32 as u64));
            sh = sh.wrapping_add(k * (score[i] >> 32));
        }
        (join(cl, ch), less_bias(join(sl, sh), ms as i128, TERM_BIAS))
    }
}

/// Resamples [`term_sums_lanes`] sums at once: one pass over a cell's entries serves them all.
pub const LANES: usize = 4;

/// [`term_sums`] of [`LANES`] resamples at once: `rows` the entries' rows, `m` each row's
/// multiplicities in the resamples (each below 2^11), `count` and `score` as for
/// [`term_sums`]. Each entry is read once for every resample (a cell's run is streamed once
/// per [`LANES`] resamples), its row's multiplicities loaded as one 16-byte word. With AVX2
/// the lanes are one vector ([`x86::term_sums_lanes`]: four 32 x 32-bit products an
/// instruction, where the compiler made the portable loop sixteen scalar multiplies); sums are
/// exact, so every path gives each lane [`term_sums`] of its resample, bit for bit.
pub fn term_sums_lanes(rows: &[u32], m: &[[u32; LANES]], count: Counts<'_>, score: &[u64]) -> ([i128; LANES], [i128; LANES]) {
    use crate::kernels::core::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        record(Kernel::TermLanes, Level::Avx2);
        // SAFETY: AVX2 is present (the crate's one feature check); the twin indexes its
        // slices with bounds checks and reads `m` through `get`, like the portable loop.
        return unsafe { x86::term_sums_lanes(rows, m, count, score) };
    }
    record(Kernel::TermLanes, Level::Portable);
    term_sums_lanes_portable(rows, m, count, score)
}

/// The count units of [`term_sums_lanes`]' entries: one per entry (base weights), or the same
/// for every entry (no base weights: 2^50, a row's unit weight), whose sums are then the
/// multiplicities' sums times it, with no product per entry.
#[derive(Clone, Copy)]
pub enum Counts<'a> {
    Each(&'a [u64]),
    All(u64),
}

impl Counts<'_> {
    /// The entries a run holds: as many as every one of its arrays has.
    #[inline(always)]
    fn entries(&self, rows: &[u32], score: &[u64]) -> usize {
        let n = rows.len().min(score.len());
        match self {
            Counts::Each(c) => n.min(c.len()),
            Counts::All(_) => n,
        }
    }
}

/// The portable [`term_sums_lanes`] (the path without AVX2, and what the twin is compared to).
pub fn term_sums_lanes_portable(rows: &[u32], m: &[[u32; LANES]], count: Counts<'_>, score: &[u64]) -> ([i128; LANES], [i128; LANES]) {
    let (mut cnt, mut sco) = ([0i128; LANES], [0i128; LANES]);
    let n = count.entries(rows, score);
    for q in (0..n).step_by(TERM_CHUNK) {
        let e = (q + TERM_CHUNK).min(n);
        let mut acc = [[0u64; LANES]; 5]; // sum m, m * count halves, m * score halves
        for (p, (&r, &u)) in rows[q..e].iter().zip(&score[q..e]).enumerate() {
            // rows were checked; `get` keeps a row changed during the call in bounds
            let k = m.get(r as usize).copied().unwrap_or([0; LANES]);
            let c = match count {
                Counts::Each(c) => c[q + p],
                Counts::All(_) => 0, // taken from the sum of m below
            };
            let halves = [c as u32 as u64, c >> 32, u as u32 as u64, u >> 32];
            for j in 0..LANES {
                let k = k[j] as u64;
                acc[0][j] = acc[0][j].wrapping_add(k);
                for (a, &h) in acc[1..].iter_mut().zip(&halves) {
                    a[j] = a[j].wrapping_add(k * h);
                }
            }
        }
        lanes_into(&acc, count, &mut cnt, &mut sco);
    }
    (cnt, sco)
}

/// Adds one chunk's lane sums (`sum m`, then `m` times the count's and the score's halves)
/// into the lanes' count and score units (the halves put together, or `sum m` times the one
/// count; the score's bias taken off).
#[inline(always)]
fn lanes_into(acc: &[[u64; LANES]; 5], count: Counts<'_>, cnt: &mut [i128; LANES], sco: &mut [i128; LANES]) {
    for j in 0..LANES {
        let c = match count {
            Counts::Each(_) => join(acc[1][j], acc[2][j]),
            Counts::All(each) => (acc[0][j] as i128).wrapping_mul(each as i128),
        };
        cnt[j] = cnt[j].wrapping_add(c);
        sco[j] = sco[j].wrapping_add(less_bias(join(acc[3][j], acc[4][j]), acc[0][j] as i128, TERM_BIAS));
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{lanes_into, Counts, LANES, TERM_CHUNK};
    use std::arch::x86_64::*;

    /// The AVX2 twin of [`super::term_sums_lanes_portable`]: the lanes' multiplicities
    /// widened to four `u64` lanes, each half of an entry's terms broadcast, and
    /// `_mm256_mul_epu32` taking the four 32 x 32-bit products at once.
    #[target_feature(enable = "avx2")]
    pub(super) fn term_sums_lanes(rows: &[u32], m: &[[u32; LANES]], count: Counts<'_>, score: &[u64]) -> ([i128; LANES], [i128; LANES]) {
        let (mut cnt, mut sco) = ([0i128; LANES], [0i128; LANES]);
        let n = count.entries(rows, score);
        for q in (0..n).step_by(TERM_CHUNK) {
            let e = (q + TERM_CHUNK).min(n);
            let z = _mm256_setzero_si256();
            let (mut ms, mut cl, mut ch, mut sl, mut sh) = (z, z, z, z, z);
            for (p, (&r, &u)) in rows[q..e].iter().zip(&score[q..e]).enumerate() {
                let k = m.get(r as usize).copied().unwrap_or([0; LANES]);
                // SAFETY: `k` is a local array of four u32, 16 bytes: an unaligned load reads
                // exactly it.
                let k = _mm256_cvtepu32_epi64(unsafe { _mm_loadu_si128(k.as_ptr().cast()) });
                // `_mm256_mul_epu32` reads the low 32 bits of each lane: the broadcast halves
                ms = _mm256_add_epi64(ms, k);
                if let Counts::Each(c) = count {
                    let c = c[q + p];
                    cl = _mm256_add_epi64(cl, _mm256_mul_epu32(k, _mm256_set1_epi64x(c as u32 as i64)));
                    ch = _mm256_add_epi64(ch, _mm256_mul_epu32(k, _mm256_set1_epi64x((c >> 32) as i64)));
                }
                sl = _mm256_add_epi64(sl, _mm256_mul_epu32(k, _mm256_set1_epi64x(u as u32 as i64)));
                sh = _mm256_add_epi64(sh, _mm256_mul_epu32(k, _mm256_set1_epi64x((u >> 32) as i64)));
            }
            let mut acc = [[0u64; LANES]; 5];
            for (a, v) in acc.iter_mut().zip([ms, cl, ch, sl, sh]) {
                // SAFETY: `a` is four u64, 32 bytes: an unaligned store writes exactly it.
                unsafe { _mm256_storeu_si256(a.as_mut_ptr().cast(), v) };
            }
            lanes_into(&acc, count, &mut cnt, &mut sco);
        }
        (cnt, sco)
    }
}

/// (count, score, outcome) units of a run of entries: `rows` their rows, `mult` the rows'
/// multiplicities, `count`, `score` and `outcome` the entries' units at their base weights
/// (`count` `None`: no base weights, each entry counts its multiplicity). Each term is a whole
/// multiplicity times an `i64`, summed exactly in `i128` registers.
#[inline]
pub fn run_sums(rows: &[u32], mult: &[u32], count: Option<&[i64]>, score: &[i64], outcome: &[i64]) -> (i128, i128, i128) {
    // rows were checked; `get` keeps a row array changed during the call in bounds
    let m_of = |r: u32| mult.get(r as usize).map_or(0, |&x| x as i64);
    let (mut s, mut o) = (0i128, 0i128);
    let c = match count {
        None => {
            let mut c = 0i64;
            for ((&r, &u), &y) in rows.iter().zip(score).zip(outcome) {
                let k = m_of(r);
                c = c.wrapping_add(k);
                s = s.wrapping_add(k as i128 * u as i128);
                o = o.wrapping_add(k as i128 * y as i128);
            }
            c as i128 * units::SCALE as i128
        }
        Some(count) => {
            let mut c = 0i128;
            for (((&r, &n), &u), &y) in rows.iter().zip(count).zip(score).zip(outcome) {
                let k = m_of(r);
                c = c.wrapping_add(k as i128 * n as i128);
                s = s.wrapping_add(k as i128 * u as i128);
                o = o.wrapping_add(k as i128 * y as i128);
            }
            c
        }
    };
    (c, s, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs longer than [`TERM_CHUNK`] entries, every term at its bound: the lanes' `u64` sums
    /// must be folded every chunk (else they wrap), on both paths, for both kinds of counts.
    #[test]
    fn lanes_fold_long_runs() {
        use crate::kernels::core::simd::{with_level, Level};
        let n = 2 * TERM_CHUNK + 37;
        let rows = vec![0u32; n];
        let m = [[2047u32, 1, 0, 1000]];
        let count = vec![(1u64 << 61) - 1; n];
        let score = vec![u64::MAX >> 1; n];
        for kind in [Counts::Each(&count), Counts::All(1 << 50)] {
            let each = match kind {
                Counts::Each(c) => c[0] as i128,
                Counts::All(c) => c as i128,
            };
            for level in [Level::Portable, Level::Avx2] {
                let (c, s) = with_level(level, || term_sums_lanes(&rows, &m, kind, &score));
                for j in 0..LANES {
                    let k = m[0][j] as i128 * n as i128;
                    assert_eq!(c[j], k * each, "lane {j} {level:?}");
                    assert_eq!(s[j], k * (score[0] as i128 - TERM_BIAS as i128), "lane {j} {level:?}");
                }
            }
        }
    }

    /// Every lane of [`term_sums_lanes`] is [`term_sums`] of its resample, bit for bit, on
    /// both paths, with terms at their bounds and runs longer than one chunk's worth of lanes.
    #[test]
    fn lanes_are_the_one_resample_sums() {
        use crate::kernels::core::simd::{with_level, Level};
        let mut next = crate::kernels::tests::xorshift_bits(0x9e37_79b9_7f4a_7c15u64);
        for (n, rows_n) in [(0usize, 1usize), (1, 3), (37, 5), (1000, 17)] {
            let rows: Vec<u32> = (0..n).map(|_| (next() % rows_n as u64) as u32).collect();
            let m: Vec<[u32; LANES]> = (0..rows_n).map(|_| std::array::from_fn(|_| (next() % (1 << 11)) as u32)).collect();
            let count: Vec<u64> = (0..n).map(|i| if i % 3 == 0 { (1 << 61) - 1 } else { next() >> 3 }).collect();
            let score: Vec<u64> = (0..n).map(|i| if i % 5 == 0 { (1 << 63) - 1 } else { next() >> 1 }).collect();
            let want: Vec<(i128, i128)> = (0..LANES)
                .map(|j| {
                    let mj: Vec<u32> = rows.iter().map(|&r| m[r as usize][j]).collect();
                    term_sums(&mj, &count, &score)
                })
                .collect();
            let one = vec![1u64 << 50; n];
            let want_one: Vec<(i128, i128)> = (0..LANES)
                .map(|j| {
                    let mj: Vec<u32> = rows.iter().map(|&r| m[r as usize][j]).collect();
                    term_sums(&mj, &one, &score)
                })
                .collect();
            for level in [Level::Portable, Level::Avx2] {
                let (c, s) = with_level(level, || term_sums_lanes(&rows, &m, Counts::Each(&count), &score));
                let (c1, s1) = with_level(level, || term_sums_lanes(&rows, &m, Counts::All(1 << 50), &score));
                for j in 0..LANES {
                    assert_eq!((c[j], s[j]), want[j], "n {n} lane {j} {level:?}");
                    assert_eq!((c1[j], s1[j]), want_one[j], "n {n} lane {j} {level:?}, one count");
                }
            }
        }
    }

    /// `round(w * u)` by exact rational arithmetic on the float's parts (the reference).
    fn exact(w: f64, u: i64) -> i128 {
        let (m, e) = {
            let b = w.to_bits();
            let be = ((b >> 52) & 0x7ff) as i32;
            let f = (b & ((1 << 52) - 1)) as i128;
            if be == 0 { (f, -1074) } else { (f | (1 << 52), be - 1075) }
        };
        let p = m * u as i128 * if w < 0.0 { -1 } else { 1 };
        if e >= 0 {
            return p << e;
        }
        let d = 1i128 << (-e).min(126);
        let q = p.div_euclid(d);
        let r = p.rem_euclid(d);
        q + ((2 * r > d) || (2 * r == d && q % 2 != 0)) as i128
    }

    #[test]
    fn whole_weights_repeat_and_fractional_ones_round_once() {
        let us = [0i64, 1, -1, 3, 1 << 50, -(1 << 50), (1 << 51) - 1, 337_769_972_052_787, 1_125_899_906_842_623];
        for &u in &us {
            // a whole weight is the row repeated, exactly (also where the float product is not)
            for m in [0i64, 1, 2, 3, 7, 16, 17, 1000, 123_457, 1 << 40, (1 << 53) + 2] {
                assert_eq!(weighted_units(m as f64, u), m as i128 * u as i128, "{m} * {u}");
            }
            assert_eq!(weighted_units(2f64.powi(70), u), (1i128 << 70) * u as i128);
            // fractional weights: the float product rounded once, within half a unit plus a
            // relative 2^-53 of the exact product
            for w in [0.5, 1.5, 0.1, 0.3, 1e-9, 2.5e-16, 0.75, 1.0 - f64::EPSILON, 3.3, 2047.9] {
                let got = weighted_units(w, u);
                assert_eq!(got, round_units(w * u as f64), "{w} * {u}");
                let e = exact(w, u);
                assert!((got - e).abs() as f64 <= 1.0 + e.abs() as f64 * 2f64.powi(-53), "{w} * {u}");
            }
        }
        // the same bound on spread-out units (not only next to powers of two)
        let mut bits = crate::kernels::tests::xorshift_bits(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let x = bits();
            let u = (x >> 13) as i64 - (1 << 50);
            let w = 1.0 + (x % 2_000_000) as f64 / 977.0;
            let (got, e) = (weighted_units(w, u), exact(w, u));
            assert!((got - e).abs() as f64 <= 1.0 + e.abs() as f64 * 2f64.powi(-53), "{w} * {u}");
        }
        // ties go to even
        assert_eq!(weighted_units(0.5, 1), 0);
        assert_eq!(weighted_units(0.5, 3), 2);
        assert_eq!(weighted_units(0.5, -3), -2);
        assert_eq!(weighted_units(0.25, 6), 2);
        // no panic on what validated weights never are
        for w in [f64::NAN, f64::INFINITY, -1.5, -3.0, f64::MAX, 1e300] {
            let _ = weighted_units(w, 1 << 50);
        }
    }

    #[test]
    fn plain_sums_agree_across_chunk_sizes() {
        let mut next = crate::kernels::tests::xorshift_bits(3);
        let n = 5000;
        let m: Vec<u8> = (0..n).map(|_| (next() % 18) as u8).collect();
        let (lo, hi): (Vec<u32>, Vec<u32>) = (0..n).map(|_| split((next() >> 13) as i64 - (1 << 50))).unzip();
        let hit: Vec<u32> = (0..n).map(|_| if next().is_multiple_of(3) { u32::MAX } else { 0 }).collect();
        let whole = plain_sums(&m, &lo, &hi, &hit, plain_chunk(17));
        for chunk in [1, 7, 256, 4999] {
            assert_eq!(plain_sums(&m, &lo, &hi, &hit, chunk), whole, "chunk {chunk}");
        }
        // and against the exact i128 sums
        let (mut c, mut s, mut o) = (0i128, 0i128, 0i128);
        for i in 0..n {
            let u = join(lo[i] as u64, hi[i] as u64) - BIAS as i128;
            c += m[i] as i128;
            s += m[i] as i128 * u;
            o += if hit[i] != 0 { m[i] as i128 } else { 0 };
        }
        let one = units::SCALE as i128;
        assert_eq!(whole, (c * one, s, o * one));
    }

    #[test]
    fn count_units_round_exactly() {
        for w in [0.0, 1.0, 2.0, 3.0, 0.1, 1.5, 1.0 + f64::EPSILON, 2.0 + 4.0 * f64::EPSILON, 3.0 - 2.0 * f64::EPSILON, 1e6 / 3.0, 1e10, 5e-324] {
            assert_eq!(count_units(w), exact(w, 1 << 50), "{w}");
        }
        // the values between 2^51 and 2^52 are multiples of 1/2: ties to even
        assert_eq!(round_units(TWO51 + 0.5), TWO51 as i128);
        assert_eq!(round_units(TWO51 + 1.5), TWO51 as i128 + 2);
        assert_eq!(round_units(-(TWO51 + 1.5)), -(TWO51 as i128) - 2);
        assert_eq!(round_units(f64::NAN), 0);
    }

    #[test]
    fn scales_are_one_for_plain_inputs() {
        assert_eq!(Scales::of_values(1.0 + 1e-4), 1.0);
        assert_eq!(Scales::of_values(2.0f64.next_down()), 1.0);
        assert_eq!(Scales::of_values(2.0), 0.5);
        assert_eq!(Scales::of_values(3.0), 0.5);
        assert!(Scales::of_values(1e300) * 1e300 < 2.0);
        assert_eq!(Scales::of_values(f64::NAN), 1.0);
        assert_eq!(Scales::of_weights(1.0, 1_000_000), 1.0);
        assert_eq!(Scales::of_weights(3.0, 1_000_000_000), 1.0);
        assert_eq!(Scales::of_weights(0.1, 100), 8.0);
        for (w, n) in [(1e300, 1usize), (1e308, 5), (f64::MAX, 1 << 40)] {
            let s = Scales::of_weights(w, n);
            assert!(s > 0.0 && w * s * n as f64 <= WEIGHT_LIMIT && w * s * n as f64 > WEIGHT_LIMIT / 2.0, "{w} {n}: {s}");
        }
        assert!(Scales::of_weights(f64::INFINITY, 3).is_finite());
        assert_eq!(Scales::of_terms(1.0), 1.0);
        assert_eq!(Scales::of_terms(2047.0), 1.0);
        assert_eq!(Scales::of_terms(2048.0), 0.5);
        assert_eq!(Scales::of_terms(0.2), 4.0);
        assert!(Scales::of_terms(1e300) * 1e300 < TERM_LIMIT);
        assert!(Scales::of_terms(f64::MAX).is_finite());
    }
}
