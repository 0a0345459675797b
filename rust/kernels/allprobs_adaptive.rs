//! All-probabilities metrics with adaptive (equal-mass) bins: ACE, TACE and their relatives.
//!
//! Only the B-1 order statistics of each group matter, so nothing is sorted whole:
//! 1. one pass per block of classes builds, per class, a histogram over a monotone bucket key
//!    of the value (the top bits of its float pattern) holding count and score sum;
//! 2. prefix sums over a group's histogram locate the bucket holding each wanted rank (for every
//!    requested bin count at once);
//! 3. a second pass gathers only the members of those buckets, which are sorted to read the
//!    exact edge values;
//! 4. every other bucket lies wholly inside one bin, so bin totals come from the histogram
//!    sums; members of the edge buckets are binned one by one; outcomes (1 only at the true
//!    label) are binned from a per-class list of the true-label scores.
//! Blocks of classes are independent and each sum runs in a fixed order, so results do not
//! depend on the number of threads.

use rayon::prelude::*;

use crate::kernels::edges::{adaptive_boundaries, adaptive_positions, bin_by_edges};
use crate::kernels::score::MAX_KEY;
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

/// Number of bucket keys.
const NKEYS: usize = MAX_KEY as usize + 1;
/// Histogram stride per class: the keys plus one slot for dropped (thresholded) entries.
const STRIDE: usize = NKEYS + 1;
const DROP: usize = NKEYS;
/// Classes per block: small enough that the block's histograms stay in cache.
const MAX_BLOCK: usize = 8;

/// One group's histogram over the bucket keys.
#[derive(Clone)]
struct GroupHist {
    cnt: Vec<u64>,
    sum: Vec<f64>,
}

