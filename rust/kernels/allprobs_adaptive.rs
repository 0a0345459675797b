//! All-probabilities metrics with adaptive (equal-mass) bins: ACE, TACE and their relatives.
//!
//! Only the B-1 order statistics of each group matter, so nothing is sorted whole:
//! 1. a histogram over a monotone bucket key of the value (the top bits of its float pattern,
//!    see `Score::key`) holding count and score sum per bucket;
//! 2. prefix sums over the histogram locate the bucket holding each wanted rank (for every
//!    requested bin count at once);
//! 3. a second pass gathers only the members of those buckets, sorted to read the exact edges;
//! 4. every other bucket lies wholly inside one bin, so bin totals come from the histogram
//!    sums; members of the edge buckets are binned one by one; outcomes (1 only at the true
//!    label) are binned from the list of true-label scores.
//! Class-conditional: blocks of classes are transposed (in parallel over row chunks) so that
//! each class's column is contiguous, then classes are processed in parallel with their
//! histogram in cache. Pooled: one histogram over row chunks, merged in chunk order.
//! Every sum runs in an order fixed by the shape, so results do not depend on the thread count.

use rayon::prelude::*;

use crate::kernels::chunks::row_chunks;
use crate::kernels::edges::{adaptive_boundaries, adaptive_positions, bin_by_edges};
use crate::kernels::score::MAX_KEY;
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

/// Number of bucket keys, plus one slot for dropped (thresholded) entries.
const NKEYS: usize = MAX_KEY as usize + 1;
const DROP: usize = NKEYS;
/// At most this many classes are transposed at once ...
const MAX_BLOCK: usize = 64;
/// ... and the transposed block holds at most this many bytes (unless one class is larger).
const BLOCK_BYTES: usize = 64 << 20;
/// Rows per transposition chunk.
const TRANSPOSE_ROWS: usize = 4096;

/// One group's histogram over the bucket keys (slot `DROP` counts dropped entries).
#[derive(Clone)]
struct Hist {
    cnt: Vec<u32>,
    sum: Vec<f64>,
}

impl Hist {
    fn zeros() -> Self {
        Hist { cnt: vec![0; NKEYS + 1], sum: vec![0.0; NKEYS + 1] }
    }

    fn count(&self, q: usize) -> u64 {
        self.cnt[q] as u64
    }

    fn add_values<T: Score>(&mut self, vals: &[T], thr: f64) {
        hist_values(&mut self.cnt, &mut self.sum, vals, thr);
    }

    /// Adds another histogram. Counts are u32: a chunk holds far fewer than 2^32 entries, and
    /// a pooled group of 2^32 or more entries is refused up front.
    fn merge(&mut self, o: &Hist) {
        for q in 0..=NKEYS {
            self.cnt[q] += o.cnt[q];
            self.sum[q] += o.sum[q];
        }
    }
}

/// Which buckets hold wanted ranks, and where their members sit among the sorted candidates.
struct Selection {
    n: u64,
    wanted: Vec<bool>,
    cum_before: Vec<u64>,
    cand_offset: Vec<u64>,
}

