//! Top-label metrics from (confidence, correct[, predicted]) pairs, without a probability
//! matrix: the input a model-zoo record, an LLM harness or a detector gives.
//!
//! Pair i is what the top-label path ([`crate::kernels::toplabel`]) derives from row i of a
//! matrix: its confidence (the row maximum), whether the prediction is correct, and the
//! predicted class (the first argmax), needed only for class-conditional groupings. From there
//! the binning is the matrix path's: [`EvenEdges`] and the [`LaneTables`] accumulation for even
//! bins, [`adaptive_group`] for adaptive bins, [`BinStats`] and [`reduce`] for the metric.
//!
//! Even bins take one pass that validates, bins and adds each pair (confidence finite and
//! within [0, 1] up to [`RANGE_TOL`], correct 0 or 1, predicted in [0, K); [`PairTables`]: one
//! 128-bit add per pair, larger tables buffer a block of cells first) over fixed chunks of pairs
//! whose tables are added in chunk order, so the result is the same for any number of threads.
//! Adaptive bins validate first, then gather each group's kept pairs and sort them.

use std::ops::Range;

use rayon::prelude::*;

use crate::kernels::chunks::row_chunks_split;
use crate::kernels::edges::EvenEdges;
use crate::kernels::share::map_fold_here;
use crate::kernels::stats::LaneTables;
use crate::kernels::toplabel::adaptive_group;
use crate::kernels::validate::RANGE_TOL;
use crate::kernels::{reduce, Binning, BinStats, GceSpec, Grouping, KernelError, Norm, Score};

/// Pairs binned into the small per-block buffers at a time.
const BLOCK: usize = 256;
/// Pairs per chunk (fixed: the split depends only on N, never on the number of threads).
const CHUNK: usize = 1 << 16;

/// N top-label pairs: confidence, correct (0/1) and, for class-conditional groupings, the
/// predicted class in [0, K).
#[derive(Clone, Copy)]
pub struct Pairs<'a, T: Score> {
    pub conf: &'a [T],
    pub correct: &'a [u8],
    pub pred: Option<&'a [i64]>,
    pub k: usize,
    pub n: usize,
}

impl<'a, T: Score> Pairs<'a, T> {
    /// Checks the lengths agree and the input is not empty (values are checked by the passes).
    pub fn new(conf: &'a [T], correct: &'a [u8], pred: Option<&'a [i64]>, k: usize) -> Result<Self, KernelError> {
        let n = conf.len();
        if correct.len() != n {
            return Err(KernelError::Shape(format!(
                "correct has {} entries but confidence has {n}; pass one outcome per confidence",
                correct.len()
            )));
        }
        if let Some(p) = pred {
            if p.len() != n {
                return Err(KernelError::Shape(format!(
                    "predicted has {} entries but confidence has {n}; pass one predicted class per confidence",
                    p.len()
                )));
            }
        }
        if n == 0 {
            return Err(KernelError::Shape("confidence and correct are empty; pass at least one prediction".into()));
        }
        if k == 0 {
            return Err(KernelError::Shape("num_classes must be at least 1".into()));
        }
        Ok(Pairs { conf, correct, pred, k, n })
    }

    /// Whether pair `i` passes every check.
    #[inline(always)]
    fn ok(&self, i: usize) -> bool {
        let s = self.conf[i].to_f64();
        let p_ok = self.pred.is_none_or(|p| (p[i] as u64) < self.k as u64);
        (-RANGE_TOL..=1.0 + RANGE_TOL).contains(&s) & (self.correct[i] <= 1) & p_ok
    }

    /// The error of pair `i`, known to fail a check.
    fn error(&self, i: usize) -> KernelError {
        let s = self.conf[i].to_f64();
        if !(-RANGE_TOL..=1.0 + RANGE_TOL).contains(&s) {
            return KernelError::BadConfidence { index: i, value: s };
        }
        if self.correct[i] > 1 {
            return KernelError::BadCorrect { index: i, value: self.correct[i] };
        }
        let p = self.pred.expect("only predicted is left")[i];
        KernelError::BadPredicted { index: i, value: p, num_classes: self.k }
    }

    /// The first failing pair of `rows`, as an error.
    fn first_error(&self, rows: Range<usize>) -> Option<KernelError> {
        rows.into_iter().find(|&i| !self.ok(i)).map(|i| self.error(i))
    }

