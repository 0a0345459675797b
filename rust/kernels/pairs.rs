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

    /// The error of pair `i`, or None if it passes every check (read again: another thread
    /// may have changed it since a pass saw it fail).
    fn error(&self, i: usize) -> Option<KernelError> {
        let s = self.conf[i].to_f64();
        if !(-RANGE_TOL..=1.0 + RANGE_TOL).contains(&s) {
            return Some(KernelError::BadConfidence { index: i, value: s });
        }
        let c = self.correct[i];
        if c > 1 {
            return Some(KernelError::BadCorrect { index: i, value: c });
        }
        let p = self.pred?[i];
        class_out_of_range(p, self.k).then_some(KernelError::BadPredicted { index: i, value: p, num_classes: self.k })
    }

    /// The first failing pair of `rows`, as an error; [`KernelError::InputChanged`] if a pass
    /// saw one fail but none fails any more (another thread wrote to the input meanwhile).
    fn first_error(&self, rows: Range<usize>) -> KernelError {
        rows.into_iter().find_map(|i| self.error(i)).unwrap_or(KernelError::InputChanged)
    }

    /// Validates every pair (in parallel chunks); the error names the lowest failing index.
    pub fn validate(&self) -> Result<(), KernelError> {
        let chunks = row_chunks_split(self.n, 1, CHUNK, CHUNK);
        let bad: Vec<bool> = chunks.par_iter().map(|r| !chunk_ok(self, r.clone())).collect();
        match bad.iter().position(|&b| b) {
            Some(c) => Err(self.first_error(chunks[c].clone())),
            None => Ok(()),
        }
    }
}

/// The bound a predicted class must stay below: `k`, capped at `i64::MAX` so that a negative id
/// (cast to u64, at least 2^63) is never below it, and so that the vector checks, which compare
/// as i64, use the same bound.
#[inline(always)]
fn class_limit(k: usize) -> i64 {
    k.min(i64::MAX as usize) as i64
}

/// Whether a predicted class is outside `[0, k)`: the one check of a class id, branch-free.
#[inline(always)]
fn class_out_of_range(v: i64, k: usize) -> bool {
    (v as u64) >= class_limit(k) as u64
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
                bad |= class_out_of_range(v, x.k);
            }
        }
        !bad
    }
}

