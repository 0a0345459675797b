//! From a group's histogram to its bin totals: which buckets hold the wanted ranks and edges,
//! the exact sorted members of those buckets, and the per-bin sums.

use super::histogram::{gather_values, hist_values, sum_and_gather, Hist};
use super::{GroupResult, Keys, Request};
use crate::kernels::edges::{adaptive_boundaries, adaptive_positions, bin_by_edges};
use crate::kernels::{BinStats, KernelError, Score};

/// Which buckets must be resolved exactly, and where their members sit among the sorted
/// candidates.
pub(super) struct Selection {
    n: u64,
    pub(super) wanted: Vec<bool>,
    cum_before: Vec<u64>,
    cand_offset: Vec<u64>,
    /// Members of all wanted buckets together (the number of candidates).
    total: usize,
}

impl Selection {
    pub(super) fn new(h: &Hist, req: &Request) -> Self {
        let nk = req.keys.nkeys();
        let mut cum_before = vec![0u64; nk];
        let mut acc = 0u64;
        for (q, c) in cum_before.iter_mut().enumerate() {
            *c = acc;
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
        Selection { n, wanted, cum_before, cand_offset, total: off as usize }
    }

    /// Checks that `sorted` (sorted candidates gathered by a pass over the data after the
    /// histogram's) holds exactly the members of the wanted buckets that the histogram counted:
    /// [`KernelError::InputChanged`] otherwise (another thread wrote to the input between the
    /// passes). Then every rank read by [`Selection::edge`] lies inside `sorted`, in its
    /// bucket's range.
    pub(super) fn check_sorted(&self, h: &Hist, keys: Keys, sorted: &[f64]) -> Result<(), KernelError> {
        if sorted.len() != self.total {
            return Err(KernelError::InputChanged);
        }
        // Keys are monotone in the value: a sorted range whose ends are in bucket q is all in q.
        for (q, &w) in self.wanted.iter().enumerate() {
            let (a, c) = (self.cand_offset[q] as usize, h.count(q) as usize);
            if w && c > 0 && (keys.of(sorted[a]) != q || keys.of(sorted[a + c - 1]) != q) {
                return Err(KernelError::InputChanged);
            }
        }
        Ok(())
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

/// Sorted candidates with bucket-local prefix sums (double-double: `hi + lo`, restarting at
/// each wanted bucket), so that the sum of any run of a bucket's members costs O(1), is
/// accurate to about one ulp of the bucket's total and, depending only on the bucket's own
/// members, is the same whichever other buckets are wanted (so a metric's table does not
/// depend on the other metrics computed with it: `gce` and `evaluate` agree bitwise). Reused
/// from group to group within a worker, with the histogram and the other per-group buffers
/// (fresh buffers would cost page faults each time).
#[derive(Default)]
pub(super) struct Candidates {
    sorted: Vec<f64>,
    /// Inclusive bucket-local prefix sums: `hi[i] + lo[i]` is the sum of the members of i's
    /// bucket up to and including i.
    hi: Vec<f64>,
    lo: Vec<f64>,
    /// The candidates in the order they were gathered.
    picked: Vec<f64>,
    /// Next free slot of each wanted bucket while placing `picked` into `sorted`.
    next: Vec<usize>,
    /// `Selection::wanted` extended by the drop slot, for [`sum_and_gather`].
    wanted_slots: Vec<bool>,
    hist: Option<Hist>,
}

impl Candidates {
    /// Candidates already sorted and checked against the histogram
    /// ([`Selection::check_sorted`]).
    pub(super) fn new(sorted: Vec<f64>, sel: &Selection, h: &Hist) -> Self {
        let mut c = Candidates { sorted, ..Default::default() };
        c.prefix(sel, h);
        c
    }

    /// Recomputes the bucket-local prefix sums of `sorted`, whose wanted bucket q holds
    /// `sorted[cand_offset[q]..cand_offset[q] + count(q)]`.
    fn prefix(&mut self, sel: &Selection, h: &Hist) {
        self.hi.clear();
        self.lo.clear();
        self.hi.resize(self.sorted.len(), 0.0);
        self.lo.resize(self.sorted.len(), 0.0);
        for (q, &w) in sel.wanted.iter().enumerate() {
            if !w {
                continue;
            }
            let a = sel.cand_offset[q] as usize;
            let r = a..a + h.count(q) as usize;
            let (mut s, mut c) = (0.0f64, 0.0f64);
            for ((&v, hi), lo) in self.sorted[r.clone()].iter().zip(&mut self.hi[r.clone()]).zip(&mut self.lo[r]) {
                let t = s + v;
                c += if s.abs() >= v.abs() { (s - t) + v } else { (v - t) + s };
                s = t;
                *hi = s;
                *lo = c;
            }
        }
    }

    /// The worker's histogram, emptied (allocated on first use).
    fn take_hist(&mut self, keys: Keys) -> Hist {
        let mut h = self.hist.take().unwrap_or_else(|| Hist::zeros(keys));
        h.clear(keys);
        h
    }

    /// Sum of the members `m..m2` of the bucket starting at `a` (a <= m <= m2), as (hi, lo).
    fn run_sum(&self, a: usize, m: usize, m2: usize) -> (f64, f64) {
        let pre = |i: usize| if i == a { (0.0, 0.0) } else { (self.hi[i - 1], self.lo[i - 1]) };
        let ((h1, l1), (h2, l2)) = (pre(m), pre(m2));
        (h2 - h1, l2 - l1)
    }
}

/// Per-bin sums of many terms, each given as (hi, lo): the hi parts with Neumaier
/// compensation, the small lo parts plainly.
struct BinSums {
    sum: Vec<f64>,
    comp: Vec<f64>,
}

impl BinSums {
    fn new(nb: usize) -> Self {
        BinSums { sum: vec![0.0; nb], comp: vec![0.0; nb] }
    }

    #[inline]
    fn add(&mut self, bin: usize, (hi, lo): (f64, f64)) {
        let (s, t) = (self.sum[bin], self.sum[bin] + hi);
        self.comp[bin] += if s.abs() >= hi.abs() { (s - t) + hi } else { (hi - t) + s };
        self.comp[bin] += lo;
        self.sum[bin] = t;
    }

    fn into_sums(self) -> Vec<f64> {
        self.sum.iter().zip(&self.comp).map(|(s, c)| s + c).collect()
    }
}

/// Bin totals of one group for bins given by their upper edges `edges` (values, non-decreasing;
/// a score's bin is how many edges are <= it) whose buckets are `edge_buckets`. Buckets in
/// ascending order: one holding no edge lies wholly in one bin and adds its histogram totals
/// (whether or not it is wanted for another binning); one holding edges (it is wanted) is split
/// into runs of its sorted members, each added as a bucket-local run sum. So the table depends
/// only on the values and these edges, not on which other binnings share the selection.
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
    let mut sums = BinSums::new(nb);
    let mut bin = 0usize;
    for q in 0..sel.wanted.len() {
        if h.cnt[q] == 0 {
            continue;
        }
        // Values of bucket q exceed exactly the edges whose bucket is < q.
        while bin < edge_buckets.len() && edge_buckets[bin] < q {
            bin += 1;
        }
        if bin == edge_buckets.len() || edge_buckets[bin] != q {
            st.count[bin] += h.cnt[q] as f64;
            sums.add(bin, (h.sum[q][0], h.sum[q][1]));
            continue;
        }
        // Bucket q holds edges bin, bin + 1, ...: candidates in bin j are those with
        // edges[j-1] <= s < edges[j].
        let a = sel.cand_offset[q] as usize;
        let end = a + h.count(q) as usize;
        let mut start = a;
        while bin < edge_buckets.len() && edge_buckets[bin] == q {
            let m = start + cand.sorted[start..end].partition_point(|&v| v < edges[bin]);
            st.count[bin] += (m - start) as f64;
            sums.add(bin, cand.run_sum(a, start, m));
            start = m;
            bin += 1;
        }
        st.count[bin] += (end - start) as f64;
        sums.add(bin, cand.run_sum(a, start, end));
    }
    st.sum_score = sums.into_sums();
    for &s in positives {
        st.sum_outcome[bin_by_edges(edges, s)] += 1.0;
    }
    st
}

/// A group's even and adaptive tables from its histogram and sorted candidates.
pub(super) fn finalize(
    h: &Hist,
    sel: &Selection,
    cand: &Candidates,
    pos: &[f64],
    req: &Request,
    thr: f64,
) -> GroupResult {
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
pub(super) fn sort_values(v: &mut Vec<f64>) {
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
        if c.contains(&v.len()) {
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

/// One group's computation from its values, given as contiguous segments: histogram pass,
/// selection of the wanted buckets, gathering pass.
pub(super) fn group_from_segments<T: Score>(
    segs: &[&[T]],
    pos: &[f64],
    req: &Request,
    thr: f64,
    scratch: &mut Candidates,
) -> Result<GroupResult, KernelError> {
    let keys = req.keys;
    let mut h = scratch.take_hist(keys);
    for s in segs {
        hist_values(&mut h, keys, s, thr);
    }
    let sel = Selection::new(&h, req);
    scratch.picked.clear();
    scratch.picked.reserve(sel.total);
    for s in segs {
        gather_values(&sel.wanted, keys, s, thr, &mut scratch.picked);
    }
    finish(h, &sel, pos, req, thr, scratch)
}

/// The same when the group's bucket counts are already known: `add_counts` adds them to the
/// (zeroed) count table, then one pass over the values takes the bucket sums and gathers the
/// wanted buckets' members at once.
pub(super) fn group_with_counts<T: Score>(
    segs: &[&[T]],
    add_counts: impl FnOnce(&mut [u32]),
    pos: &[f64],
    req: &Request,
    thr: f64,
    scratch: &mut Candidates,
) -> Result<GroupResult, KernelError> {
    let keys = req.keys;
    let mut h = scratch.take_hist(keys);
    add_counts(&mut h.cnt);
    let sel = Selection::new(&h, req);
    scratch.picked.clear();
    scratch.picked.reserve(sel.total);
    // The wanted buckets, and the drop slot, which is not.
    let wanted = &mut scratch.wanted_slots;
    wanted.clear();
    wanted.extend_from_slice(&sel.wanted);
    wanted.push(false);
    for s in segs {
        sum_and_gather(&mut h, wanted, keys, s, thr, &mut scratch.picked);
    }
    finish(h, &sel, pos, req, thr, scratch)
}

/// The tables of a group whose histogram is complete and whose wanted values are in
/// `scratch.picked` (in any order). Each is placed at its bucket's slot (the histogram gives
/// every bucket's offset), then each bucket is sorted on its own: small sorts in cache, and
/// buckets are in value order, so the whole array ends up sorted. Gathering first and placing
/// only the few gathered values keeps the passes over all values free of the store-to-load
/// dependencies of a direct scatter (consecutive values landing in the same bucket would chain
/// through its slot counter).
///
/// When the values were read twice from the caller's array (counts, then members), another
/// thread may have changed them in between: every placement is checked to stay inside its
/// bucket's range and the totals to agree, else [`KernelError::InputChanged`]. (Then every
/// bucket is exactly full, as `finalize` expects.)
fn finish(
    h: Hist,
    sel: &Selection,
    pos: &[f64],
    req: &Request,
    thr: f64,
    scratch: &mut Candidates,
) -> Result<GroupResult, KernelError> {
    let keys = req.keys;
    if scratch.picked.len() != sel.total {
        scratch.hist = Some(h);
        return Err(KernelError::InputChanged);
    }
    scratch.next.clear();
    scratch.next.extend(sel.cand_offset.iter().map(|&o| o as usize));
    scratch.sorted.clear();
    scratch.sorted.resize(sel.total, 0.0);
    for &s in &scratch.picked {
        // A widened f32 value has the same key as the f32 itself.
        let q = keys.of(s);
        let slot = scratch.next[q];
        if !sel.wanted[q] || slot >= sel.cand_offset[q] as usize + h.count(q) as usize {
            scratch.hist = Some(h);
            return Err(KernelError::InputChanged);
        }
        scratch.sorted[slot] = s;
        scratch.next[q] += 1;
    }
    for q in 0..sel.wanted.len() {
        if sel.wanted[q] {
            let a = sel.cand_offset[q] as usize;
            scratch.sorted[a..a + h.count(q) as usize].sort_unstable_by_key(|v| v.to_bits());
        }
    }
    scratch.prefix(sel, &h);
    let res = finalize(&h, sel, scratch, pos, req, thr);
    scratch.hist = Some(h);
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts known beforehand (one pass taking sums and candidates) give bitwise the same
    /// tables as the histogram pass followed by the gathering pass, over uneven segments, ties,
    /// zeros and thresholds, and with the scratch buffers reused from group to group.
    #[test]
    fn counted_path_equals_two_pass_path() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let vals: Vec<f64> = (0..20_000)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let x = (s >> 11) as f64 / (1u64 << 53) as f64;
                match i % 5 {
                    0 => 0.0,
                    1 => (x * 16.0).floor() / 16.0,
                    _ => x * x * x,
                }
            })
            .collect();
        let segs: Vec<&[f64]> = vec![&vals[..4097], &vals[4097..4100], &vals[4100..]];
        let pos: Vec<f64> = vals.iter().step_by(7).copied().collect();
        let req = Request::new(Keys::CLASS, &[3, 15], &[1, 2, 15, 100]);
        let (mut a_scratch, mut b_scratch) = (Candidates::default(), Candidates::default());
        for thr in [0.0, 0.01, 0.5] {
            let pos: Vec<f64> = pos.iter().copied().filter(|&v| v > thr).collect();
            let a = group_from_segments(&segs, &pos, &req, thr, &mut a_scratch).unwrap();
            let counts = |cnt: &mut [u32]| {
                for v in segs.iter().copied().flatten() {
                    cnt[req.keys.slot(*v, thr)] += 1;
                }
            };
            let b = group_with_counts(&segs, counts, &pos, &req, thr, &mut b_scratch).unwrap();
            assert_eq!(a, b, "thr={thr}");
        }
    }

    /// Thresholded groups on the buckets above the threshold only ([`Keys::above`]) give
    /// bitwise the tables of all the buckets: adaptive edges, and even edges above, at and
    /// below the threshold (B = 200 has edges below 0.01), f64 and f32 values, including values
    /// at the threshold, in its bucket, and in the top bucket.
    #[test]
    fn keys_above_threshold_give_the_same_tables() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let vals: Vec<f64> = (0..30_000)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                match i % 7 {
                    0 => 0.01,
                    1 => 0.01 * (1.0 + 0.05 * u),
                    2 => 1.0,
                    3 => u * u * u * u,
                    _ => u * 0.05,
                }
            })
            .collect();
        let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
        for keys in [Keys::CLASS, Keys::POOLED] {
            for thr in [0.0, 1e-30, 0.003, 0.01, 0.3, 0.999] {
                let full = Request::new(keys, &[3, 15, 200], &[1, 2, 15, 100]);
                let above = Request::new(keys.above(thr), &[3, 15, 200], &[1, 2, 15, 100]);
                assert!(thr == 0.0 || above.keys.nkeys() < keys.nkeys());
                let pos: Vec<f64> = vals.iter().step_by(5).copied().filter(|&v| v > thr).collect();
                let segs: [&[f64]; 2] = [&vals[..1000], &vals[1000..]];
                let a = group_from_segments(&segs, &pos, &full, thr, &mut Candidates::default()).unwrap();
                let b = group_from_segments(&segs, &pos, &above, thr, &mut Candidates::default()).unwrap();
                assert_eq!(a, b, "f64 thr={thr}");
                let pos32: Vec<f64> = vals32.iter().step_by(5).map(|&v| v as f64).filter(|&v| v > thr).collect();
                let a = group_from_segments(&[&vals32[..]], &pos32, &full, thr, &mut Candidates::default()).unwrap();
                let b = group_from_segments(&[&vals32[..]], &pos32, &above, thr, &mut Candidates::default()).unwrap();
                assert_eq!(a, b, "f32 thr={thr}");
            }
        }
    }

    /// A later pass that finds other data than the earlier pass counted (another thread wrote
    /// to the input in between) returns InputChanged instead of writing out of bounds or
    /// reading past the candidates: counts that promise more, fewer or other members than the
    /// values hold.
    #[test]
    fn inconsistent_counts_give_input_changed() {
        let vals: Vec<f64> = (0..5000).map(|i| ((i * 7919) % 5000) as f64 / 5000.0).collect();
        let req = Request::new(Keys::CLASS, &[10], &[15]);
        let keys = req.keys;
        let true_counts = |cnt: &mut [u32]| {
            for v in &vals {
                cnt[keys.slot(*v, 0.0)] += 1;
            }
        };
        let mut scratch = Candidates::default();
        assert!(group_with_counts(&[&vals[..]], true_counts, &[], &req, 0.0, &mut scratch).is_ok());
        // Every bucket off by one (more, or fewer), or all members moved to another bucket.
        let shifts: [&dyn Fn(usize, u32) -> (usize, u32); 3] =
            [&|q, c| (q, c + 1), &|q, c| (q, c.saturating_sub(1)), &|q, c| ((q + 1).min(keys.max), c)];
        for shift in shifts {
            let wrong = |cnt: &mut [u32]| {
                let mut t = vec![0u32; cnt.len()];
                true_counts(&mut t);
                for (q, &c) in t.iter().enumerate() {
                    let (q2, c2) = if q < keys.nkeys() { shift(q, c) } else { (q, c) };
                    cnt[q2] += c2;
                }
            };
            let r = group_with_counts(&[&vals[..]], wrong, &[], &req, 0.0, &mut scratch);
            assert_eq!(r.err(), Some(KernelError::InputChanged));
        }
        // Sorted candidates (the pooled path) that do not match the histogram.
        let mut h = Hist::zeros(keys);
        hist_values(&mut h, keys, &vals, 0.0);
        let sel = Selection::new(&h, &req);
        let mut cand = Vec::new();
        gather_values(&sel.wanted, keys, &vals, 0.0, &mut cand);
        sort_values(&mut cand);
        assert!(sel.check_sorted(&h, keys, &cand).is_ok());
        let mut short = cand.clone();
        short.pop();
        assert_eq!(sel.check_sorted(&h, keys, &short), Err(KernelError::InputChanged));
        let mut moved = cand.clone();
        let last = moved.len() - 1;
        moved[last] = 0.999_999; // same length, a member of another bucket
        sort_values(&mut moved);
        assert_eq!(sel.check_sorted(&h, keys, &moved), Err(KernelError::InputChanged));
    }

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
