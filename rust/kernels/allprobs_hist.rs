//! All-probabilities metrics (`max_prob = false`) by histogram selection: ACE, TACE and their
//! relatives, and, inside `evaluate`, the even-binned ones too (one pass for every bin count).
//!
//! Every bin edge, adaptive or even, is a value; only the entries near the edges need exact
//! treatment, so nothing is sorted whole:
//! 1. a histogram over a monotone bucket key of the value (the top bits of its float pattern,
//!    see [`Score::key_bits`]) holding count and score sum per bucket;
//! 2. prefix sums locate the bucket holding each wanted rank (adaptive edges, for every
//!    requested bin count at once); even edges `j/B` sit in the buckets of their own keys;
//! 3. a second pass gathers only the members of those "wanted" buckets, which are sorted
//!    (per class: scattered to their bucket's slot and each bucket sorted on its own; pooled:
//!    one radix sort) to read the exact adaptive edges;
//! 4. every other bucket lies wholly inside one bin, so bin totals come from the histogram
//!    sums; members of the wanted buckets are binned as runs of the sorted candidates (prefix
//!    sums); outcomes (1 only at the true
//!    label) are binned from the list of true-label scores.
//!
//! With a threshold that drops most entries (TACE on a many-class softmax), the kept scores are
//! first compacted into per-class lists and the matrix is never transposed.
//! Class-conditional: blocks of classes are transposed (in parallel over row chunks) so that
//! each class's column is contiguous, then classes are processed in parallel with a histogram
//! that fits in L1. Pooled: one finer histogram over row chunks, folded in chunk order.
//! Every sum runs in an order fixed by the shape, so results do not depend on the thread count.

use rayon::prelude::*;

use crate::kernels::chunks::{map_fold, row_chunks_min};
use crate::kernels::edges::{adaptive_boundaries, adaptive_positions, bin_by_edges, EvenEdges};
use crate::kernels::validate::Checks;
use crate::kernels::{BinStats, Inputs, KernelError, Score};

/// At most this many classes are transposed at once ...
const MAX_BLOCK: usize = 64;
/// ... and the transposed block holds at most this many bytes (unless one class is larger).
const BLOCK_BYTES: usize = 64 << 20;
/// Rows per transposition chunk.
const TRANSPOSE_ROWS: usize = 4096;

/// The bucket key of a group: f32 bits >> `shift`, clamped to `max` (2.0's key).
#[derive(Clone, Copy)]
struct Keys {
    shift: u32,
    max: usize,
}

impl Keys {
    /// Per class: 2049 buckets (4 mantissa bits), so count + sum histograms fit in L1.
    const CLASS: Keys = Keys { shift: 19, max: 0x4000_0000 >> 19 };
    /// Pooled groups are large: 32769 buckets (8 mantissa bits) keep the gathered edge
    /// buckets small.
    const POOLED: Keys = Keys { shift: 15, max: 0x4000_0000 >> 15 };

    fn nkeys(&self) -> usize {
        self.max + 1
    }

    /// Slot that counts dropped (thresholded) entries.
    fn drop_slot(&self) -> usize {
        self.max + 1
    }

    #[inline(always)]
    fn of<T: Score>(&self, v: T) -> usize {
        (v.key_bits(self.shift) as usize).min(self.max)
    }
}

/// What to compute for one group: even bin counts (with their upper edges u_1..u_B and the
/// buckets of those edges) and adaptive bin counts.
pub struct Request {
    keys: Keys,
    even: Vec<(EvenEdges, Vec<f64>, Vec<usize>)>,
    adaptive: Vec<usize>,
}

impl Request {
    fn new(keys: Keys, even: &[usize], adaptive: &[usize]) -> Self {
        let even = even
            .iter()
            .map(|&b| {
                let e = EvenEdges::new(b);
                // Upper edges u_1..u_B (u_B = 1.0): a score's bin is how many are <= it.
                let upper = e.boundaries()[1..=b].to_vec();
                let ek = upper.iter().map(|&u| keys.of(u)).collect();
                (e, upper, ek)
            })
            .collect();
        Request { keys, even, adaptive: adaptive.to_vec() }
    }
}