    /// Validates every pair (in parallel chunks); the error names the lowest failing index.
    pub fn validate(&self) -> Result<(), KernelError> {
        let chunks = row_chunks_split(self.n, 1, CHUNK, CHUNK);
        let bad: Vec<bool> = chunks.par_iter().map(|r| !chunk_ok(self, r.clone())).collect();
        match bad.iter().position(|&b| b) {
            Some(c) => Err(self.first_error(chunks[c].clone()).expect("a failing pair exists")),
            None => Ok(()),
        }
    }
}

crate::kernels::simd::multiversion! {
    /// Whether every pair of `rows` passes the checks (branch-free, vectorisable).
    fn chunk_ok<T: Score>(x: &Pairs<'_, T>, rows: Range<usize>) -> bool {
        let (lo, hi) = (-RANGE_TOL, 1.0 + RANGE_TOL);
        let mut bad = false;
        for (s, &c) in x.conf[rows.clone()].iter().zip(&x.correct[rows.clone()]) {
            let s = s.to_f64();
            bad |= !(s >= lo && s <= hi) | (c > 1);
        }
        if let Some(p) = x.pred {
            for &v in &p[rows] {
                bad |= (v as u64) >= x.k as u64;
            }
        }
        !bad
    }
}

/// Refuses groupings the pairs cannot give: all-probabilities metrics need every class's
/// probability; class-conditional ones need the predicted classes.
fn check_grouping<T: Score>(x: &Pairs<'_, T>, g: &Grouping, bins: &[usize]) -> Result<(), KernelError> {
    if !g.max_prob {
        return Err(KernelError::Parameter(
            "max_prob=False needs every class's probability; top-label pairs hold only the top one: pass labels and the probability matrix".into(),
        ));
    }
    if g.class_conditional && x.pred.is_none() {
        return Err(KernelError::Parameter(
            "class-conditional metrics need the predicted class of each pair: pass predicted and num_classes".into(),
        ));
    }
    for &b in bins {
        g.check(b)?;
        g.check_table(x.k, b)?;
    }
    Ok(())
}

/// Per-(group, bin) statistics of a top-label grouping for each bin count in `bins`.
pub fn stats_many<T: Score>(x: &Pairs<'_, T>, g: &Grouping, bins: &[usize]) -> Result<Vec<BinStats>, KernelError> {
    check_grouping(x, g, bins)?;
    match g.binning {
        Binning::Even => bins.iter().map(|&b| even_stats(x, g, &EvenEdges::new(b))).collect(),
        Binning::Adaptive => {
            x.validate()?;
            let members = group_members(x, g);
            Ok(bins.iter().map(|&b| adaptive_stats(&members, g, b)).collect())
        }
    }
}

/// Per-(group, bin) statistics of one top-label grouping and bin count.
pub fn bin_stats<T: Score>(x: &Pairs<'_, T>, g: &Grouping, num_bins: usize) -> Result<BinStats, KernelError> {
    Ok(stats_many(x, g, &[num_bins])?.pop().expect("one bin count in, one table out"))
}

/// The General Calibration Error of one top-label metric.
pub fn gce<T: Score>(x: &Pairs<'_, T>, spec: &GceSpec) -> Result<f64, KernelError> {
    let st = bin_stats(x, &spec.grouping, spec.num_bins)?;
    Ok(reduce::reduce(&st, spec.norm, spec.grouping.class_conditional))
}

/// Values of top-label `metrics` at each bin count, row-major `[metric][bin count]`; each
/// distinct grouping is binned once for all bin counts and norms.
pub fn evaluate<T: Score>(x: &Pairs<'_, T>, metrics: &[(Grouping, Norm)], bins: &[usize]) -> Result<Vec<f64>, KernelError> {
    for (g, _) in metrics {
        check_grouping(x, g, bins)?;
    }
    x.validate()?;
    let mut out = vec![f64::NAN; metrics.len() * bins.len()];
    let mut done = vec![false; metrics.len()];
    for m in 0..metrics.len() {
        if done[m] {
            continue;
        }
        let g = metrics[m].0;
        let tables: Vec<BinStats> = match g.binning {
            Binning::Even => bins.iter().map(|&b| even_stats(x, &g, &EvenEdges::new(b))).collect::<Result<_, _>>()?,
            Binning::Adaptive => {
                let members = group_members(x, &g);
                bins.iter().map(|&b| adaptive_stats(&members, &g, b)).collect()
            }
        };
        for (m2, (g2, norm)) in metrics.iter().enumerate() {
            if *g2 == g {
                for (bi, t) in tables.iter().enumerate() {
                    out[m2 * bins.len() + bi] = reduce::reduce(t, *norm, g.class_conditional);
                }
                done[m2] = true;
            }
        }
    }
    Ok(out)
}

