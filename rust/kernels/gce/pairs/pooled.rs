//! The pooled pass of the pair kernels (pooled groupings of up to [`POOLED_MAX_BINS`] bins):
//! one pass per span that validates, bins (a rounded guess and one comparison with the exact
//! edge) and adds each pair into [`PooledTables`]; the portable function and its AVX2 twin.

use std::ops::Range;

#[cfg(doc)]
use super::even_chunk;

use super::{pair_bad, run_chunk, RunTables};
use super::Pairs;
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::units;
use crate::kernels::core::validate::RANGE_TOL;
use crate::kernels::{BinStats, Score};

/// The tables of the pooled path: [`PooledTables::COPIES`] interleaved copies (pair j of a
/// block to copy j % 8: calibrated data puts most pairs in one bin, and each copy's chain of
/// read-add-write of one slot then advances only every 8th pair). A copy holds two slots per
/// bin, for incorrect and correct pairs, after two slots that drop what is pushed to them:
/// pair (bin b, outcome c) goes to slot `2 * (b + 1) + c`, a dropped pair to slot 0 or 1. A
/// slot is two i64s, the count and the biased score units ([`units::biased`]) of its pairs of
/// the run, so one 128-bit integer add of `[1, biased(s)]` updates it. A run holds at most
/// [`units::RUN`] pairs per copy; runs are folded into the table's exact unit sums, so the
/// result does not depend on the order of the pairs or the number of threads.
pub struct PooledTables {
    /// Real bins (B + 1).
    bins: usize,
    data: Vec<i64>,
    pending: usize,
}

impl PooledTables {
    pub const COPIES: usize = 8;
    /// Pairs pushed at a time (a multiple of 8 dividing the run of
    /// [`super::run_chunk`]: the AVX2 twin's pipeline fills and drains once per span).
    const SPAN: usize = 4096;

    pub fn new(bins: usize) -> Self {
        PooledTables { bins, data: vec![0; Self::COPIES * Self::stride_of(bins)], pending: 0 }
    }

    /// i64s per copy: two slots (of two i64s) per bin and for the dropped pairs.
    const fn stride_of(bins: usize) -> usize {
        (bins + 1) * 4
    }

    /// Folds every copy into `st` (exact unit sums: the bias off by count) and clears the
    /// copies.
    pub fn flush(&mut self, st: &mut BinStats) {
        let stride = Self::stride_of(self.bins);
        for copy in self.data.chunks_exact_mut(stride) {
            for (b, slots) in copy[4..].chunks_exact(4).enumerate() {
                let (k0, s0, k1, s1) = (slots[0], slots[1], slots[2], slots[3]);
                if k0 + k1 == 0 {
                    continue;
                }
                st.count[b] += (k0 + k1) as f64;
                st.sum_outcome[b] += k1 as f64;
                st.units[b] += units::unbias(s0.wrapping_add(s1), (k0 + k1) as u64);
            }
            copy.fill(0);
        }
        self.pending = 0;
    }
}

/// Largest bin count of the pooled path: its bin guess (see [`x86::push_pooled`]) needs
/// `B * RANGE_TOL < 1/2` and `(B + 1) / B > 1 + RANGE_TOL`.
pub(super) const POOLED_MAX_BINS: usize = 4096;

/// Whether the pooled path takes `e` and `threshold` (a negative threshold keeps confidences
/// of 0 and below, which the pooled path's bin -1 drops).
pub(super) fn pooled_fits(e: &EvenEdges, threshold: f64) -> bool {
    let b = e.b as f64;
    e.b <= POOLED_MAX_BINS && b * RANGE_TOL < 0.45 && (b + 1.0) * (1.0 / b) > 1.0 + RANGE_TOL && threshold >= 0.0
}