/// One group's histogram over the bucket keys (the last slot counts dropped entries).
struct Hist {
    cnt: Vec<u32>,
    sum: Vec<f64>,
}

impl Hist {
    fn zeros(keys: Keys) -> Self {
        Hist { cnt: vec![0; keys.nkeys() + 1], sum: vec![0.0; keys.nkeys() + 1] }
    }

    fn count(&self, q: usize) -> u64 {
        self.cnt[q] as u64
    }

    /// Adds another histogram. Counts are u32: groups of 2^32 entries or more are refused.
    fn merge(&mut self, o: &Hist) {
        for (a, b) in self.cnt.iter_mut().zip(&o.cnt) {
            *a += b;
        }
        for (a, b) in self.sum.iter_mut().zip(&o.sum) {
            *a += b;
        }
    }
}

crate::kernels::simd::multiversion! {
    fn hist_values<T: Score>(h: &mut Hist, keys: Keys, vals: &[T], thr: f64) -> () {
        let n = keys.nkeys() + 1;
        let (cnt, sum) = (&mut h.cnt[..n], &mut h.sum[..n]);
        let drop = keys.drop_slot();
        for &v in vals {
            let s = v.to_f64();
            let key = if s > thr { keys.of(v) } else { drop };
            cnt[key] += 1;
            sum[key] += s;
        }
    }
}

crate::kernels::simd::multiversion! {
    /// Appends the kept values of `vals` whose bucket is wanted. Branch-free: each block of
    /// values is written into a small buffer whose length advances only for wanted ones
    /// (whether a value is wanted is unpredictable, so a branch would mispredict often), and
    /// only the wanted values reach `out`.
    fn gather_values<T: Score>(wanted: &[bool], keys: Keys, vals: &[T], thr: f64, out: &mut Vec<f64>) -> () {
        const BLOCK: usize = 1024;
        let wanted = &wanted[..keys.nkeys()];
        let mut buf = [0.0f64; BLOCK];
        for block in vals.chunks(BLOCK) {
            let mut len = 0usize;
            for &v in block {
                let s = v.to_f64();
                buf[len] = s;
                // len <= index within the block, so the write above stays in bounds.
                len += (s > thr && wanted[keys.of(v)]) as usize;
            }
            out.extend_from_slice(&buf[..len]);
        }
    }
}

/// Which buckets must be resolved exactly, and where their members sit among the sorted
/// candidates.
struct Selection {
    n: u64,
    wanted: Vec<bool>,
    cum_before: Vec<u64>,
    cand_offset: Vec<u64>,
}

impl Selection {
    fn new(h: &Hist, req: &Request) -> Self {
        let nk = req.keys.nkeys();
        let mut cum_before = vec![0u64; nk];
        let mut acc = 0u64;
        for q in 0..nk {
            cum_before[q] = acc;
            acc += h.count(q);
        }
        let n = acc;
        let mut wanted = vec![false; nk];
        for &b in &req.adaptive {
            for r in adaptive_positions(n as usize, b) {
                wanted[Self::bucket_of(&cum_before, r as u64)] = true;
            }
        }
        for (_, _, ek) in &req.even {
            for &q in ek {
                wanted[q] = true;
            }
        }
        let mut cand_offset = vec![0u64; nk];
        let mut off = 0u64;
        for q in 0..nk {
            cand_offset[q] = off;
            if wanted[q] {
                off += h.count(q);
            }
        }
        Selection { n, wanted, cum_before, cand_offset }
    }

    /// The bucket holding rank `r` (0-based) of the group.
    fn bucket_of(cum_before: &[u64], r: u64) -> usize {
        cum_before.partition_point(|&c| c <= r) - 1
    }

    /// Exact value of rank `r`, and its bucket.
    fn edge(&self, cand_sorted: &[f64], r: u64) -> (f64, usize) {
        let q = Self::bucket_of(&self.cum_before, r);
        let pos = self.cand_offset[q] + (r - self.cum_before[q]);
        (cand_sorted[pos as usize], q)
    }
}

