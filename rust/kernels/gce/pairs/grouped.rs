//! The grouped pass of the pair kernels (class-conditional groupings, and pooled ones the
//! pooled pass does not take): each pair's cell, then per-cell sums in [`PairTables`] (tables
//! of at most [`LaneTables::SMALL`] cells, one fused pass per block) or through the
//! [`LaneTables`] accumulation (larger tables); portable functions and their AVX2 twins.

use std::ops::Range;

#[cfg(doc)]
use super::even_chunk;
#[cfg(doc)]
use crate::kernels::core::stats::LaneTables;

use super::{pair_bad, run_chunk, Pairs, RunTables, BLOCK};
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::units;
use crate::kernels::{BinStats, Grouping, Score};

/// Space of one block: each pair's score, cell and count increment.
pub(super) struct Buffers {
    pub(super) scores: [f64; BLOCK],
    pub(super) cells: [u32; BLOCK],
    pub(super) incs: [u64; BLOCK],
}

/// Score, cell (the discard cell `drop` at or below the threshold) and count increment (1,
/// plus 1 << 32 when correct) of the pairs of `block`; false if one fails a check. Four pairs
/// at a time with AVX2 ([`x86::cells_of`]), the rest (or, without AVX2, all) with the portable
/// twin [`cells_of_portable`]; on valid pairs both write bitwise the same buffers.
pub(super) fn cells_of<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, drop: u32, block: Range<usize>, b: &mut Buffers) -> bool {
    use crate::kernels::core::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        record(Kernel::PairCells, Level::Avx2);
        // SAFETY: AVX2 is present (the crate's one feature check); `x86::cells_of` asserts
        // `block` lies inside the input and fits the buffers, and reads and writes only there
        // (offsets from the shape, never from values another thread may change meanwhile).
        let (done, ok) = unsafe { x86::cells_of(x, g, e, drop, block.clone(), b) };
        return ok & cells_of_portable(x, g, e, drop, block, done, b);
    }
    record(Kernel::PairCells, Level::Portable);
    cells_of_portable(x, g, e, drop, block, 0, b)
}

/// The portable [`cells_of`] (the production path without AVX2, and what the AVX2 twin is
/// compared to bitwise), for the pairs of `block` from offset `from` on.
pub(super) fn cells_of_portable<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, drop: u32, block: Range<usize>, from: usize, b: &mut Buffers) -> bool {
    let nb = e.num_bins() as u32;
    let k = x.k as u64;
    let mut bad = false;
    for j in from..block.len() {
        let i = block.start + j;
        let (s, c) = x.at(i);
        bad |= pair_bad(s, c);
        let group = match x.pred {
            Some(p) => {
                let in_range = (p[i] as u64) < k;
                bad |= !in_range;
                if g.class_conditional && in_range { p[i] as u32 } else { 0 }
            }
            None => 0,
        };
        b.scores[j] = s;
        b.cells[j] = if s > g.threshold { group * nb + e.bin(s) as u32 } else { drop };
        b.incs[j] = 1 | (((c & 1) as u64) << 32);
    }
    !bad
}

/// Per-cell sums of pushed pairs, in [`PairTables::COPIES`] interleaved copies (pair j of a
/// block to copy j % 4, each its own dependency chain), every cell two i64s side by side:
/// `count + correct * 2^32` and the biased score units ([`units::biased`]) of the run. One
/// 128-bit integer add updates a cell, where count, outcome and score would take two or three.
/// A run holds at most [`units::RUN`] pairs per copy; runs are folded into the table's exact
/// unit sums (the bias off by count), as [`LaneTables`] folds them.
pub struct PairTables {
    cells: usize,
    pub(super) data: Vec<i64>,
    pending: usize,
}

impl PairTables {
    pub const COPIES: usize = 4;

    pub fn new(cells: usize) -> Self {
        PairTables { cells, data: vec![0; Self::COPIES * (cells + 1) * 2], pending: 0 }
    }