/// Even-binned statistics: validate and bin every pair in one pass over fixed chunks, whose
/// tables are added in chunk order.
fn even_stats<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges) -> Result<BinStats, KernelError> {
    let chunks = row_chunks_split(x.n, 1, CHUNK, CHUNK);
    let mut total: Option<BinStats> = None;
    let res = map_fold_here(
        &chunks,
        |rows| even_chunk(x, g, e, rows),
        |part| match &mut total {
            None => total = Some(part),
            Some(t) => t.add(&part),
        },
    );
    if res.is_err() {
        // The first failing pair over the whole input, whichever chunk reported first.
        return Err(x.first_error(0..x.n).expect("a failing pair exists"));
    }
    let mut st = total.expect("at least one chunk");
    st.edges = e.boundaries().repeat(st.groups);
    Ok(st)
}

/// Space of one block: each pair's score, cell and count increment.
struct Buffers {
    scores: [f64; BLOCK],
    cells: [u32; BLOCK],
    incs: [u64; BLOCK],
}

/// One chunk of [`even_stats`]; `Err(())` if a pair fails a check.
fn even_chunk<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, rows: Range<usize>) -> Result<BinStats, ()> {
    let groups = g.groups(x.k);
    if groups * e.num_bins() <= LaneTables::SMALL {
        return fused_chunk(x, g, e, rows);
    }
    let mut st = BinStats::zeros(groups, e.num_bins());
    let mut comp = vec![0.0; st.count.len()];
    let mut acc = LaneTables::new(st.count.len());
    let mut b = Box::new(Buffers { scores: [0.0; BLOCK], cells: [0; BLOCK], incs: [0; BLOCK] });
    let drop = acc.discard() as u32;
    let mut ok = true;
    for start in rows.clone().step_by(BLOCK) {
        let block = start..(start + BLOCK).min(rows.end);
        let n = block.len();
        ok &= cells_of(x, g, e, drop, block, &mut b);
        acc.push_slices(&b.cells[..n], &b.scores[..n], &b.incs[..n]);
        acc.pushed(n, &mut st, &mut comp);
    }
    if !ok {
        return Err(());
    }
    acc.flush(&mut st, &mut comp);
    st.apply_compensation(&comp);
    Ok(st)
}