/// Sorted candidates with exact-ish prefix sums (double-double: `hi + lo`), so any contiguous
/// range's sum costs O(1) and stays accurate to about one ulp of the group total. Reused from
/// group to group within a worker (fresh buffers would cost page faults each time).
#[derive(Default)]
struct Candidates {
    sorted: Vec<f64>,
    hi: Vec<f64>,
    lo: Vec<f64>,
    next: Vec<usize>,
}

impl Candidates {
    fn new(sorted: Vec<f64>) -> Self {
        let mut c = Candidates { sorted, ..Default::default() };
        c.prefix();
        c
    }

    /// Recomputes the prefix sums of `sorted`.
    fn prefix(&mut self) {
        self.hi.clear();
        self.lo.clear();
        let (mut s, mut c) = (0.0f64, 0.0f64);
        self.hi.push(0.0);
        self.lo.push(0.0);
        for &v in &self.sorted {
            let t = s + v;
            c += if s.abs() >= v.abs() { (s - t) + v } else { (v - t) + s };
            s = t;
            self.hi.push(s);
            self.lo.push(c);
        }
    }

    fn range_sum(&self, a: usize, b: usize) -> f64 {
        (self.hi[b] - self.hi[a]) + (self.lo[b] - self.lo[a])
    }
}

/// Bin totals of one group for bins given by their upper edges `edges` (values, non-decreasing;
/// a score's bin is how many edges are <= it) whose buckets are `edge_buckets`: whole
/// non-wanted buckets by key, the members of wanted ones as contiguous runs of the sorted
/// candidates.
fn fill_bins(
    h: &Hist,
    sel: &Selection,
    cand: &Candidates,
    positives: &[f64],
    edges: &[f64],
    edge_buckets: &[usize],
    nb: usize,
) -> BinStats {
    let mut st = BinStats::zeros(1, nb);
    let mut bin = 0usize;
    for q in 0..sel.wanted.len() {
        if h.cnt[q] == 0 || sel.wanted[q] {
            continue;
        }
        // Bucket q holds no edge: all its values exceed exactly the edges whose bucket is < q.
        while bin < edge_buckets.len() && edge_buckets[bin] < q {
            bin += 1;
        }
        st.count[bin] += h.cnt[q] as f64;
        st.sum_score[bin] += h.sum[q];
    }
    // Candidates in bin j are those with edges[j-1] <= s < edges[j].
    let mut start = 0usize;
    for j in 0..nb {
        let end = if j < edges.len() {
            start + cand.sorted[start..].partition_point(|&v| v < edges[j])
        } else {
            cand.sorted.len()
        };
        st.count[j] += (end - start) as f64;
        st.sum_score[j] += cand.range_sum(start, end);
        start = end;
    }
    for &s in positives {
        st.sum_outcome[bin_by_edges(edges, s)] += 1.0;
    }
    st
}

/// Per-group results: even tables (1 x (B+1)) and adaptive (boundaries, 1 x B) tables.
type GroupResult = (Vec<BinStats>, Vec<(Vec<f64>, BinStats)>);

fn finalize(h: &Hist, sel: &Selection, cand: &Candidates, pos: &[f64], req: &Request, thr: f64) -> GroupResult {
    let even = req
        .even
        .iter()
        .map(|(e, upper, ek)| fill_bins(h, sel, cand, pos, upper, ek, e.num_bins()))
        .collect();
    let adaptive = req
        .adaptive
        .iter()
        .map(|&b| {
            if sel.n == 0 {
                return (adaptive_boundaries(&[], b, thr), BinStats::zeros(1, b));
            }
            let (edges, eb): (Vec<f64>, Vec<usize>) = adaptive_positions(sel.n as usize, b)
                .into_iter()
                .map(|r| sel.edge(&cand.sorted, r as u64))
                .unzip();
            let st = fill_bins(h, sel, cand, pos, &edges, &eb, b);
            (adaptive_boundaries(&edges, b, thr), st)
        })
        .collect();
    (even, adaptive)
}