impl GroupHist {
    fn zeros() -> Self {
        GroupHist { cnt: vec![0; NKEYS], sum: vec![0.0; NKEYS] }
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
    fn new(h: &GroupHist, bins: &[usize]) -> Self {
        let mut cum_before = vec![0u64; NKEYS];
        let mut acc = 0u64;
        for q in 0..NKEYS {
            cum_before[q] = acc;
            acc += h.cnt[q];
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
                off += h.cnt[q];
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

/// Bin statistics of one group for `b` bins, and its bin boundaries.
fn finalize(
    h: &GroupHist,
    sel: &Selection,
    cand_sorted: &[f64],
    positives: &[f64],
    b: usize,
    threshold: f64,
) -> (Vec<f64>, BinStats) {
    let mut st = BinStats::zeros(1, b);
    if sel.n == 0 {
        return (adaptive_boundaries(&[], b, threshold), st);
    }
    let (edges, edge_buckets): (Vec<f64>, Vec<usize>) = adaptive_positions(sel.n as usize, b)
        .into_iter()
        .map(|r| sel.edge(cand_sorted, r as u64))
        .unzip();
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
    let mut bin = 0usize;
    for &s in cand_sorted {
        while bin < edges.len() && edges[bin] <= s {
            bin += 1;
        }
        st.count[bin] += 1.0;
        st.sum_score[bin] += s;
    }
    for &s in positives {
        st.sum_outcome[bin_by_edges(&edges, s)] += 1.0;
    }
    (adaptive_boundaries(&edges, b, threshold), st)
}

/// Blocks of contiguous classes of nearly equal width.
fn class_blocks(k: usize) -> Vec<std::ops::Range<usize>> {
    let nblocks = k.div_ceil(MAX_BLOCK);
    let w = k.div_ceil(nblocks);
    (0..k).step_by(w).map(|s| s..(s + w).min(k)).collect()
}

/// Histogram pass over one block of classes: per class `STRIDE` slots.
fn block_hist<T: Score>(x: &Inputs<T>, cols: &std::ops::Range<usize>, thr: f64) -> (Vec<u32>, Vec<f64>) {
    let w = cols.len();
    let mut cnt = vec![0u32; w * STRIDE];
    let mut sum = vec![0.0f64; w * STRIDE];
    for i in 0..x.n {
        let row = &x.probs[i * x.k + cols.start..i * x.k + cols.end];
        for (j, &v) in row.iter().enumerate() {
            let s = v.to_f64();
            let key = if s > thr { v.key() as usize } else { DROP };
            let idx = j * STRIDE + key;
            cnt[idx] += 1;
            sum[idx] += s;
        }
    }
    (cnt, sum)
}

/// Gather pass over one block: the kept values whose bucket is wanted, per class of the block
/// (`wanted` is indexed by the class's position in the block, or shared when `shared`).
fn block_gather<T: Score>(
    x: &Inputs<T>,
    cols: &std::ops::Range<usize>,
    thr: f64,
    wanted: &[&[bool]],
) -> Vec<Vec<f64>> {
    let w = cols.len();
    let mut out = vec![Vec::new(); w];
    for i in 0..x.n {
        let row = &x.probs[i * x.k + cols.start..i * x.k + cols.end];
        for (j, &v) in row.iter().enumerate() {
            let s = v.to_f64();
            if s > thr && wanted[j][v.key() as usize] {
                out[j].push(s);
            }
        }
    }
    out
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

/// Statistics for each bin count in `bins`. Inputs must already be validated.
pub fn stats<T: Score>(x: &Inputs<T>, g: &Grouping, bins: &[usize]) -> Result<Vec<BinStats>, KernelError> {
    let thr = g.threshold;
    let blocks = class_blocks(x.k);
    let pos = positives(x, thr);
    let groups = g.groups(x.k);
    // Per group and bin count: (boundaries, 1-group stats).
    let per_group: Vec<Vec<(Vec<f64>, BinStats)>> = if g.class_conditional {
        blocks
            .par_iter()
            .flat_map_iter(|cols| {
                let (cnt, sum) = block_hist(x, cols, thr);
                let hists: Vec<GroupHist> = (0..cols.len())
                    .map(|j| GroupHist {
                        cnt: cnt[j * STRIDE..j * STRIDE + NKEYS].iter().map(|&c| c as u64).collect(),
                        sum: sum[j * STRIDE..j * STRIDE + NKEYS].to_vec(),
                    })
                    .collect();
                drop((cnt, sum));
                let sels: Vec<Selection> = hists.iter().map(|h| Selection::new(h, bins)).collect();
                let wanted: Vec<&[bool]> = sels.iter().map(|s| &s.wanted[..]).collect();
                let mut cands = block_gather(x, cols, thr, &wanted);
                cands.iter_mut().for_each(|c| sort_values(c));
                let pos = &pos;
                (0..cols.len())
                    .map(|j| {
                        bins.iter()
                            .map(|&b| finalize(&hists[j], &sels[j], &cands[j], &pos[cols.start + j], b, thr))
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    } else {
        let parts: Vec<GroupHist> = blocks
            .par_iter()
            .map(|cols| {
                let (cnt, sum) = block_hist(x, cols, thr);
                let mut h = GroupHist::zeros();
                for j in 0..cols.len() {
                    for q in 0..NKEYS {
                        h.cnt[q] += cnt[j * STRIDE + q] as u64;
                        h.sum[q] += sum[j * STRIDE + q];
                    }
                }
                h
            })
            .collect();
        let mut h = GroupHist::zeros();
        for p in &parts {
            for q in 0..NKEYS {
                h.cnt[q] += p.cnt[q];
                h.sum[q] += p.sum[q];
            }
        }
        drop(parts);
        let sel = Selection::new(&h, bins);
        let mut cand: Vec<f64> = blocks
            .par_iter()
            .map(|cols| {
                let wanted: Vec<&[bool]> = vec![&sel.wanted[..]; cols.len()];
                block_gather(x, cols, thr, &wanted).concat()
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