impl Selection {
    fn new(h: &Hist, bins: &[usize]) -> Self {
        let mut cum_before = vec![0u64; NKEYS];
        let mut acc = 0u64;
        for q in 0..NKEYS {
            cum_before[q] = acc;
            acc += h.count(q);
        }
        let n = acc;
        let mut wanted = vec![false; NKEYS];
        for &b in bins {
            for r in adaptive_positions(n as usize, b) {
                wanted[Self::bucket_of(&cum_before, r as u64)] = true;
            }
        }
        let mut cand_offset = vec![0u64; NKEYS];
        let mut off = 0u64;
        for q in 0..NKEYS {
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

    /// Appends the kept values of `vals` whose bucket is wanted.
    fn gather<T: Score>(&self, vals: &[T], thr: f64, out: &mut Vec<f64>) {
        gather_values(&self.wanted, vals, thr, out);
    }
}

crate::kernels::simd::multiversion! {
    fn hist_values<T: Score>(cnt: &mut [u32], sum: &mut [f64], vals: &[T], thr: f64) -> () {
        let (cnt, sum) = (&mut cnt[..=NKEYS], &mut sum[..=NKEYS]);
        for &v in vals {
            let s = v.to_f64();
            let key = if s > thr { v.key() as usize } else { DROP };
            cnt[key] += 1;
            sum[key] += s;
        }
    }
}

crate::kernels::simd::multiversion! {
    fn gather_values<T: Score>(wanted: &[bool], vals: &[T], thr: f64, out: &mut Vec<f64>) -> () {
        let wanted = &wanted[..NKEYS];
        for &v in vals {
            let s = v.to_f64();
            if s > thr && wanted[v.key() as usize] {
                out.push(s);
            }
        }
    }
}

/// Bin statistics of one group for `b` bins, and its bin boundaries.
fn finalize(h: &Hist, sel: &Selection, cand_sorted: &[f64], positives: &[f64], b: usize, thr: f64) -> (Vec<f64>, BinStats) {
    let mut st = BinStats::zeros(1, b);
    if sel.n == 0 {
        return (adaptive_boundaries(&[], b, thr), st);
    }
    let (edges, edge_buckets): (Vec<f64>, Vec<usize>) = adaptive_positions(sel.n as usize, b)
        .into_iter()
        .map(|r| sel.edge(cand_sorted, r as u64))
        .unzip();
    // A bucket that holds no edge lies wholly in the bin numbered by the edges below it.
    let mut bin = 0usize;
    for q in 0..NKEYS {
        if h.cnt[q] == 0 || sel.wanted[q] {
            continue;
        }
        while bin < edge_buckets.len() && edge_buckets[bin] < q {
            bin += 1;
        }
        st.count[bin] += h.cnt[q] as f64;
        st.sum_score[bin] += h.sum[q];
    }
    let mut comp = vec![0.0; b];
    let mut bin = 0usize;
    for &s in cand_sorted {
        while bin < edges.len() && edges[bin] <= s {
            bin += 1;
        }
        st.push_compensated(&mut comp, 0, bin, s, 0.0);
    }
    st.apply_compensation(&comp);
    for &s in positives {
        st.sum_outcome[bin_by_edges(&edges, s)] += 1.0;
    }
    (adaptive_boundaries(&edges, b, thr), st)
}

fn sort_values(v: &mut [f64]) {
    // Kept scores are > threshold >= 0: positive floats order like their bit patterns.
    v.sort_unstable_by_key(|s| s.to_bits());
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

/// One group's full computation from its values (given as contiguous segments).
fn group_from_segments<T: Score>(segs: &[&[T]], pos: &[f64], bins: &[usize], thr: f64) -> Vec<(Vec<f64>, BinStats)> {
    let mut h = Hist::zeros();
    for s in segs {
        h.add_values(s, thr);
    }
    let sel = Selection::new(&h, bins);
    let mut cand = Vec::new();
    for s in segs {
        sel.gather(s, thr, &mut cand);
    }
    sort_values(&mut cand);
    bins.iter().map(|&b| finalize(&h, &sel, &cand, pos, b, thr)).collect()
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
        for (ii, i) in rows.enumerate() {
            let row = &x.probs[i * x.k + cols.start..i * x.k + cols.end];
            for (j, &v) in row.iter().enumerate() {
                t[j * stride + ii] = v;
            }
        }
    }
}

/// Column-major copies of the block's columns, one tile per chunk of rows.
fn transpose_block<T: Score>(x: &Inputs<T>, cols: &std::ops::Range<usize>) -> Vec<(usize, usize, Vec<T>)> {
    let w = cols.len();
    let chunks: Vec<std::ops::Range<usize>> =
        (0..x.n).step_by(TRANSPOSE_ROWS).map(|s| s..(s + TRANSPOSE_ROWS).min(x.n)).collect();
    chunks
        .par_iter()
        .map(|r| {
            let m = r.len();
            // Pad the column stride by one cache line so the block's columns do not all map
            // to the same cache set (power-of-two strides thrash L1 in a transpose).
            let stride = m + 64 / std::mem::size_of::<T>();
            let mut t = vec![T::default(); w * stride];
            transpose_rows(x, r.clone(), cols.clone(), stride, &mut t);
            (m, stride, t)
        })
        .collect()
}

/// Statistics for each bin count in `bins`. Inputs must already be validated.
pub fn stats<T: Score>(x: &Inputs<T>, g: &Grouping, bins: &[usize]) -> Result<Vec<BinStats>, KernelError> {
    let thr = g.threshold;
    let per_group_entries = if g.class_conditional { x.n } else { x.probs.len() };
    if per_group_entries >= u32::MAX as usize {
        return Err(KernelError::Shape(format!(
            "adaptive binning of one group of {per_group_entries} scores exceeds the 2^32 limit; \
             use calibkit.dask or calibkit.Accumulator for data this large"
        )));
    }
    let pos = positives(x, thr);
    let groups = g.groups(x.k);
    // Per group, per bin count: (boundaries, one-group stats).
    let per_group: Vec<Vec<(Vec<f64>, BinStats)>> = if g.class_conditional {
        if x.k == 1 {
            vec![group_from_segments(&[x.probs], &pos[0], bins, thr)]
        } else {
            let mut out = Vec::with_capacity(x.k);
            for cols in class_blocks(x.n, x.k, std::mem::size_of::<T>()) {
                let tiles = transpose_block(x, &cols);
                let w = cols.len();
                let res: Vec<_> = (0..w)
                    .into_par_iter()
                    .map(|j| {
                        let segs: Vec<&[T]> = tiles.iter().map(|(m, stride, t)| &t[j * stride..j * stride + m]).collect();
                        group_from_segments(&segs, &pos[cols.start + j], bins, thr)
                    })
                    .collect();
                out.extend(res);
            }
            out
        }
    } else {
        let chunks = row_chunks(x.n, x.k);
        let seg = |r: &std::ops::Range<usize>| &x.probs[r.start * x.k..r.end * x.k];
        let parts: Vec<Hist> = chunks
            .par_iter()
            .map(|r| {
                let mut h = Hist::zeros();
                h.add_values(seg(r), thr);
                h
            })
            .collect();
        let mut h = Hist::zeros();
        for p in &parts {
            h.merge(p);
        }
        drop(parts);
        let sel = Selection::new(&h, bins);
        let mut cand: Vec<f64> = chunks
            .par_iter()
            .map(|r| {
                let mut c = Vec::new();
                sel.gather(seg(r), thr, &mut c);
                c
            })
            .collect::<Vec<_>>()
            .concat();
        sort_values(&mut cand);
        let all_pos: Vec<f64> = pos.concat();
        vec![bins.iter().map(|&b| finalize(&h, &sel, &cand, &all_pos, b, thr)).collect()]
    };
    debug_assert_eq!(per_group.len(), groups);
    Ok(bins
        .iter()
        .enumerate()
        .map(|(bi, &b)| {
            let mut st = BinStats::zeros(groups, b);
            for (gi, pg) in per_group.iter().enumerate() {
                let (bounds, one) = &pg[bi];
                let r = gi * b..(gi + 1) * b;
                st.count[r.clone()].copy_from_slice(&one.count);
                st.sum_score[r.clone()].copy_from_slice(&one.sum_score);
                st.sum_outcome[r].copy_from_slice(&one.sum_outcome);
                st.edges.extend_from_slice(bounds);
            }
            st
        })
        .collect())
}