/// Sorts positive floats by their bit patterns (which order like the values): LSD radix sort
/// on 11-bit digits, skipping digits that all values share (the low mantissa bits of widened
/// f32 values, the exponent of values of one magnitude).
fn sort_values(v: &mut Vec<f64>) {
    const BITS: u32 = 11;
    const R: usize = 1 << BITS;
    const PASSES: usize = 6;
    if v.len() < 512 {
        v.sort_unstable_by_key(|s| s.to_bits());
        return;
    }
    let mut counts = vec![[0usize; R]; PASSES];
    for s in v.iter() {
        let x = s.to_bits();
        for (p, c) in counts.iter_mut().enumerate() {
            c[((x >> (p as u32 * BITS)) as usize) & (R - 1)] += 1;
        }
    }
    let mut tmp = vec![0.0f64; v.len()];
    for (p, c) in counts.iter().enumerate() {
        if c.iter().any(|&k| k == v.len()) {
            continue;
        }
        let mut off = [0usize; R];
        let mut acc = 0;
        for d in 0..R {
            off[d] = acc;
            acc += c[d];
        }
        for &s in v.iter() {
            let d = ((s.to_bits() >> (p as u32 * BITS)) as usize) & (R - 1);
            tmp[off[d]] = s;
            off[d] += 1;
        }
        std::mem::swap(v, &mut tmp);
    }
}

/// True-label scores that are kept, per class.
fn positives<T: Score>(x: &Inputs<T>, thr: f64) -> Vec<Vec<f64>> {
    let mut pos = vec![Vec::new(); x.k];
    for i in 0..x.n {
        let c = x.labels[i] as usize;
        let s = x.probs[i * x.k + c].to_f64();
        if s > thr {
            pos[c].push(s);
        }
    }
    pos
}

/// One group's computation from its values, given as contiguous segments.
fn group_from_segments<T: Score>(
    segs: &[&[T]],
    pos: &[f64],
    req: &Request,
    thr: f64,
    scratch: &mut Candidates,
) -> GroupResult {
    let mut h = Hist::zeros(req.keys);
    for s in segs {
        hist_values(&mut h, req.keys, s, thr);
    }
    let sel = Selection::new(&h, req);
    // Place each wanted value straight into its bucket's slot (the histogram gives every
    // bucket's offset), then sort each bucket on its own: small sorts in cache, and buckets
    // are in value order, so the whole array ends up sorted.
    let total = sel.cand_offset.last().copied().unwrap_or(0) as usize
        + sel.wanted.last().map_or(0, |&w| if w { h.count(sel.wanted.len() - 1) as usize } else { 0 });
    let next = &mut scratch.next;
    next.clear();
    next.extend(
        (0..=req.keys.nkeys())
            .map(|q| if q < sel.wanted.len() && sel.wanted[q] { sel.cand_offset[q] as usize } else { total }),
    );
    let cand = &mut scratch.sorted;
    cand.clear();
    cand.resize(total + 1, 0.0);
    for s in segs {
        scatter_values(&sel.wanted, req.keys, s, thr, next, cand);
    }
    cand.truncate(total);
    for q in 0..sel.wanted.len() {
        if sel.wanted[q] {
            let a = sel.cand_offset[q] as usize;
            cand[a..a + h.count(q) as usize].sort_unstable_by_key(|v| v.to_bits());
        }
    }
    scratch.prefix();
    finalize(&h, &sel, scratch, pos, req, thr)
}

crate::kernels::simd::multiversion! {
    /// Writes each kept value of a wanted bucket at its bucket's next free slot; every other
    /// value is written to the spare last slot (`next[q] == total` for those), without
    /// branching on the data.
    fn scatter_values<T: Score>(
        wanted: &[bool],
        keys: Keys,
        vals: &[T],
        thr: f64,
        next: &mut [usize],
        out: &mut [f64],
    ) -> () {
        let wanted = &wanted[..keys.nkeys()];
        let drop = keys.drop_slot();
        let next = &mut next[..=drop];
        for &v in vals {
            let s = v.to_f64();
            let q = if s > thr { keys.of(v) } else { drop };
            let w = q < wanted.len() && wanted[q.min(wanted.len() - 1)];
            let idx = next[q];
            out[idx] = s;
            next[q] = idx + w as usize;
        }
    }
}