    /// Folds every copy into `st` and clears the copies.
    #[allow(clippy::needless_range_loop)] // cell indexes the table and four arrays
    pub fn flush(&mut self, st: &mut BinStats) {
        let stride = self.cells + 1;
        for copy in 0..Self::COPIES {
            for cell in 0..self.cells {
                let i = (copy * stride + cell) * 2;
                let (k, biased) = (self.data[i] as u64, self.data[i + 1]);
                if k == 0 {
                    continue;
                }
                let (n, correct) = (k & 0xffff_ffff, k >> 32);
                st.count[cell] += n as f64;
                st.sum_outcome[cell] += correct as f64;
                st.units[cell] += units::unbias(biased, n);
                self.data[i] = 0;
                self.data[i + 1] = 0;
            }
            let d = (copy * stride + self.cells) * 2;
            self.data[d] = 0;
            self.data[d + 1] = 0;
        }
        self.pending = 0;
    }
}

/// [`even_chunk`] for tables of at most [`LaneTables::SMALL`] cells: one pass per block that
/// validates, bins and adds each pair into [`PairTables`] ([`push_block`]).
pub(super) fn fused_chunk<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, rows: Range<usize>) -> Result<BinStats, ()> {
    let cells = g.groups(x.k) * e.num_bins();
    let mut t = PairTables::new(cells);
    run_chunk(g.groups(x.k), e.num_bins(), rows, BLOCK, &mut t, |block, t| push_block(x, g, e, block, t))
}

impl RunTables for PairTables {
    fn pending(&mut self) -> &mut usize {
        &mut self.pending
    }
    fn fold_run(&mut self, st: &mut BinStats) {
        self.flush(st)
    }
}

/// Validates, bins and adds the pairs of `block` into `t` (pair j of the block into copy
/// j % 4); false if one fails a check. The AVX2 twin [`x86::push_block`] takes four pairs at a
/// time, the rest (or, without AVX2, all) [`push_block_portable`]: on valid pairs both leave
/// bitwise the same tables.
pub(super) fn push_block<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, block: Range<usize>, t: &mut PairTables) -> bool {
    use crate::kernels::core::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        record(Kernel::PairCells, Level::Avx2);
        // SAFETY: AVX2 is present (the crate's one feature check); `x86::push_block` asserts
        // `block` lies inside the input, and clamps every cell to the table (see there).
        let (done, ok) = unsafe { x86::push_block(x, g, e, block.clone(), t) };
        return ok & push_block_portable(x, g, e, block, done, t);
    }
    record(Kernel::PairCells, Level::Portable);
    push_block_portable(x, g, e, block, 0, t)
}