/// [`even_chunk`](super::even_chunk) of pooled groupings (predicted classes, if any, checked apart): one pass per
/// span that validates,
/// bins and adds each pair into [`PooledTables`] with `push` ([`push_pooled`]; the tests also
/// pass its portable twin).
pub(super) fn pooled_chunk<T: Score>(
    x: &Pairs<'_, T>,
    threshold: f64,
    e: &EvenEdges,
    rows: Range<usize>,
    push: impl Fn(&Pairs<'_, T>, f64, &EvenEdges, Range<usize>, &mut PooledTables) -> bool,
) -> Result<BinStats, ()> {
    let mut t = PooledTables::new(e.num_bins());
    run_chunk(1, e.num_bins(), rows, PooledTables::SPAN, &mut t, |block, t| push(x, threshold, e, block, t))
}

impl RunTables for PooledTables {
    fn pending(&mut self) -> &mut usize {
        &mut self.pending
    }
    fn fold_run(&mut self, st: &mut BinStats) {
        self.flush(st)
    }
}

/// Validates, bins and adds the pooled pairs of `block` into `t` (pair j of the block into
/// copy j % 8, slot 2 * (bin + 1) + correct, or 0 or 1 when dropped); false if one fails a
/// check (a NaN confidence included). The AVX2 twin [`x86::push_pooled`] takes eight pairs at a time,
/// the rest (or, without AVX2, all) [`push_pooled_portable`]: on valid pairs both
/// leave bitwise the same tables.
pub(super) fn push_pooled<T: Score>(x: &Pairs<'_, T>, threshold: f64, e: &EvenEdges, block: Range<usize>, t: &mut PooledTables) -> bool {
    use crate::kernels::core::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        record(Kernel::PairCells, Level::Avx2);
        let exact_top = e.b as f64 * (1.0 / e.b as f64) == 1.0;
        // SAFETY: AVX2 is present (the crate's one feature check); `x86::push_pooled` asserts
        // that `block` lies inside the input and that `t` has B + 1 bins, and clamps every
        // slot into the table (see there).
        let (done, ok) = unsafe {
            match (threshold > 0.0, exact_top) {
                (false, true) => x86::push_pooled::<T, false, true>(x, threshold, e.b, block.clone(), t),
                (false, false) => x86::push_pooled::<T, false, false>(x, threshold, e.b, block.clone(), t),
                (true, true) => x86::push_pooled::<T, true, true>(x, threshold, e.b, block.clone(), t),
                (true, false) => x86::push_pooled::<T, true, false>(x, threshold, e.b, block.clone(), t),
            }
        };
        return ok & push_pooled_portable(x, threshold, e, block, done, t);
    }
    record(Kernel::PairCells, Level::Portable);
    push_pooled_portable(x, threshold, e, block, 0, t)
}