/// Classes per transposed block, balanced over the blocks.
fn class_blocks(n: usize, k: usize, elem: usize) -> Vec<std::ops::Range<usize>> {
    let by_bytes = (BLOCK_BYTES / (n * elem).max(1)).max(1);
    let w = MAX_BLOCK.min(by_bytes).min(k);
    let nblocks = k.div_ceil(w);
    let w = k.div_ceil(nblocks);
    (0..k).step_by(w).map(|s| s..(s + w).min(k)).collect()
}

crate::kernels::simd::multiversion! {
    fn transpose_rows<T: Score>(
        x: &Inputs<T>,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        stride: usize,
        t: &mut [T],
    ) -> () {
        let w = cols.len();
        assert!(rows.len() <= stride && t.len() >= w * stride);
        let line = 64 / std::mem::size_of::<T>();
        let end = rows.end;
        for (ii, i) in rows.enumerate() {
            // The block reads a short segment of each row at a large stride, which hardware
            // prefetchers do not follow across pages: ask for the segment a few rows ahead.
            if i + PREFETCH_ROWS < end {
                let ahead = &x.probs[(i + PREFETCH_ROWS) * x.k + cols.start..(i + PREFETCH_ROWS) * x.k + cols.end];
                for c in (0..w).step_by(line) {
                    prefetch(&ahead[c]);
                }
            }
            let row = &x.probs[i * x.k + cols.start..i * x.k + cols.end];
            for (j, &v) in row.iter().enumerate() {
                // SAFETY: j < w and ii < rows.len() <= stride, so j * stride + ii < w * stride
                // <= t.len() (asserted above).
                unsafe { *t.get_unchecked_mut(j * stride + ii) = v };
            }
        }
    }
}

/// Rows ahead that [`transpose_rows`] prefetches.
const PREFETCH_ROWS: usize = 16;

#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; the address comes from a valid reference.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Column-major copies of a block of columns, one tile per chunk of rows. The buffers are
/// reused from block to block (fresh pages would cost more to fault in than to fill).
struct Tiles<T> {
    rows: Vec<std::ops::Range<usize>>,
    data: Vec<Vec<T>>,
    stride: Vec<usize>,
}

impl<T: Score> Tiles<T> {
    fn new(n: usize) -> Self {
        let rows: Vec<std::ops::Range<usize>> =
            (0..n).step_by(TRANSPOSE_ROWS).map(|s| s..(s + TRANSPOSE_ROWS).min(n)).collect();
        // Pad the column stride by one cache line so the block's columns do not all map to the
        // same cache set (power-of-two strides thrash L1 in a transpose).
        let stride = rows.iter().map(|r| r.len() + 64 / std::mem::size_of::<T>()).collect();
        Tiles { data: vec![Vec::new(); rows.len()], rows, stride }
    }

    fn fill(&mut self, x: &Inputs<T>, cols: &std::ops::Range<usize>) {
        let w = cols.len();
        self.data
            .par_iter_mut()
            .zip(self.rows.par_iter())
            .zip(self.stride.par_iter())
            .for_each(|((t, r), &stride)| {
                t.resize(w * stride, T::default());
                transpose_rows(x, r.clone(), cols.clone(), stride, t);
            });
    }

    /// Column `j` of the block, as one segment per tile.
    fn column(&self, j: usize) -> Vec<&[T]> {
        self.data
            .iter()
            .zip(&self.rows)
            .zip(&self.stride)
            .map(|((t, r), &stride)| &t[j * stride..j * stride + r.len()])
            .collect()
    }
}

/// Whether fewer than a quarter of the entries of the first rows pass the threshold (a sample
/// of the data itself, so the choice, and hence the result, is deterministic).
fn kept_fraction_is_small<T: Score>(x: &Inputs<T>, thr: f64) -> bool {
    let rows = x.n.min(2048);
    let sample = &x.probs[..rows * x.k];
    let kept = sample.iter().filter(|v| v.to_f64() > thr).count();
    kept * 4 < sample.len()
}