/// Score, cell (the discard cell `drop` at or below the threshold) and count increment (1,
/// plus 1 << 32 when correct) of the pairs of `block`; false if one fails a check. Four pairs
/// at a time with AVX2 ([`x86::cells_of`]), the rest (or, without AVX2, all) with the portable
/// twin [`cells_of_portable`]; on valid pairs both write bitwise the same buffers.
fn cells_of<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, drop: u32, block: Range<usize>, b: &mut Buffers) -> bool {
    use crate::kernels::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::simd::avx2() {
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
fn cells_of_portable<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, drop: u32, block: Range<usize>, from: usize, b: &mut Buffers) -> bool {
    let (lo, hi) = (-RANGE_TOL, 1.0 + RANGE_TOL);
    let nb = e.num_bins() as u32;
    let k = x.k as u64;
    let mut bad = false;
    for j in from..block.len() {
        let i = block.start + j;
        let s = x.conf[i].to_f64();
        let c = x.correct[i];
        bad |= !(s >= lo && s <= hi) | (c > 1);
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
/// block to copy j % 4, each its own dependency chain), every cell two f64s side by side:
/// `count + correct * 2^32` (exact integers: a run holds fewer than 2^20 pairs) and the plain
/// score sum of the run. One 128-bit add updates a cell, where count, outcome and score would
/// take two or three. Runs are folded into a [`BinStats`] as [`LaneTables`] folds them (score
/// sums with Neumaier compensation), so long sums stay accurate.
pub struct PairTables {
    cells: usize,
    data: Vec<f64>,
    pending: usize,
}

impl PairTables {
    pub const COPIES: usize = 4;
    /// Pairs per run (well below 2^20, so `correct * 2^32 + count` stays exact).
    const RUN: usize = 1 << 14;
    const HIGH: f64 = 4294967296.0;

    pub fn new(cells: usize) -> Self {
        PairTables { cells, data: vec![0.0; Self::COPIES * (cells + 1) * 2], pending: 0 }
    }

    /// The cell that drops what is pushed to it.
    pub fn discard(&self) -> usize {
        self.cells
    }

    /// Folds every copy into `st` (compensation terms into `comp`) and clears the copies.
    #[allow(clippy::needless_range_loop)] // cell indexes the table and four arrays
    pub fn flush(&mut self, st: &mut BinStats, comp: &mut [f64]) {
        let stride = self.cells + 1;
        for copy in 0..Self::COPIES {
            for cell in 0..self.cells {
                let i = (copy * stride + cell) * 2;
                let (k, score) = (self.data[i], self.data[i + 1]);
                if k == 0.0 {
                    continue;
                }
                let correct = (k / Self::HIGH).floor();
                st.count[cell] += k - correct * Self::HIGH;
                st.sum_outcome[cell] += correct;
                let t = st.sum_score[cell];
                let sum = t + score;
                comp[cell] += if t.abs() >= score.abs() { (t - sum) + score } else { (score - sum) + t };
                st.sum_score[cell] = sum;
                self.data[i] = 0.0;
                self.data[i + 1] = 0.0;
            }
            let d = (copy * stride + self.cells) * 2;
            self.data[d] = 0.0;
            self.data[d + 1] = 0.0;
        }
        self.pending = 0;
    }
}

/// [`even_chunk`] for tables of at most [`LaneTables::SMALL`] cells: one pass per block that
/// validates, bins and adds each pair into [`PairTables`] ([`push_block`]).
fn fused_chunk<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, rows: Range<usize>) -> Result<BinStats, ()> {
    let mut st = BinStats::zeros(g.groups(x.k), e.num_bins());
    let mut comp = vec![0.0; st.count.len()];
    let mut t = PairTables::new(st.count.len());
    let mut ok = true;
    for start in rows.clone().step_by(BLOCK) {
        let block = start..(start + BLOCK).min(rows.end);
        t.pending += block.len();
        ok &= push_block(x, g, e, block, &mut t);
        if t.pending >= PairTables::RUN {
            t.flush(&mut st, &mut comp);
        }
    }
    if !ok {
        return Err(());
    }
    t.flush(&mut st, &mut comp);
    st.apply_compensation(&comp);
    Ok(st)
}

/// Validates, bins and adds the pairs of `block` into `t` (pair j of the block into copy
/// j % 4); false if one fails a check. The AVX2 twin [`x86::push_block`] takes four pairs at a
/// time, the rest (or, without AVX2, all) [`push_block_portable`]: on valid pairs both leave
/// bitwise the same tables.
fn push_block<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, block: Range<usize>, t: &mut PairTables) -> bool {
    use crate::kernels::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::simd::avx2() {
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
fn push_block_portable<T: Score>(x: &Pairs<'_, T>, g: &Grouping, e: &EvenEdges, block: Range<usize>, from: usize, t: &mut PairTables) -> bool {
    let (lo, hi) = (-RANGE_TOL, 1.0 + RANGE_TOL);
    let nb = e.num_bins();
    let k = x.k as u64;
    let stride = t.cells + 1;
    let drop = t.cells;
    let mut bad = false;
    for j in from..block.len() {
        let i = block.start + j;
        let s = x.conf[i].to_f64();
        let c = x.correct[i];
        bad |= !(s >= lo && s <= hi) | (c > 1);
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
        t.data[at] += 1.0 + (c & 1) as f64 * PairTables::HIGH;
        t.data[at + 1] += s;
    }
    !bad
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Buffers, Pairs};
    use crate::kernels::edges::EvenEdges;
    use crate::kernels::validate::RANGE_TOL;
    use crate::kernels::{Grouping, Score};
    use std::arch::x86_64::*;
    use std::ops::Range;

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
            let conf = x.conf.as_ptr().add(block.start);
            let correct = x.correct.as_ptr().add(block.start);
            let (lo, hi) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0 + RANGE_TOL));
            let threshold = _mm256_set1_pd(g.threshold);
            let drop = _mm_set1_epi32(drop as i32);
            let nb = _mm_set1_epi32(e.num_bins() as i32);
            let one = _mm256_set1_epi64x(1);
            let k = _mm256_set1_epi64x(x.k as i64);
            let low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
            let mut bad = _mm256_setzero_pd();
            let mut bad_pred = _mm256_setzero_si256();
            // OR of every `correct` byte: a value other than 0/1 sets a bit of 0xFE.
            let mut bits = 0u32;
            let done = n / 4 * 4;
            for j in (0..done).step_by(4) {
                let s = T::load4(conf.add(j));
                let bins = e.bin4(s);
                // !(s >= lo) | !(s <= hi): true for NaN.
                bad = _mm256_or_pd(bad, _mm256_or_pd(_mm256_cmp_pd(s, lo, _CMP_NGE_UQ), _mm256_cmp_pd(s, hi, _CMP_NLE_UQ)));
                let c4 = (correct.add(j) as *const u32).read_unaligned();
                bits |= c4;
                let mut keep = _mm256_castpd_si256(_mm256_cmp_pd(s, threshold, _CMP_GT_OQ));
                let mut cells = bins;
                if let Some(p) = x.pred {
                    let p = _mm256_loadu_si256(p.as_ptr().add(block.start + j) as *const __m256i);
                    // A prediction is bad when negative or not below k.
                    let bad4 = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), p), _mm256_xor_si256(_mm256_cmpgt_epi64(k, p), _mm256_set1_epi64x(-1)));
                    bad_pred = _mm256_or_si256(bad_pred, bad4);
                    if g.class_conditional {
                        keep = _mm256_andnot_si256(bad4, keep);
                        let p32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p, low_halves));
                        cells = _mm_add_epi32(_mm_mullo_epi32(p32, nb), bins);
                    }
                }
                let keep = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(keep, low_halves));
                _mm_storeu_si128(b.cells.as_mut_ptr().add(j) as *mut __m128i, _mm_blendv_epi8(drop, cells, keep));
                _mm256_storeu_pd(b.scores.as_mut_ptr().add(j), s);
                let c = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(c4 as i32));
                let inc = _mm256_or_si256(one, _mm256_slli_epi64(_mm256_and_si256(c, one), 32));
                _mm256_storeu_si256(b.incs.as_mut_ptr().add(j) as *mut __m256i, inc);
            }
            let ok = _mm256_movemask_pd(bad) == 0 && bits & 0xFEFE_FEFE == 0 && _mm256_testz_si256(bad_pred, bad_pred) == 1;
            (done, ok)
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
            let conf = x.conf.as_ptr().add(block.start);
            let correct = x.correct.as_ptr().add(block.start);
            let (lo, hi) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0 + RANGE_TOL));
            let threshold = _mm256_set1_pd(g.threshold);
            let drop = _mm_set1_epi32(t.cells as i32);
            let nb = _mm_set1_epi32(e.num_bins() as i32);
            let k = _mm256_set1_epi64x(x.k as i64);
            let low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
            let (one, high) = (_mm256_set1_pd(1.0), _mm256_set1_pd(super::PairTables::HIGH));
            let stride = t.cells + 1;
            let table = t.data.as_mut_ptr();
            let (t0, t1, t2, t3) = (table, table.add(stride * 2), table.add(stride * 4), table.add(stride * 6));
            let mut bad = _mm256_setzero_pd();
            let mut bad_pred = _mm256_setzero_si256();
            let mut bits = 0u32;
            let done = n / 4 * 4;
            for j in (0..done).step_by(4) {
                let s = T::load4(conf.add(j));
                let bins = e.bin4(s);
                bad = _mm256_or_pd(bad, _mm256_or_pd(_mm256_cmp_pd(s, lo, _CMP_NGE_UQ), _mm256_cmp_pd(s, hi, _CMP_NLE_UQ)));
                let c4 = (correct.add(j) as *const u32).read_unaligned();
                bits |= c4;
                let mut keep = _mm256_castpd_si256(_mm256_cmp_pd(s, threshold, _CMP_GT_OQ));
                let mut cells = bins;
                if let Some(p) = x.pred {
                    let p = _mm256_loadu_si256(p.as_ptr().add(block.start + j) as *const __m256i);
                    let bad4 = _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), p), _mm256_xor_si256(_mm256_cmpgt_epi64(k, p), _mm256_set1_epi64x(-1)));
                    bad_pred = _mm256_or_si256(bad_pred, bad4);
                    if g.class_conditional {
                        keep = _mm256_andnot_si256(bad4, keep);
                        let p32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p, low_halves));
                        cells = _mm_add_epi32(_mm_mullo_epi32(p32, nb), bins);
                    }
                }
                let keep = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(keep, low_halves));
                let cells = _mm_min_epu32(_mm_blendv_epi8(drop, cells, keep), drop);
                // count + correct * 2^32 (exact), interleaved with the scores: pair q's
                // [increment, score] is one 128-bit half.
                let c = _mm256_cvtepi32_pd(_mm_and_si128(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(c4 as i32)), _mm_set1_epi32(1)));
                let inc = _mm256_add_pd(one, _mm256_mul_pd(c, high));
                let (a, b) = (_mm256_unpacklo_pd(inc, s), _mm256_unpackhi_pd(inc, s));
                let upd = |base: *mut f64, cell: i32, v: __m128d| {
                    let q = base.add(cell as usize * 2);
                    _mm_storeu_pd(q, _mm_add_pd(_mm_loadu_pd(q), v));
                };
                upd(t0, _mm_cvtsi128_si32(cells), _mm256_castpd256_pd128(a));
                upd(t1, _mm_extract_epi32(cells, 1), _mm256_castpd256_pd128(b));
                upd(t2, _mm_extract_epi32(cells, 2), _mm256_extractf128_pd(a, 1));
                upd(t3, _mm_extract_epi32(cells, 3), _mm256_extractf128_pd(b, 1));
            }
            let ok = _mm256_movemask_pd(bad) == 0 && bits & 0xFEFE_FEFE == 0 && _mm256_testz_si256(bad_pred, bad_pred) == 1;
            (done, ok)
        }
    }
}