/// The portable [`push_block`] for the pairs of `block` from offset `from` on.
pub(super) fn push_block_portable<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, block: Range<usize>, from: usize, t: &mut PairTables) -> bool {
    let nb = e.num_bins();
    let k = x.k as u64;
    let stride = t.cells + 1;
    let drop = t.cells;
    let mut bad = false;
    for j in from..block.len() {
        let i = block.start + j;
        let (s, c) = x.at(i);
        bad |= pair_bad(s, c);
        let mut keep = s > g.threshold;
        let group = match x.pred {
            Some(p) => {
                let in_range = (p[i] as u64) < k;
                bad |= !in_range;
                keep &= in_range || !g.class_conditional;
                if g.class_conditional && in_range { p[i] as usize } else { 0 }
            }
            None => 0,
        };
        let cell = if keep { (group * nb + e.bin(s)).min(drop) } else { drop };
        let at = ((j % PairTables::COPIES) * stride + cell) * 2;
        t.data[at] += 1 | (((c & 1) as i64) << 32);
        t.data[at + 1] = t.data[at + 1].wrapping_add(units::biased(s));
    }
    !bad
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use super::super::{class_limit, Pairs};
    use super::Buffers;
    use crate::kernels::core::edges::EvenEdges;
    use crate::kernels::core::units;
    use crate::kernels::core::validate::out_of_range_avx2;
    use crate::kernels::{Grouping, Score};
    use std::arch::x86_64::*;
    use std::ops::Range;

#[cfg(doc)]
use super::even_chunk;
#[cfg(doc)]
use crate::kernels::core::stats::LaneTables;

    /// What [`cells_of`] and [`push_block`] do to every four pairs, and the checks they gather
    /// on the way (only gathered: a failing chunk is refused as a whole).
    struct Four {
        threshold: __m256d,
        drop: __m128i,
        nb: __m128i,
        k: __m256i,
        low_halves: __m256i,
        bad: __m256d,
        bad_pred: __m256i,
        bits: u32,
    }

    impl Four {
        /// # Safety
        /// AVX2 must be available (the callers are compiled for it).
        #[inline(always)]
        unsafe fn new<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, drop: u32) -> Self {
            // SAFETY: register operations only; AVX2 as the caller guarantees.
            unsafe {
                Four {
                    threshold: _mm256_set1_pd(g.threshold),
                    drop: _mm_set1_epi32(drop as i32),
                    nb: _mm_set1_epi32(e.num_bins() as i32),
                    k: _mm256_set1_epi64x(class_limit(x.k)),
                    low_halves: _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
                    bad: _mm256_setzero_pd(),
                    bad_pred: _mm256_setzero_si256(),
                    bits: 0,
                }
            }
        }

        /// Pairs `at..at + 4` of the input: their scores widened to f64, their cells (the
        /// even bin, plus `predicted * nb` when class-conditional; `drop` where not kept:
        /// at or below the threshold, or a bad prediction when class-conditional) and their
        /// four outcome bytes. Range, outcome and prediction checks are OR-ed into `self`.
        ///
        /// # Safety
        /// AVX2 must be available and `at + 4 <= x.n`.
        #[inline(always)]
        unsafe fn step<T: Score>(&mut self, x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, at: usize) -> (__m256d, __m128i, u32) {
            // SAFETY: the loads read pairs at..at + 4 of `conf`, `correct` and `pred` (each of
            // length x.n), in bounds by the caller's contract; the rest are register operations.
            unsafe {
                let s = T::load4(x.conf.as_ptr().add(at));
                let bins = e.bin4(s);
                self.bad = _mm256_or_pd(self.bad, out_of_range_avx2(s));
                // OR of every `correct` byte: a value other than 0/1 sets a bit of 0xFE.
                let c4 = (x.correct.as_ptr().add(at) as *const u32).read_unaligned();
                self.bits |= c4;
                let mut keep = _mm256_castpd_si256(_mm256_cmp_pd(s, self.threshold, _CMP_GT_OQ));
                let mut cells = bins;
                if let Some(p) = x.pred {
                    let p = _mm256_loadu_si256(p.as_ptr().add(at) as *const __m256i);
                    // A prediction is bad when negative or not below k.
                    let bad4 = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), p), _mm256_xor_si256(_mm256_cmpgt_epi64(self.k, p), _mm256_set1_epi64x(-1)));
                    self.bad_pred = _mm256_or_si256(self.bad_pred, bad4);
                    if g.class_conditional {
                        keep = _mm256_andnot_si256(bad4, keep);
                        let p32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p, self.low_halves));
                        cells = _mm_add_epi32(_mm_mullo_epi32(p32, self.nb), bins);
                    }
                }
                let keep = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(keep, self.low_halves));
                (s, _mm_blendv_epi8(self.drop, cells, keep), c4)
            }
        }

        /// Whether every pair stepped over passed the checks.
        ///
        /// # Safety
        /// AVX2 must be available.
        #[inline(always)]
        unsafe fn ok(&self) -> bool {
            // SAFETY: register operations only; AVX2 as the caller guarantees.
            unsafe { _mm256_movemask_pd(self.bad) == 0 && self.bits & 0xFEFE_FEFE == 0 && _mm256_testz_si256(self.bad_pred, self.bad_pred) == 1 }
        }
    }

    /// [`super::cells_of`] four pairs at a time; returns (pairs done, all passed the checks).
    /// The checks are only gathered (the chunk of a failing pair is refused anyway): a pair
    /// above the threshold gets a cell even if it fails one, which is always within the table
    /// (bins are clamped to 0..=B, an out-of-range prediction goes to the discard cell).
    #[target_feature(enable = "avx2")]
    pub unsafe fn cells_of<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, drop: u32, block: Range<usize>, b: &mut Buffers) -> (usize, bool) {
        // SAFETY: the caller guarantees AVX2 (the dispatcher checks `simd::avx2()`). Every
        // pointer offset is below `done <= n = block.len()` from `block.start`, and the assert
        // below bounds `block.end` by the input length and `n` by the buffers' length, so all
        // loads and stores are in bounds; offsets come from the shape only, so another thread
        // changing the values changes what is read, never where.
        unsafe {
            let n = block.len();
            assert!(block.end <= x.n && n <= b.scores.len());
            let mut four = Four::new(x, g, e, drop);
            let one = _mm256_set1_epi64x(1);
            let done = n / 4 * 4;
            for j in (0..done).step_by(4) {
                let (s, cells, c4) = four.step(x, g, e, block.start + j);
                _mm_storeu_si128(b.cells.as_mut_ptr().add(j) as *mut __m128i, cells);
                _mm256_storeu_pd(b.scores.as_mut_ptr().add(j), s);
                let c = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(c4 as i32));
                let inc = _mm256_or_si256(one, _mm256_slli_epi64(_mm256_and_si256(c, one), 32));
                _mm256_storeu_si256(b.incs.as_mut_ptr().add(j) as *mut __m256i, inc);
            }
            (done, four.ok())
        }
    }

    /// [`super::push_block`] four pairs at a time; returns (pairs done, all passed the
    /// checks). As in [`cells_of`], checks are only gathered; each cell is clamped to the
    /// table's discard cell, so whatever the values (even changed by another thread meanwhile)
    /// every update lands inside the table.
    #[target_feature(enable = "avx2")]
    pub unsafe fn push_block<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, block: Range<usize>, t: &mut super::PairTables) -> (usize, bool) {
        // SAFETY: the caller guarantees AVX2. Every input offset is below `done <= n =
        // block.len()` from `block.start`, and the assert bounds `block.end` by the input
        // length; offsets come from the shape only. Table offsets are
        // ((copy * stride + cell) * 2) with copy < 4 and cell <= discard = stride - 1 (clamped
        // in-register with an unsigned min), so each 16-byte update is inside `t.data`
        // (4 * stride * 2 values).
        unsafe {
            let n = block.len();
            assert!(block.end <= x.n && t.data.len() == super::PairTables::COPIES * (t.cells + 1) * 2);
            let mut four = Four::new(x, g, e, t.cells as u32);
            let drop = _mm_set1_epi32(t.cells as i32);
            let one = _mm256_set1_epi64x(1);
            let shift = _mm256_set1_pd(units::SHIFT);
            let stride = t.cells + 1;
            let table = t.data.as_mut_ptr();
            let (t0, t1, t2, t3) = (table, table.add(stride * 2), table.add(stride * 4), table.add(stride * 6));
            let done = n / 4 * 4;
            for j in (0..done).step_by(4) {
                let (s, cells, c4) = four.step(x, g, e, block.start + j);
                let cells = _mm_min_epu32(cells, drop);
                // count + correct * 2^32, interleaved with the biased score units (as
                // `units::biased` computes them): pair q's [increment, units] is one 128-bit
                // half.
                let c = _mm256_and_si256(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(c4 as i32)), one);
                let inc = _mm256_or_si256(one, _mm256_slli_epi64(c, 32));
                let u = _mm256_castpd_si256(_mm256_add_pd(s, shift));
                let (a, b) = (_mm256_unpacklo_epi64(inc, u), _mm256_unpackhi_epi64(inc, u));
                let upd = |base: *mut i64, cell: i32, v: __m128i| {
                    let q = base.add(cell as usize * 2) as *mut __m128i;
                    _mm_storeu_si128(q, _mm_add_epi64(_mm_loadu_si128(q), v));
                };
                upd(t0, _mm_cvtsi128_si32(cells), _mm256_castsi256_si128(a));
                upd(t1, _mm_extract_epi32(cells, 1), _mm256_castsi256_si128(b));
                upd(t2, _mm_extract_epi32(cells, 2), _mm256_extracti128_si256(a, 1));
                upd(t3, _mm_extract_epi32(cells, 3), _mm256_extracti128_si256(b, 1));
            }
            (done, four.ok())
        }
    }
}