/// The kept scores of every class, class by class in row order: `values[offsets[c]..offsets[c+1]]`
/// holds class c's. One parallel pass over row chunks, then a stable counting sort by class.
/// Rows are validated in the same read (the first failing row, in row order, is reported).
fn compact_kept<T: Score>(x: &Inputs<T>, thr: f64, check: &Checks) -> Result<(Vec<f64>, Vec<usize>), KernelError> {
    if check.labels {
        crate::kernels::validate::labels(x)?;
    }
    let chunks = crate::kernels::chunks::row_chunks(x.n, x.k);
    let parts: Vec<(Vec<u32>, Vec<f64>, Option<usize>)> = chunks
        .par_iter()
        .map(|r| {
            let (mut cls, mut val) = (Vec::new(), Vec::new());
            let bad = compact_rows(x, r.clone(), thr, check, &mut cls, &mut val);
            (cls, val, bad)
        })
        .collect();
    if let Some(i) = parts.iter().find_map(|p| p.2) {
        return Err(crate::kernels::validate::row_error(x, i, check));
    }
    let mut offsets = vec![0usize; x.k + 1];
    for (cls, _, _) in &parts {
        for &c in cls {
            offsets[c as usize + 1] += 1;
        }
    }
    for c in 0..x.k {
        offsets[c + 1] += offsets[c];
    }
    let mut next = offsets.clone();
    let mut values = vec![0.0f64; offsets[x.k]];
    for (cls, val, _) in &parts {
        for (&c, &v) in cls.iter().zip(val) {
            values[next[c as usize]] = v;
            next[c as usize] += 1;
        }
    }
    Ok((values, offsets))
}

crate::kernels::simd::multiversion! {
    /// Appends the kept (class, score) pairs of `rows`; the first row failing a check, if any.
    fn compact_rows<T: Score>(
        x: &Inputs<T>,
        rows: std::ops::Range<usize>,
        thr: f64,
        check: &Checks,
        cls: &mut Vec<u32>,
        val: &mut Vec<f64>,
    ) -> Option<usize> {
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = crate::kernels::validate::row_sum_and_bad(row);
            if !crate::kernels::validate::row_ok(sum, bad, check) {
                return Some(i);
            }
            for (c, &v) in row.iter().enumerate() {
                let s = v.to_f64();
                if s > thr {
                    cls.push(c as u32);
                    val.push(s);
                }
            }
        }
        None
    }
}