/// The portable [`push_pooled`] for the pairs of `block` from offset `from` on.
pub(super) fn push_pooled_portable<T: Score>(x: &Pairs<'_, T>, threshold: f64, e: &EvenEdges, block: Range<usize>, from: usize, t: &mut PooledTables) -> bool {
    let stride = PooledTables::stride_of(t.bins);
    let mut bad = false;
    for j in from..block.len() {
        let i = block.start + j;
        let (s, c) = x.at(i);
        bad |= pair_bad(s, c);
        let cell = if s > threshold { e.bin(s) + 1 } else { 0 };
        let at = (j % PooledTables::COPIES) * stride + (2 * cell + (c & 1) as usize) * 2;
        t.data[at] += 1;
        t.data[at + 1] = t.data[at + 1].wrapping_add(units::biased(s));
    }
    !bad
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::Pairs;
    use crate::kernels::core::units;
    use crate::kernels::core::validate::out_of_range_avx2;
    use crate::kernels::Score;
    use std::arch::x86_64::*;
    use std::ops::Range;

#[cfg(doc)]
use super::even_chunk;

    /// Rounds to an integer when added (1.5 * 2^52: sums in [2^52, 2^53) are integers, and the
    /// low 32 bits of the sum's pattern are the integer added, as two's complement).
    const MAGIC: f64 = 6755399441055744.0;

    /// Iterations (of 8 pairs) between computing a pair's slot and adding the pair to it.
    const SKEW: usize = 4;
    /// Iterations whose slots the ring holds (a power of two above [`SKEW`]).
    const RING: usize = 16;

    /// [`super::push_pooled`] eight pairs at a time; returns (pairs done, no range or outcome
    /// violation seen). A NaN confidence escapes the min/max range check, so NaNs are gathered
    /// by one more comparison.
    ///
    /// The bin is a guess `g`, the integer nearest to `s * B` (either one on a tie), minus one
    /// comparison with the exact edge `u_g` (`g * step`, 1.0 for g = B). For a kept valid pair
    /// (0 < s <= 1 + RANGE_TOL, bin b) the guess is b or b + 1: `u_b <= s < u_(b+1)` puts
    /// `s * B` within [b, b + 1] up to rounding errors of ~B * 2^-52, and for b = B,
    /// `s * B <= B + B * RANGE_TOL < B + 1/2` (B <= [`super::POOLED_MAX_BINS`]). So
    /// `bin = g - (s < u_g)`. Without a threshold u_0 is the smallest positive double, so that
    /// s <= 0 (guess 0: s * B > -1/2) gets bin -1, whose slots drop the pair; with one, pairs
    /// at or below it are sent there by a select.
    ///
    /// Lane q of each half takes copy q (then 4 + q), and the copy is folded into the rounding
    /// constant: the pattern of `s * B + MAGIC + 1 + q * (B + 2)` holds `bin + 1 + q * (B + 2)`
    /// in its low 32 bits once the comparison mask (-1 where s < u_g) is added, so that slot
    /// `2 * that + c` (c the outcome byte) is copy q's slot of (bin, c), counted from the
    /// table's start. Whatever the values (invalid, or changed by another thread), the slot is
    /// clamped to copy q's last slot (unsigned min), inside the table.
    ///
    /// The slots of iteration i are stored in a small ring and used [`SKEW`] iterations later,
    /// so that the table updates have their addresses at once instead of each waiting for its
    /// slot's chain of arithmetic.
    #[target_feature(enable = "avx2")]
    pub unsafe fn push_pooled<T: Score, const THRESH: bool, const EXACT_TOP: bool>(
        x: &Pairs<'_, T>,
        threshold: f64,
        b: usize,
        block: Range<usize>,
        t: &mut super::PooledTables,
    ) -> (usize, bool) {
        // SAFETY: the caller guarantees AVX2. Input offsets are below `done <= n = block.len()`
        // from `block.start` (8 confidences and 8 outcome bytes from 8 * i, i < iters), and the
        // assert bounds `block.end` by the input length; offsets come from the shape only. The
        // ring is indexed by loop counters modulo its length. Table byte offsets are slot * 16
        // with slot <= copy 7's last slot, 16 * (B + 2) - 1 (unsigned min), and the assert fixes
        // `t.data` at 8 * stride f64s (stride = 4 * (B + 2) f64s, two slots per bin and two
        // dropping ones): each 16-byte read-add-write ends at most at 16 * (B + 2) * 16 =
        // 8 * stride * 8 bytes, inside `t.data` (i64s).
        unsafe {
            let n = block.len();
            let stride = super::PooledTables::stride_of(t.bins);
            assert!(block.end <= x.n && t.bins == b + 1 && b <= super::POOLED_MAX_BINS && t.data.len() == super::PooledTables::COPIES * stride);
            let conf = x.conf.as_ptr().add(block.start);
            let correct = x.correct.as_ptr().add(block.start);
            let bf = _mm256_set1_pd(b as f64);
            let step = _mm256_set1_pd(1.0 / b as f64);
            let one = _mm256_set1_pd(1.0);
            let ones = _mm256_set1_epi64x(1);
            let shift = _mm256_set1_pd(units::SHIFT);
            let mut nan = _mm256_setzero_pd();
            let tiny = _mm256_set1_pd(f64::from_bits(1));
            let thr = _mm256_set1_pd(threshold);
            // Per half: the rounding constants, each lane's dropping cell and last slot.
            let cells = b + 2;
            let magic = |q: usize| MAGIC + 1.0 + (q * cells) as f64;
            let magics = [0, 4].map(|q: usize| _mm256_setr_pd(magic(q), magic(q + 1), magic(q + 2), magic(q + 3)));
            let drop = |q: usize| (q * cells) as i32;
            let drops = [0, 4].map(|q: usize| _mm256_setr_epi32(drop(q), 0, drop(q + 1), 0, drop(q + 2), 0, drop(q + 3), 0));
            let last = |q: usize| (2 * (q + 1) * cells - 1) as i32;
            let lasts = [0, 4].map(|q: usize| _mm256_setr_epi32(last(q), 0, last(q + 1), 0, last(q + 2), 0, last(q + 3), 0));
            let table = t.data.as_mut_ptr() as *mut u8;
            let mut mn = _mm256_set1_pd(0.5);
            let mut mx = mn;
            let mut bits = 0u64;
            // Byte offsets of iteration i's slots at (i % RING) * 16 + 8 * half + 2 * lane.
            let mut ring = [0u32; 16 * RING];
            let iters = n / 8;
            // The slots of iteration `it` into the ring (and the checks gathered).
            macro_rules! slots {
                ($it:expr) => {{
                    let it = $it;
                    let j = 8 * it;
                    bits |= (correct.add(j) as *const u64).read_unaligned();
                    for h in 0..2 {
                        let s = T::load4(conf.add(j + 4 * h));
                        mn = _mm256_min_pd(mn, s);
                        mx = _mm256_max_pd(mx, s);
                        nan = _mm256_or_pd(nan, _mm256_cmp_pd(s, s, _CMP_UNORD_Q));
                        let y = _mm256_add_pd(_mm256_mul_pd(s, bf), magics[h]);
                        let g = _mm256_sub_pd(y, magics[h]);
                        let mut edge = _mm256_mul_pd(g, step);
                        if !EXACT_TOP {
                            edge = _mm256_blendv_pd(edge, one, _mm256_cmp_pd(g, bf, _CMP_EQ_OQ));
                        }
                        if !THRESH {
                            edge = _mm256_add_pd(edge, tiny);
                        }
                        let down = _mm256_castpd_si256(_mm256_cmp_pd(s, edge, _CMP_LT_OQ));
                        let mut cell = _mm256_add_epi32(_mm256_castpd_si256(y), down);
                        if THRESH {
                            cell = _mm256_blendv_epi8(drops[h], cell, _mm256_castpd_si256(_mm256_cmp_pd(s, thr, _CMP_GT_OQ)));
                        }
                        let c = _mm256_cvtepu8_epi64(_mm_loadu_si32(correct.add(j + 4 * h)));
                        let slot = _mm256_min_epu32(_mm256_add_epi32(_mm256_add_epi32(cell, cell), c), lasts[h]);
                        _mm256_storeu_si256(ring.as_mut_ptr().add((it % RING) * 16 + 8 * h) as *mut __m256i, _mm256_slli_epi32(slot, 4));
                    }
                }};
            }
            // Adds the pairs of iteration `k` to their slots, read from the ring.
            macro_rules! add {
                ($k:expr) => {{
                    let k = $k;
                    let offs = ring.as_ptr().add((k % RING) * 16);
                    for h in 0..2 {
                        let s = T::load4(conf.add(8 * k + 4 * h));
                        // [1, biased units] per pair, as `units::biased` computes them.
                        let u = _mm256_castpd_si256(_mm256_add_pd(s, shift));
                        let (a, z) = (_mm256_unpacklo_epi64(ones, u), _mm256_unpackhi_epi64(ones, u));
                        for (lane, v) in [(0, _mm256_castsi256_si128(a)), (1, _mm256_castsi256_si128(z)), (2, _mm256_extracti128_si256(a, 1)), (3, _mm256_extracti128_si256(z, 1))] {
                            let q = table.add(*offs.add(8 * h + 2 * lane) as usize) as *mut __m128i;
                            _mm_storeu_si128(q, _mm_add_epi64(_mm_loadu_si128(q), v));
                        }
                    }
                }};
            }
            let lead = SKEW.min(iters);
            for it in 0..lead {
                slots!(it);
            }
            for it in lead..iters {
                slots!(it);
                add!(it - SKEW);
            }
            for k in iters - lead..iters {
                add!(k);
            }
            // The range rule on the lanes' minimum and maximum (both start at 0.5, so min <= max).
            let range = _mm256_or_pd(out_of_range_avx2(mn), out_of_range_avx2(mx));
            let range = _mm256_or_pd(range, nan);
            let ok = _mm256_movemask_pd(range) == 0 && bits & 0xFEFE_FEFE_FEFE_FEFE == 0;
            (8 * iters, ok)
        }
    }
}