crate::kernels::simd::multiversion! {
    /// Whether every predicted class of `rows` is in [0, k) (branch-free, vectorisable).
    fn preds_ok<T: Score>(x: &Pairs<'_, T>, rows: Range<usize>) -> bool {
        let p = x.pred.map_or(&[][..], |p| &p[rows]);
        !p.iter().fold(false, |bad, &v| bad | class_out_of_range(v, x.k))
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
        return Err(x.first_error(0..x.n));
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
    if !g.class_conditional && pooled_fits(e, g.threshold) {
        // Pooled groupings ignore the predicted classes but check them: the same tables (and
        // bitwise the same values) with or without them.
        if !preds_ok(x, rows.clone()) {
            return Err(());
        }
        return pooled_chunk(&Pairs { pred: None, ..*x }, g.threshold, e, rows, push_pooled);
    }
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

/// Adds `v` to `sum[i]` with Neumaier compensation into `comp[i]`.
#[inline(always)]
fn add_compensated(sum: &mut [f64], comp: &mut [f64], i: usize, v: f64) {
    let t = sum[i];
    let s = t + v;
    comp[i] += if t.abs() >= v.abs() { (t - s) + v } else { (v - s) + t };
    sum[i] = s;
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
    /// False if a score sum is NaN (a NaN confidence was pushed).
    #[allow(clippy::needless_range_loop)] // cell indexes the table and four arrays
    pub fn flush(&mut self, st: &mut BinStats, comp: &mut [f64]) -> bool {
        let stride = self.cells + 1;
        let mut finite = true;
        for copy in 0..Self::COPIES {
            for cell in 0..self.cells {
                let i = (copy * stride + cell) * 2;
                let (k, score) = (self.data[i], self.data[i + 1]);
                finite &= !score.is_nan();
                if k == 0.0 {
                    continue;
                }
                let correct = (k / Self::HIGH).floor();
                st.count[cell] += k - correct * Self::HIGH;
                st.sum_outcome[cell] += correct;
                add_compensated(&mut st.sum_score, comp, cell, score);
                self.data[i] = 0.0;
                self.data[i + 1] = 0.0;
            }
            let d = (copy * stride + self.cells) * 2;
            finite &= !self.data[d + 1].is_nan();
            self.data[d] = 0.0;
            self.data[d + 1] = 0.0;
        }
        self.pending = 0;
        finite
    }
}

/// The tables of the pooled path: [`PooledTables::COPIES`] interleaved copies (pair j of a
/// block to copy j % 8: calibrated data puts most pairs in one bin, and each copy's chain of
/// read-add-write of one slot then advances only every 8th pair). A copy holds two slots per
/// bin, for incorrect and correct pairs, after two slots that drop what is pushed to them:
/// pair (bin b, outcome c) goes to slot `2 * (b + 1) + c`, a dropped pair to slot 0 or 1. A
/// slot is two f64s, the count and the score sum of its pairs of the run, so one 128-bit add
/// of `[1, s]` updates it. Runs are folded into a [`BinStats`] in a fixed order (copies in
/// order, score sums with Neumaier compensation), so long sums stay accurate and the result
/// does not depend on the number of threads.
pub struct PooledTables {
    /// Real bins (B + 1).
    bins: usize,
    data: Vec<f64>,
    pending: usize,
}

impl PooledTables {
    pub const COPIES: usize = 8;
    /// Pairs pushed at a time (a multiple of 8 dividing [`PairTables::RUN`]: the AVX2 twin's
    /// pipeline fills and drains once per span).
    const SPAN: usize = 4096;

    pub fn new(bins: usize) -> Self {
        PooledTables { bins, data: vec![0.0; Self::COPIES * Self::stride_of(bins)], pending: 0 }
    }

    /// f64s per copy: two slots (of two f64s) per bin and for the dropped pairs.
    const fn stride_of(bins: usize) -> usize {
        (bins + 1) * 4
    }

    /// Folds every copy into `st` (compensation terms into `comp`) and clears the copies.
    /// False if a score sum is NaN (a NaN confidence was pushed, to whichever slot).
    pub fn flush(&mut self, st: &mut BinStats, comp: &mut [f64]) -> bool {
        let stride = Self::stride_of(self.bins);
        let mut finite = true;
        for copy in self.data.chunks_exact_mut(stride) {
            finite &= copy.iter().skip(1).step_by(2).all(|v| !v.is_nan());
            for (b, slots) in copy[4..].chunks_exact(4).enumerate() {
                let (k0, s0, k1, s1) = (slots[0], slots[1], slots[2], slots[3]);
                if k0 + k1 == 0.0 {
                    continue;
                }
                st.count[b] += k0 + k1;
                st.sum_outcome[b] += k1;
                add_compensated(&mut st.sum_score, comp, b, s0);
                add_compensated(&mut st.sum_score, comp, b, s1);
            }
            copy.fill(0.0);
        }
        self.pending = 0;
        finite
    }
}

/// Largest bin count of the pooled path: its bin guess (see [`x86::push_pooled`]) needs
/// `B * RANGE_TOL < 1/2` and `(B + 1) / B > 1 + RANGE_TOL`.
const POOLED_MAX_BINS: usize = 4096;

/// Whether the pooled path takes `e` and `threshold` (a negative threshold keeps confidences
/// of 0 and below, which the pooled path's bin -1 drops).
fn pooled_fits(e: &EvenEdges, threshold: f64) -> bool {
    let b = e.b as f64;
    e.b <= POOLED_MAX_BINS && b * RANGE_TOL < 0.45 && (b + 1.0) * (1.0 / b) > 1.0 + RANGE_TOL && threshold >= 0.0
}

/// [`even_chunk`] of pooled groupings (predicted classes, if any, checked apart): one pass per
/// span that validates,
/// bins and adds each pair into [`PooledTables`] with `push` ([`push_pooled`]; the tests also
/// pass its portable twin).
fn pooled_chunk<T: Score>(
    x: &Pairs<'_, T>,
    threshold: f64,
    e: &EvenEdges,
    rows: Range<usize>,
    push: impl Fn(&Pairs<'_, T>, f64, &EvenEdges, Range<usize>, &mut PooledTables) -> bool,
) -> Result<BinStats, ()> {
    let mut st = BinStats::zeros(1, e.num_bins());
    let mut comp = vec![0.0; st.count.len()];
    let mut t = PooledTables::new(st.count.len());
    let mut ok = true;
    for start in rows.clone().step_by(PooledTables::SPAN) {
        let block = start..(start + PooledTables::SPAN).min(rows.end);
        t.pending += block.len();
        ok &= push(x, threshold, e, block, &mut t);
        if t.pending >= PairTables::RUN {
            ok &= t.flush(&mut st, &mut comp);
        }
    }
    ok &= t.flush(&mut st, &mut comp);
    if !ok {
        return Err(());
    }
    st.apply_compensation(&comp);
    Ok(st)
}

/// Validates, bins and adds the pooled pairs of `block` into `t` (pair j of the block into
/// copy j % 8, slot 2 * (bin + 1) + correct, or 0 or 1 when dropped); false if one fails a
/// check, except that a NaN confidence may instead show as a NaN score sum in
/// [`PooledTables::flush`]. The AVX2 twin [`x86::push_pooled`] takes eight pairs at a time,
/// the rest (or, without AVX2, all) [`push_pooled_portable`]: on valid pairs both
/// leave bitwise the same tables.
fn push_pooled<T: Score>(x: &Pairs<'_, T>, threshold: f64, e: &EvenEdges, block: Range<usize>, t: &mut PooledTables) -> bool {
    use crate::kernels::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::simd::avx2() {
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
fn push_pooled_portable<T: Score>(x: &Pairs<'_, T>, threshold: f64, e: &EvenEdges, block: Range<usize>, from: usize, t: &mut PooledTables) -> bool {
    let (lo, hi) = (-RANGE_TOL, 1.0 + RANGE_TOL);
    let stride = PooledTables::stride_of(t.bins);
    let mut bad = false;
    for j in from..block.len() {
        let i = block.start + j;
        let s = x.conf[i].to_f64();
        let c = x.correct[i];
        bad |= !(s >= lo && s <= hi) | (c > 1);
        let cell = if s > threshold { e.bin(s) + 1 } else { 0 };
        let at = (j % PooledTables::COPIES) * stride + (2 * cell + (c & 1) as usize) * 2;
        t.data[at] += 1.0;
        t.data[at + 1] += s;
    }
    !bad
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
            ok &= t.flush(&mut st, &mut comp);
        }
    }
    ok &= t.flush(&mut st, &mut comp);
    if !ok {
        return Err(());
    }
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
    use super::{class_limit, Buffers, Pairs};
    use crate::kernels::edges::EvenEdges;
    use crate::kernels::validate::RANGE_TOL;
    use crate::kernels::{Grouping, Score};
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// What [`cells_of`] and [`push_block`] do to every four pairs, and the checks they gather
    /// on the way (only gathered: a failing chunk is refused as a whole).
    struct Four {
        lo: __m256d,
        hi: __m256d,
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
                    lo: _mm256_set1_pd(-RANGE_TOL),
                    hi: _mm256_set1_pd(1.0 + RANGE_TOL),
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
                // !(s >= lo) | !(s <= hi): true for NaN.
                self.bad = _mm256_or_pd(self.bad, _mm256_or_pd(_mm256_cmp_pd(s, self.lo, _CMP_NGE_UQ), _mm256_cmp_pd(s, self.hi, _CMP_NLE_UQ)));
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
            let (one, high) = (_mm256_set1_pd(1.0), _mm256_set1_pd(super::PairTables::HIGH));
            let stride = t.cells + 1;
            let table = t.data.as_mut_ptr();
            let (t0, t1, t2, t3) = (table, table.add(stride * 2), table.add(stride * 4), table.add(stride * 6));
            let done = n / 4 * 4;
            for j in (0..done).step_by(4) {
                let (s, cells, c4) = four.step(x, g, e, block.start + j);
                let cells = _mm_min_epu32(cells, drop);
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
            (done, four.ok())
        }
    }

    /// Rounds to an integer when added (1.5 * 2^52: sums in [2^52, 2^53) are integers, and the
    /// low 32 bits of the sum's pattern are the integer added, as two's complement).
    const MAGIC: f64 = 6755399441055744.0;

    /// Iterations (of 8 pairs) between computing a pair's slot and adding the pair to it.
    const SKEW: usize = 4;
    /// Iterations whose slots the ring holds (a power of two above [`SKEW`]).
    const RING: usize = 16;

    /// [`super::push_pooled`] eight pairs at a time; returns (pairs done, no range or outcome
    /// violation seen). A NaN confidence escapes the min/max range check, but it is added to
    /// some slot's score sum, which [`super::PooledTables::flush`] then finds NaN.
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
    /// The slots of iteration i are stored in a small ring and used [`SKEW`] iterations later:
    /// the table updates then have their addresses at once, where otherwise each waits in the
    /// scheduler for its slot's chain of arithmetic, and the loop ran 1.6 times slower.
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
        // 8 * stride * 8 bytes, inside `t.data`.
        unsafe {
            let n = block.len();
            let stride = super::PooledTables::stride_of(t.bins);
            assert!(block.end <= x.n && t.bins == b + 1 && b <= super::POOLED_MAX_BINS && t.data.len() == super::PooledTables::COPIES * stride);
            let conf = x.conf.as_ptr().add(block.start);
            let correct = x.correct.as_ptr().add(block.start);
            let (lo, hi) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0 + RANGE_TOL));
            let bf = _mm256_set1_pd(b as f64);
            let step = _mm256_set1_pd(1.0 / b as f64);
            let one = _mm256_set1_pd(1.0);
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
                        let (a, z) = (_mm256_unpacklo_pd(one, s), _mm256_unpackhi_pd(one, s));
                        for (lane, v) in [(0, _mm256_castpd256_pd128(a)), (1, _mm256_castpd256_pd128(z)), (2, _mm256_extractf128_pd(a, 1)), (3, _mm256_extractf128_pd(z, 1))] {
                            let q = table.add(*offs.add(8 * h + 2 * lane) as usize) as *mut f64;
                            _mm_storeu_pd(q, _mm_add_pd(_mm_loadu_pd(q), v));
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
            let range = _mm256_or_pd(_mm256_cmp_pd(mn, lo, _CMP_NGE_UQ), _mm256_cmp_pd(mx, hi, _CMP_NLE_UQ));
            let ok = _mm256_movemask_pd(range) == 0 && bits & 0xFEFE_FEFE_FEFE_FEFE == 0;
            (8 * iters, ok)
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
    BinStats::from_groups(per_group, b)
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
            // Without predicted classes the pooled groupings take the pooled path.
            let pooled = Pairs::new(&conf, &correct, None, k).unwrap();
            for binning in [Binning::Even, Binning::Adaptive] {
                for cc in [false, true] {
                    for threshold in [0.0, 0.5] {
                        let g = Grouping { binning, max_prob: true, class_conditional: cc, threshold };
                        for (norm, num_bins) in [(Norm::L1, 10), (Norm::L2, 10), (Norm::Max, 10), (Norm::L1, 15), (Norm::L1, 49)] {
                            let spec = GceSpec { grouping: g, norm, num_bins };
                            let a = crate::kernels::gce(&x, &spec, &Checks::ALL).unwrap();
                            let b = gce(&pairs, &spec).unwrap();
                            assert!((a - b).abs() <= 1e-12, "{n} {g:?} {norm:?}: {a} vs {b}");
                            let ev = evaluate(&pairs, &[(g, norm)], &[num_bins]).unwrap();
                            assert!((ev[0] - b).abs() <= 1e-12);
                            if !cc {
                                let c = gce(&pooled, &spec).unwrap();
                                assert!((a - c).abs() <= 1e-12, "pooled {n} {g:?} {norm:?}: {a} vs {c}");
                                // Predicted classes change nothing in a pooled grouping.
                                assert_eq!(c.to_bits(), b.to_bits(), "pooled {n} {g:?} {norm:?}");
                                let st = bin_stats(&pooled, &g, num_bins).unwrap();
                                let sm = crate::kernels::bin_stats(&x, &g, num_bins, &Checks::ALL).unwrap();
                                assert_eq!(st.count, sm.count);
                                assert_eq!(st.sum_outcome, sm.sum_outcome);
                                for (u, v) in st.sum_score.iter().zip(&sm.sum_score) {
                                    assert!((u - v).abs() <= 1e-12 * v.abs().max(1.0), "{u} vs {v}");
                                }
                            }
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
        // Pooled groupings check the predicted classes too.
        assert_eq!(bin_stats(&p, &g, 10).unwrap_err(), KernelError::BadPredicted { index: 0, value: 3, num_classes: 3 });
        let mut pred2 = vec![0i64; 200_000];
        pred2[180_000] = -1;
        let p2 = Pairs::new(&conf, &correct, Some(&pred2), 3).unwrap();
        assert_eq!(bin_stats(&p2, &g, 10).unwrap_err(), KernelError::BadPredicted { index: 180_000, value: -1, num_classes: 3 });
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

    /// Confidences at and around every even edge of `b` bins, the exact ends and the tolerance
    /// band, then `n` more spread over [0, 1] (ordered so that runs of one bin occur too).
    fn edge_cases(b: usize, n: usize) -> Vec<f64> {
        let step = 1.0 / b as f64;
        let mut v = vec![0.0, -0.0, 1.0, 1.0 + RANGE_TOL, -RANGE_TOL, 1e-300, f64::MIN_POSITIVE, 5e-324, 0.5, 1.0 - f64::EPSILON / 2.0];
        for j in 0..=b + 1 {
            let u = if j == b { 1.0 } else { j as f64 * step };
            for d in -3i64..=3 {
                let w = f64::from_bits((u.to_bits() as i64 + d).max(0) as u64);
                if (-RANGE_TOL..=1.0 + RANGE_TOL).contains(&w) {
                    v.push(w);
                }
            }
        }
        let mut state = 99u64;
        for i in 0..n {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (state >> 11) as f64 / (1u64 << 53) as f64;
            v.push(if i % 300 < 40 { 0.97 } else { r });
        }
        v
    }

    /// The pooled path's statistics of `x` for `b` bins over one chunk, bitwise, through the
    /// dispatcher (the AVX2 twin on an AVX2 CPU) or through the portable function alone.
    fn pooled_bits<T: Score>(x: &Pairs<'_, T>, threshold: f64, b: usize, portable: bool) -> Option<Vec<u64>> {
        let e = EvenEdges::new(b);
        let st = if portable {
            pooled_chunk(x, threshold, &e, 0..x.n, |x, t, e, r, tab| push_pooled_portable(x, t, e, r, 0, tab))
        } else {
            pooled_chunk(x, threshold, &e, 0..x.n, push_pooled)
        }
        .ok()?;
        Some(st.count.iter().chain(&st.sum_score).chain(&st.sum_outcome).map(|v| v.to_bits()).collect())
    }

    #[test]
    fn pooled_path_avx2_twin_is_the_portable_one_bitwise() {
        for b in [1, 2, 10, 15, 49, 98, 100, 1000, POOLED_MAX_BINS] {
            assert!(pooled_fits(&EvenEdges::new(b), 0.0));
            for n in [0, 5, 3 * BLOCK + 5, 40_000] {
                let conf = edge_cases(b, n);
                let correct: Vec<u8> = (0..conf.len()).map(|i| ((i * 7) % 3 == 0) as u8).collect();
                // (f32 rounding may push the tolerance ends outside it: those become 0.5.)
                let conf32: Vec<f32> = conf.iter().map(|&v| if (-RANGE_TOL..=1.0 + RANGE_TOL).contains(&(v as f32 as f64)) { v as f32 } else { 0.5 }).collect();
                for threshold in [0.0, 0.3, 1.0 / b as f64, 0.97] {
                    for start in [0, 3] {
                        let (c, o) = (&conf[start..], &correct[start..]);
                        let x = Pairs::new(c, o, None, 1).unwrap();
                        let p = pooled_bits(&x, threshold, b, true).expect("valid input");
                        assert_eq!(pooled_bits(&x, threshold, b, false).unwrap(), p, "b {b} n {n} t {threshold}");
                        // The bins are the edges' (the portable path uses EvenEdges::bin).
                        let st = pooled_chunk(&x, threshold, &EvenEdges::new(b), 0..x.n, push_pooled).unwrap();
                        let mut want = vec![0.0; b + 1];
                        for &s in c.iter().filter(|&&s| s > threshold) {
                            want[EvenEdges::new(b).bin(s)] += 1.0;
                        }
                        assert_eq!(st.count, want, "b {b} n {n} t {threshold}");
                        let x32 = Pairs::new(&conf32[start..], o, None, 1).unwrap();
                        let p32 = pooled_bits(&x32, threshold, b, true).expect("valid input");
                        assert_eq!(pooled_bits(&x32, threshold, b, false).unwrap(), p32);
                    }
                }
            }
        }
    }

    #[test]
    fn bin_counts_beyond_the_pooled_path_take_the_grouped_one() {
        for b in [POOLED_MAX_BINS + 1, 20_000] {
            assert!(!pooled_fits(&EvenEdges::new(b), 0.0));
            let conf = edge_cases(b, 1000);
            let correct = vec![1u8; conf.len()];
            let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
            let st = bin_stats(&Pairs::new(&conf, &correct, None, 1).unwrap(), &g, b).unwrap();
            let mut want = vec![0.0; b + 1];
            for &s in conf.iter().filter(|&&s| s > 0.0) {
                want[EvenEdges::new(b).bin(s)] += 1.0;
            }
            assert_eq!(st.count, want);
        }
        assert!(!pooled_fits(&EvenEdges::new(15), -0.1));
    }

    #[test]
    fn pooled_path_refuses_every_bad_pair_at_both_levels() {
        let conf = edge_cases(15, 2 * BLOCK);
        let correct = vec![1u8; conf.len()];
        for at in [0, 7, 8, 300, conf.len() - 1] {
            for bad in [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0 + 2.0 * RANGE_TOL, -2.0 * RANGE_TOL, 7.0, -1e300] {
                let mut c = conf.clone();
                c[at] = bad;
                let x = Pairs::new(&c, &correct, None, 1).unwrap();
                for threshold in [0.0, 0.5] {
                    for portable in [true, false] {
                        assert!(pooled_bits(&x, threshold, 15, portable).is_none(), "{bad} at {at}");
                    }
                }
                let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
                let x = Pairs::new(&c32, &correct, None, 1).unwrap();
                assert!(pooled_bits(&x, 0.0, 15, false).is_none(), "f32 {bad} at {at}");
            }
            for bad in [2u8, 3, 255] {
                let mut o = correct.clone();
                o[at] = bad;
                let x = Pairs::new(&conf, &o, None, 1).unwrap();
                for portable in [true, false] {
                    assert!(pooled_bits(&x, 0.0, 15, portable).is_none(), "correct {bad} at {at}");
                }
            }
        }
        // Through the public entry: the first bad pair is named.
        let mut c = vec![0.5f64; 300_000];
        c[200_001] = f64::NAN;
        c[250_000] = 2.0;
        let o = vec![0u8; c.len()];
        let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
        let e = bin_stats(&Pairs::new(&c, &o, None, 1).unwrap(), &g, 15).unwrap_err();
        assert!(matches!(e, KernelError::BadConfidence { index: 200_001, .. }), "{e:?}");
    }

    #[test]
    fn pooled_path_is_the_same_for_any_number_of_threads() {
        let conf = edge_cases(15, 300_000);
        let correct: Vec<u8> = (0..conf.len()).map(|i| (i % 3 == 0) as u8).collect();
        let x = Pairs::new(&conf, &correct, None, 1).unwrap();
        let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
        let run = |t: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
            let st = pool.install(|| bin_stats(&x, &g, 15).unwrap());
            st.count.iter().chain(&st.sum_score).chain(&st.sum_outcome).map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        let one = run(1);
        assert_eq!(run(2), one);
        assert_eq!(run(3), one);
    }

    #[test]
    fn a_pair_no_longer_failing_is_input_changed() {
        let conf = vec![0.5f64; 10];
        let correct = vec![1u8; 10];
        let x = Pairs::new(&conf, &correct, None, 1).unwrap();
        assert_eq!(x.first_error(0..10), KernelError::InputChanged);
    }

}