/// Statistics of the all-probabilities grouping (`class_conditional`, `thr`) for each even bin
/// count in `even` and each adaptive bin count in `adaptive`. Inputs must already be validated.
/// Validates the input as `check` asks (fused into the compaction pass when there is one).
pub fn stats<T: Score>(
    x: &Inputs<T>,
    class_conditional: bool,
    thr: f64,
    even: &[usize],
    adaptive: &[usize],
    check: &Checks,
) -> Result<(Vec<BinStats>, Vec<BinStats>), KernelError> {
    let per_group_entries = if class_conditional { x.n } else { x.probs.len() };
    if per_group_entries >= u32::MAX as usize {
        return Err(KernelError::Shape(format!(
            "one group of {per_group_entries} scores exceeds the 2^32 limit of the histogram \
             kernels; use calibkit.dask or calibkit.Accumulator for data this large"
        )));
    }
    let compact = thr > 0.0 && kept_fraction_is_small(x, thr);
    if !compact {
        crate::kernels::validate::scan(x, check)?;
    }
    let pos = positives(x, thr);
    let per_group: Vec<GroupResult> = if compact {
        // Thresholds drop most entries of a many-class softmax: filter first, then work on
        // the compact per-class lists of kept scores (no transposition of the whole matrix).
        let (values, offsets) = compact_kept(x, thr, check)?;
        if class_conditional {
            let req = Request::new(Keys::CLASS, even, adaptive);
            (0..x.k)
                .into_par_iter()
                .map_init(Candidates::default, |scratch, c| {
                    group_from_segments(&[&values[offsets[c]..offsets[c + 1]]], &pos[c], &req, thr, scratch)
                })
                .collect()
        } else {
            let req = Request::new(Keys::POOLED, even, adaptive);
            vec![group_from_segments(&[&values[..]], &pos.concat(), &req, thr, &mut Candidates::default())]
        }
    } else if class_conditional {
        let req = Request::new(Keys::CLASS, even, adaptive);
        let mut out = Vec::with_capacity(x.k);
        if x.k == 1 {
            out.push(group_from_segments(&[x.probs], &pos[0], &req, thr, &mut Candidates::default()));
        } else {
            let mut tiles = Tiles::new(x.n);
            for cols in class_blocks(x.n, x.k, std::mem::size_of::<T>()) {
                tiles.fill(x, &cols);
                let res: Vec<GroupResult> = (0..cols.len())
                    .into_par_iter()
                    .map_init(Candidates::default, |scratch, j| {
                        group_from_segments(&tiles.column(j), &pos[cols.start + j], &req, thr, scratch)
                    })
                    .collect();
                out.extend(res);
            }
        }
        out
    } else {
        let req = Request::new(Keys::POOLED, even, adaptive);
        // Large chunks: each chunk's histogram (~400 KB) is folded into the total.
        let chunks = row_chunks_min(x.n, x.k, 1 << 21);
        let seg = |r: &std::ops::Range<usize>| &x.probs[r.start * x.k..r.end * x.k];
        let mut h = Hist::zeros(req.keys);
        map_fold(
            &chunks,
            |r| -> Result<Hist, KernelError> {
                let mut part = Hist::zeros(req.keys);
                hist_values(&mut part, req.keys, seg(&r), thr);
                Ok(part)
            },
            |part| h.merge(&part),
        )?;
        let sel = Selection::new(&h, &req);
        let mut cand: Vec<f64> = chunks
            .par_iter()
            .map(|r| {
                let mut c = Vec::new();
                gather_values(&sel.wanted, req.keys, seg(r), thr, &mut c);
                c
            })
            .collect::<Vec<_>>()
            .concat();
        sort_values(&mut cand);
        let all_pos: Vec<f64> = pos.concat();
        vec![finalize(&h, &sel, &Candidates::new(cand), &all_pos, &req, thr)]
    };
    let groups = per_group.len();
    let even_out = even
        .iter()
        .enumerate()
        .map(|(bi, &b)| {
            let e = EvenEdges::new(b);
            let nb = e.num_bins();
            let mut st = BinStats::zeros(groups, nb);
            for (gi, (ev, _)) in per_group.iter().enumerate() {
                copy_group(&mut st, gi, &ev[bi]);
            }
            let bounds = e.boundaries();
            st.edges = (0..groups).flat_map(|_| bounds.iter().copied()).collect();
            st
        })
        .collect();
    let adaptive_out = adaptive
        .iter()
        .enumerate()
        .map(|(bi, &b)| {
            let mut st = BinStats::zeros(groups, b);
            for (gi, (_, ad)) in per_group.iter().enumerate() {
                let (bounds, one) = &ad[bi];
                copy_group(&mut st, gi, one);
                st.edges.extend_from_slice(bounds);
            }
            st
        })
        .collect();
    Ok((even_out, adaptive_out))
}

fn copy_group(st: &mut BinStats, g: usize, one: &BinStats) {
    let r = g * st.nb..(g + 1) * st.nb;
    st.count[r.clone()].copy_from_slice(&one.count);
    st.sum_score[r.clone()].copy_from_slice(&one.sum_score);
    st.sum_outcome[r].copy_from_slice(&one.sum_outcome);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_sort_orders_positive_floats() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut v: Vec<f64> = (0..5000)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let x = (s >> 11) as f64 / (1u64 << 53) as f64;
                if i % 3 == 0 { (x as f32) as f64 } else { x * 1e-9 }
            })
            .collect();
        let mut want = v.clone();
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
        sort_values(&mut v);
        assert_eq!(v, want);
    }
}