/// Each group's kept (score, outcome) pairs, in input order (validated input).
fn group_members<T: Score>(x: &Pairs<'_, T>, g: &Grouping) -> Vec<Vec<(f64, bool)>> {
    let mut members: Vec<Vec<(f64, bool)>> = vec![Vec::new(); g.groups(x.k)];
    for i in 0..x.n {
        let s = x.conf[i].to_f64();
        if s > g.threshold {
            let group = match (g.class_conditional, x.pred) {
                (true, Some(p)) => p[i] as usize,
                _ => 0,
            };
            members[group].push((s, x.correct[i] == 1));
        }
    }
    members
}

/// Adaptive statistics of grouped pairs for `b` bins (the matrix path's [`adaptive_group`]).
fn adaptive_stats(members: &[Vec<(f64, bool)>], g: &Grouping, b: usize) -> BinStats {
    let per_group: Vec<(Vec<f64>, BinStats)> =
        members.par_iter().map(|m| adaptive_group(m.clone(), b, g.threshold)).collect();
    let mut st = BinStats::zeros(members.len(), b);
    st.edges.clear();
    for (gi, (bounds, one)) in per_group.into_iter().enumerate() {
        let r = gi * b..(gi + 1) * b;
        st.count[r.clone()].copy_from_slice(&one.count);
        st.sum_score[r.clone()].copy_from_slice(&one.sum_score);
        st.sum_outcome[r].copy_from_slice(&one.sum_outcome);
        st.edges.extend(bounds);
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::validate::Checks;
    use crate::kernels::{Inputs, Norm};

    /// A matrix whose rows have the given top-label confidences and predictions.
    fn matrix(conf: &[f64], pred: &[i64], k: usize) -> Vec<f64> {
        let mut m = Vec::with_capacity(conf.len() * k);
        for (&c, &p) in conf.iter().zip(pred) {
            let rest = (1.0 - c) / (k - 1) as f64;
            for j in 0..k {
                m.push(if j as i64 == p { c } else { rest });
            }
        }
        m
    }

    fn data(n: usize, k: usize) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
        let mut state = 12345u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut conf = Vec::new();
        let mut pred = Vec::new();
        let mut labels = Vec::new();
        for i in 0..n {
            let lo = 1.0 / k as f64;
            let c = if i % 97 == 0 { 1.0 } else { lo + (1.0 - lo) * next() };
            let c = if c <= lo { lo + 1e-9 } else { c };
            conf.push(c);
            let p = (next() * k as f64) as i64 % k as i64;
            pred.push(p);
            labels.push(if next() < c { p } else { (p + 1) % k as i64 });
        }
        (conf, pred, labels)
    }

    #[test]
    fn equals_the_matrix_form() {
        // (600 classes: a class-conditional table too large for the interleaved copies.)
        for (k, n) in [(4, 1usize), (4, 7), (4, 300), (4, 70_000), (4, 140_001), (600, 3001)] {
            let (conf, pred, labels) = data(n, k);
            let correct: Vec<u8> = pred.iter().zip(&labels).map(|(p, l)| (p == l) as u8).collect();
            let m = matrix(&conf, &pred, k);
            let x = Inputs::new(&m, &labels, k).unwrap();
            let pairs = Pairs::new(&conf, &correct, Some(&pred), k).unwrap();
            for binning in [Binning::Even, Binning::Adaptive] {
                for cc in [false, true] {
                    for threshold in [0.0, 0.5] {
                        let g = Grouping { binning, max_prob: true, class_conditional: cc, threshold };
                        for norm in [Norm::L1, Norm::L2, Norm::Max] {
                            let spec = GceSpec { grouping: g, norm, num_bins: 10 };
                            let a = crate::kernels::gce(&x, &spec, &Checks::ALL).unwrap();
                            let b = gce(&pairs, &spec).unwrap();
                            assert!((a - b).abs() <= 1e-12, "{n} {g:?} {norm:?}: {a} vs {b}");
                            let ev = evaluate(&pairs, &[(g, norm)], &[10]).unwrap();
                            assert!((ev[0] - b).abs() <= 1e-12);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_bad_pairs_naming_the_first() {
        let conf = vec![0.5f64; 200_000];
        let mut correct = vec![1u8; 200_000];
        correct[150_000] = 2;
        let p = Pairs::new(&conf, &correct, None, 1).unwrap();
        let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
        assert_eq!(bin_stats(&p, &g, 10).unwrap_err(), KernelError::BadCorrect { index: 150_000, value: 2 });
        let mut conf2 = conf.clone();
        conf2[160_000] = f64::NAN;
        conf2[170_000] = 1.5;
        let p = Pairs::new(&conf2, &correct, None, 1).unwrap();
        assert_eq!(bin_stats(&p, &g, 10).unwrap_err(), KernelError::BadCorrect { index: 150_000, value: 2 });
        correct[150_000] = 0;
        let p = Pairs::new(&conf2, &correct, None, 1).unwrap();
        let e = bin_stats(&p, &Grouping { binning: Binning::Adaptive, ..g }, 10).unwrap_err();
        assert!(matches!(e, KernelError::BadConfidence { index: 160_000, .. }));
        let pred = vec![3i64; 200_000];
        let p = Pairs::new(&conf, &correct, Some(&pred), 3).unwrap();
        let gc = Grouping { class_conditional: true, ..g };
        assert_eq!(bin_stats(&p, &gc, 10).unwrap_err(), KernelError::BadPredicted { index: 0, value: 3, num_classes: 3 });
        assert!(matches!(bin_stats(&p, &Grouping { max_prob: false, ..g }, 10), Err(KernelError::Parameter(_))));
        assert!(matches!(Pairs::new(&conf[..3], &correct[..2], None, 1), Err(KernelError::Shape(_))));
    }

    #[test]
    fn pair_cells_avx2_twin_is_the_portable_one_bitwise() {
        #[cfg(target_arch = "x86_64")]
        if crate::kernels::simd::avx2() {
            let (conf, pred, labels) = data(BLOCK + 3, 7);
            let mut correct: Vec<u8> = pred.iter().zip(&labels).map(|(p, l)| (p == l) as u8).collect();
            let conf32: Vec<f32> = conf.iter().map(|&v| v as f32).collect();
            fn both<T: Score>(x: &Pairs<'_, T>, g: &Grouping, b: usize, bad_at: Option<usize>) {
                let e = EvenEdges::new(b);
                let drop = (g.groups(x.k) * b) as u32;
                for block in [0..x.n.min(BLOCK), 3..x.n.min(BLOCK + 3), 0..5, 2..3] {
                    let new = || Box::new(Buffers { scores: [0.0; BLOCK], cells: [0; BLOCK], incs: [0; BLOCK] });
                    let (mut a, mut p) = (new(), new());
                    // SAFETY: AVX2 was detected by the caller; the block lies in the input.
                    let (done, ok_a) = unsafe { x86::cells_of(x, g, &e, drop, block.clone(), &mut a) };
                    let ok_a = ok_a & cells_of_portable(x, g, &e, drop, block.clone(), done, &mut a);
                    let ok_p = cells_of_portable(x, g, &e, drop, block.clone(), 0, &mut p);
                    assert_eq!(ok_a, ok_p, "{g:?} {block:?}");
                    let valid = bad_at.is_none_or(|i| !block.contains(&i));
                    assert_eq!(ok_p, valid, "{g:?} {block:?}");
                    if valid {
                        let n = block.len();
                        let bits = |v: &[f64]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&a.scores[..n]), bits(&p.scores[..n]), "{g:?} {block:?}");
                        assert_eq!(a.cells[..n], p.cells[..n], "{g:?} {block:?}");
                        assert_eq!(a.incs[..n], p.incs[..n], "{g:?} {block:?}");
                    }
                }
            }
            let mut conf_bad = conf.clone();
            conf_bad[4] = f64::NAN;
            let conf_bad32: Vec<f32> = conf_bad.iter().map(|&v| v as f32).collect();
            let mut pred_bad = pred.clone();
            pred_bad[2] = 7;
            for cc in [false, true] {
                for threshold in [0.0, 0.5] {
                    let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: cc, threshold };
                    for b in [1, 10, 15] {
                        both(&Pairs::new(&conf, &correct, Some(&pred), 7).unwrap(), &g, b, None);
                        both(&Pairs::new(&conf32, &correct, Some(&pred), 7).unwrap(), &g, b, None);
                        if !cc {
                            both(&Pairs::new(&conf, &correct, None, 7).unwrap(), &g, b, None);
                        }
                        both(&Pairs::new(&conf_bad, &correct, Some(&pred), 7).unwrap(), &g, b, Some(4));
                        both(&Pairs::new(&conf_bad32, &correct, Some(&pred), 7).unwrap(), &g, b, Some(4));
                        both(&Pairs::new(&conf, &correct, Some(&pred_bad), 7).unwrap(), &g, b, Some(2));
                    }
                }
            }
            correct[3] = 2;
            let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
            both(&Pairs::new(&conf, &correct, None, 7).unwrap(), &g, 15, Some(3));
        }
    }

    #[test]
    fn fused_pair_tables_avx2_twin_is_the_portable_one_bitwise() {
        #[cfg(target_arch = "x86_64")]
        if crate::kernels::simd::avx2() {
            let (conf, pred, labels) = data(3 * BLOCK + 3, 7);
            let correct: Vec<u8> = pred.iter().zip(&labels).map(|(p, l)| (p == l) as u8).collect();
            let conf32: Vec<f32> = conf.iter().map(|&v| v as f32).collect();
            fn both<T: Score>(x: &Pairs<'_, T>, g: &Grouping, b: usize, bad_at: Option<usize>) {
                let e = EvenEdges::new(b);
                let cells = g.groups(x.k) * e.num_bins();
                for block in [0..x.n.min(BLOCK), 3..x.n.min(BLOCK + 3), 0..5, 2..3, 0..x.n] {
                    let (mut a, mut p) = (PairTables::new(cells), PairTables::new(cells));
                    // SAFETY: AVX2 was detected by the caller; the block lies in the input.
                    let (done, ok_a) = unsafe { x86::push_block(x, g, &e, block.clone(), &mut a) };
                    let ok_a = ok_a & push_block_portable(x, g, &e, block.clone(), done, &mut a);
                    let ok_p = push_block_portable(x, g, &e, block.clone(), 0, &mut p);
                    assert_eq!(ok_a, ok_p, "{g:?} {block:?}");
                    assert_eq!(ok_p, bad_at.is_none_or(|i| !block.contains(&i)), "{g:?} {block:?}");
                    if ok_p {
                        let bits = |v: &[f64]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&a.data), bits(&p.data), "{g:?} {block:?}");
                    }
                }
            }
            let mut conf_bad = conf.clone();
            conf_bad[4] = f64::NAN;
            let mut pred_bad = pred.clone();
            pred_bad[2] = -1;
            for cc in [false, true] {
                for threshold in [0.0, 0.5] {
                    let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: cc, threshold };
                    for b in [1, 10, 15] {
                        both(&Pairs::new(&conf, &correct, Some(&pred), 7).unwrap(), &g, b, None);
                        both(&Pairs::new(&conf32, &correct, Some(&pred), 7).unwrap(), &g, b, None);
                        if !cc {
                            both(&Pairs::new(&conf, &correct, None, 7).unwrap(), &g, b, None);
                        }
                        both(&Pairs::new(&conf_bad, &correct, Some(&pred), 7).unwrap(), &g, b, Some(4));
                        both(&Pairs::new(&conf, &correct, Some(&pred_bad), 7).unwrap(), &g, b, Some(2));
                    }
                }
            }
        }
    }
}
