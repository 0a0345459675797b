//! From a group's histogram to its bin totals: which buckets hold the wanted ranks and edges,
//! the members of those buckets (placed bucket by bucket, never sorted), the values of the
//! wanted ranks (selected within their buckets), and the per-bin sums: exact sums of grid
//! units ([`crate::kernels::core::units`]), so that a bin's total is the sum of its scores'
//! units however they were grouped into buckets and segments.

use super::histogram::{at_or_above, gather_values, halves, hist_values, sum_and_gather, Hist, Lanes};
use super::{GroupResult, Keys, Request};
use crate::kernels::core::edges::{adaptive_boundaries, adaptive_positions, bin_by_edges};
use crate::kernels::{BinStats, KernelError, Score};

/// Which buckets must be resolved exactly, and where their members sit among the candidates.
pub(super) struct Selection {
    n: u64,
    pub(super) wanted: Vec<bool>,
    cum_before: Vec<u64>,
    cand_offset: Vec<u64>,
    /// Members of all wanted buckets together (the number of candidates).
    pub(super) total: usize,
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

    /// The number of the group's values in buckets before `q` (`q` up to the number of keys).
    fn before(&self, q: usize) -> u64 {
        self.cum_before.get(q).copied().unwrap_or(self.n)
    }

    /// The bucket holding rank `r` (0-based) of the group.
    fn bucket_of(cum_before: &[u64], r: u64) -> usize {
        cum_before.partition_point(|&c| c <= r) - 1
    }

    /// The members of wanted bucket q among the placed candidates.
    fn members<'a>(&self, h: &Hist, placed: &'a [f64], q: usize) -> &'a [f64] {
        let a = self.cand_offset[q] as usize;
        &placed[a..a + h.count(q) as usize]
    }
}

/// The members of the wanted buckets, bucket by bucket (in no order within a bucket), and the
/// exact values of the requested ranks, read by selection within their buckets (no bucket is
/// sorted: ranks are order statistics, and run sums exact sums of grid units, in any order).
/// Reused from group to group within a worker, with the histogram and the other per-group
/// buffers (fresh buffers would cost page faults each time).
#[derive(Default)]
pub(super) struct Candidates {
    /// Members of the wanted buckets, bucket after bucket (in no order within a bucket).
    placed: Vec<f64>,
    /// The candidates in the order they were gathered, or (when gathered in parallel) their
    /// lists in order.
    pub(super) picked: Vec<f64>,
    pub(super) lists: Vec<Vec<f64>>,
    /// Next free slot of each wanted bucket while placing `picked`, and its end.
    next: Vec<usize>,
    end: Vec<usize>,
    /// `Selection::wanted` extended by the drop slot, for [`sum_and_gather`].
    wanted_slots: Vec<bool>,
    /// (bucket, rank within the bucket) wanted, and then their values, sorted.
    ranks: Vec<(usize, u64)>,
    values: Vec<f64>,
    /// A bucket's members being selected in.
    work: Vec<f64>,
    /// Every table's edges in the wanted buckets, and the sums between them.
    segs: Segments,
    running: Running,
    hist: Option<Hist>,
}

impl Candidates {
    /// The worker's histogram, emptied (allocated on first use).
    fn take_hist(&mut self, keys: Keys) -> Hist {
        let mut h = self.hist.take().unwrap_or_else(|| Hist::zeros(keys));
        h.clear(keys);
        h
    }

    /// Places `picked` and `lists` into `placed`, bucket by bucket. Nothing reads the order of
    /// a bucket's members (ranks are order statistics, segment sums exact), so each list's
    /// first half fills its buckets from the start and its second half from the end, at once:
    /// two cursor chains through memory instead of one (a member landing in the bucket of the
    /// one before waits for that one's cursor). When the values were read twice from the
    /// caller's array (counts, then members), another thread may have changed them in between:
    /// every placement is checked to find room in its bucket (the two cursors not met) and the
    /// totals to agree, else [`KernelError::InputChanged`] (then every bucket is exactly full).
    fn place(&mut self, h: &Hist, sel: &Selection, keys: Keys) -> Result<(), KernelError> {
        if self.picked.len() + self.lists.iter().map(Vec::len).sum::<usize>() != sel.total {
            self.lists.clear();
            return Err(KernelError::InputChanged);
        }
        // Each wanted bucket's next free slot from the start, and its end (the slot after the
        // next free one from the end); both 0 for the buckets not wanted (no room).
        self.next.clear();
        self.next.extend((0..sel.wanted.len()).map(|q| if sel.wanted[q] { sel.cand_offset[q] as usize } else { 0 }));
        self.end.clear();
        self.end.extend((0..sel.wanted.len()).map(|q| {
            if sel.wanted[q] { sel.cand_offset[q] as usize + h.count(q) as usize } else { 0 }
        }));
        self.placed.clear();
        self.placed.resize(sel.total, 0.0);
        let (next, end, placed) = (&mut self.next[..], &mut self.end[..], &mut self.placed[..]);
        // Whether value s found room, from the start or from the end of its bucket. A widened
        // f32 value has the same key as the f32 itself.
        #[inline(always)]
        fn put(next: &mut [usize], end: &mut [usize], placed: &mut [f64], q: usize, s: f64, last: bool) -> bool {
            let (lo, hi) = (next[q], end[q]);
            if lo >= hi {
                return false;
            }
            if last {
                placed[hi - 1] = s;
                end[q] = hi - 1;
            } else {
                placed[lo] = s;
                next[q] = lo + 1;
            }
            true
        }
        let mut fits = true;
        for list in std::iter::once(&self.picked).chain(&self.lists) {
            let (first, second) = list.split_at(list.len() / 2);
            for (&a, &b) in first.iter().zip(second) {
                if !(put(next, end, placed, keys.of(a), a, false) & put(next, end, placed, keys.of(b), b, true)) {
                    fits = false;
                    break;
                }
            }
            // The second half is the longer by at most one.
            if fits && second.len() > first.len() {
                let b = second[second.len() - 1];
                fits = put(next, end, placed, keys.of(b), b, true);
            }
            if !fits {
                break;
            }
        }
        // A worker's scratch serves its next group with `picked` only.
        self.lists.clear();
        if fits {
            Ok(())
        } else {
            Err(KernelError::InputChanged)
        }
    }

    /// Reads the values of the adaptive ranks of `req`: in each bucket holding some, the
    /// members are copied and the ranks selected in increasing order, each in the part above
    /// the previous one. A rank's value does not depend on how it is found.
    fn select_ranks(&mut self, h: &Hist, sel: &Selection, req: &Request) {
        self.ranks.clear();
        self.values.clear();
        if sel.n == 0 {
            return;
        }
        for &b in &req.adaptive {
            for r in adaptive_positions(sel.n as usize, b) {
                let q = Selection::bucket_of(&sel.cum_before, r as u64);
                self.ranks.push((q, r as u64 - sel.cum_before[q]));
            }
        }
        self.ranks.sort_unstable();
        self.ranks.dedup();
        let mut i = 0;
        while i < self.ranks.len() {
            let q = self.ranks[i].0;
            self.work.clear();
            self.work.extend_from_slice(sel.members(h, &self.placed, q));
            let mut from = 0usize;
            while i < self.ranks.len() && self.ranks[i].0 == q {
                let local = self.ranks[i].1 as usize;
                let part = &mut self.work[from..];
                let (_, v, _) = part.select_nth_unstable_by_key(local - from, |v| v.to_bits());
                self.values.push(*v);
                from = local + 1;
                i += 1;
            }
        }
    }

    /// The value of rank `r` of the group, and its bucket (after [`Candidates::select_ranks`]).
    fn edge(&self, sel: &Selection, r: u64) -> (f64, usize) {
        let q = Selection::bucket_of(&sel.cum_before, r);
        let at = self.ranks.binary_search(&(q, r - sel.cum_before[q])).expect("rank selected");
        (self.values[at], q)
    }
}

/// A run's count and its members' units.
type RunSum = (u64, Lanes);

/// Buckets holding at most this many edges are split into segments by a masked pass per edge
/// ([`at_or_above`]); those holding more, by a search per member.
const MASKED_EDGES: usize = 6;

/// For each wanted bucket holding edges of some table: those edges (every table's, sorted,
/// distinct) and the exact sums of the members between consecutive ones.
#[derive(Default)]
struct Segments {
    /// Per bucket slot: its first edge in `edges` (and segment in `sums`, offset by its
    /// number of earlier buckets), `usize::MAX` if it holds no edge.
    first: Vec<usize>,
    /// Per bucket with edges, in slot order: (first edge, number of edges).
    buckets: Vec<(usize, usize)>,
    edges: Vec<f64>,
    /// Bucket b's segment i: members with exactly i of its edges <= them.
    sums: Vec<RunSum>,
    pairs: Vec<(usize, u64)>,
}

impl Segments {
    /// Collects the edges of every table of `req` (even upper edges, and the adaptive ones
    /// selected in `cand`) by bucket, then sums each such bucket's members by segment: a
    /// masked pass per edge when it holds at most [`MASKED_EDGES`], else one pass searching
    /// each member's segment.
    fn build(&mut self, h: &Hist, sel: &Selection, cand: &Candidates, req: &Request) {
        self.pairs.clear();
        for (_, upper, ek) in &req.even {
            self.pairs.extend(ek.iter().zip(upper).map(|(&q, &u)| (q, u.to_bits())));
        }
        self.pairs.extend(cand.ranks.iter().zip(&cand.values).map(|(&(q, _), &v)| (q, v.to_bits())));
        self.pairs.sort_unstable();
        self.pairs.dedup();
        self.first.clear();
        self.first.resize(sel.wanted.len(), usize::MAX);
        self.buckets.clear();
        self.edges.clear();
        self.sums.clear();
        let mut i = 0;
        while i < self.pairs.len() {
            let q = self.pairs[i].0;
            let start = self.edges.len();
            while i < self.pairs.len() && self.pairs[i].0 == q {
                self.edges.push(f64::from_bits(self.pairs[i].1));
                i += 1;
            }
            if h.cnt[q] == 0 {
                self.edges.truncate(start);
                continue;
            }
            let m = self.edges.len() - start;
            let at = self.sums.len();
            self.first[q] = self.buckets.len();
            self.buckets.push((start, m));
            self.sums.resize(at + m + 1, (0, Lanes::default()));
            let (es, sums) = (&self.edges[start..], &mut self.sums[at..]);
            let members = sel.members(h, &cand.placed, q);
            if m <= MASKED_EDGES {
                // Segment i holds the members at or above edge i - 1 less those at or above
                // edge i: one masked pass per edge, each exact; all of them are the bucket's
                // histogram totals (its members, as `place` checked).
                let mut above = (h.count(q), h.sum[q]);
                for (i, &e) in es.iter().enumerate() {
                    let next = at_or_above(members, e);
                    sums[i] = (above.0 - next.0, above.1.less(next.1));
                    above = next;
                }
                sums[m] = above;
            } else {
                for &s in members {
                    let r = &mut sums[es.partition_point(|&e| e <= s)];
                    r.0 += 1;
                    r.1.add(halves(s));
                }
            }
        }
    }

    /// Bucket q's edges and segment sums (q must hold edges).
    fn of(&self, q: usize) -> (&[f64], &[RunSum]) {
        let b = self.first[q];
        let (start, m) = self.buckets[b];
        // Segments of bucket b start after the m + 1 of each earlier bucket.
        (&self.edges[start..start + m], &self.sums[start + b..start + b + m + 1])
    }
}

/// Running sums of a group's buckets: entry q holds the units of buckets `0..q` (their counts
/// are the selection's, [`Selection::before`]), so the buckets between two edges add in one
/// difference (exact, as [`Lanes::less`] is), not one by one per table.
#[derive(Default)]
pub(super) struct Running(Vec<Lanes>);

impl Running {
    fn build(&mut self, h: &Hist, nk: usize) {
        self.0.clear();
        self.0.reserve(nk + 1);
        let mut acc = Lanes::default();
        self.0.push(acc);
        for q in 0..nk {
            acc.merge(h.sum[q]);
            self.0.push(acc);
        }
    }

    /// Count and units of buckets `a..b`.
    fn between(&self, sel: &Selection, a: usize, b: usize) -> (u64, i128) {
        let n = sel.before(b) - sel.before(a);
        (n, self.0[b].less(self.0[a]).units(n))
    }
}

/// Bin totals of one group for bins given by their upper edges `edges` (values, non-decreasing;
/// a score's bin is how many edges are <= it) whose buckets are `edge_buckets`. Buckets in
/// ascending order: those between two buckets holding edges lie wholly in one bin and add
/// their totals at once (from the running totals, whether or not they are wanted for another
/// binning); one holding edges (it is wanted) is split into runs by those edges, each run's
/// sum made of the segments between every table's edges in the bucket. All sums are exact in
/// grid units, so each bin holds exactly the sum of its scores' units: the table depends only
/// on the values and these edges, not on which other binnings share the selection, nor on the
/// buckets, and is bitwise the table of any other path that bins the same scores at the same
/// edges. (`cand`: its running sums and segments built.)
fn fill_bins(
    h: &Hist,
    sel: &Selection,
    cand: &Candidates,
    positives: &[f64],
    edges: &[f64],
    edge_buckets: &[usize],
    nb: usize,
) -> BinStats {
    let (run, segs) = (&cand.running, &cand.segs);
    let mut st = BinStats::zeros(1, nb);
    let nk = sel.wanted.len();
    let mut add = |bin: usize, (c, u): (u64, i128)| {
        if c > 0 {
            st.count[bin] += c as f64;
            st.units[bin] += u;
        }
    };
    // Buckets from `from` on hold values above every edge before `bin`.
    let (mut bin, mut from) = (0usize, 0usize);
    while bin < edge_buckets.len() {
        let q = edge_buckets[bin];
        // Bucket q holds edges bin, bin + 1, ..., bin + t - 1; the buckets before it (after
        // the previous edges' bucket) lie wholly in bin `bin`.
        let t = edge_buckets[bin..].iter().take_while(|&&e| e == q).count();
        add(bin, run.between(sel, from, q));
        if h.cnt[q] > 0 {
            // A member s is in bin bin + (how many of the bucket's edges are <= s). Members
            // below edge e are the segments before the bucket's (every table's) edges above e.
            let (all, seg) = segs.of(q);
            let cut = |e: f64| all.partition_point(|&a| a.to_bits() <= e.to_bits());
            let mut lo = 0;
            for j in 0..=t {
                let hi = if j < t { cut(edges[bin + j]) } else { seg.len() };
                for &(c, u) in &seg[lo..hi.max(lo)] {
                    add(bin + j, (c, u.units(c)));
                }
                lo = hi.max(lo);
            }
        }
        bin += t;
        from = q + 1;
    }
    add(bin, run.between(sel, from, nk));
    st.finish();
    for &s in positives {
        st.sum_outcome[bin_by_edges(edges, s)] += 1.0;
    }
    st
}

/// A group's even and adaptive tables from its histogram and placed candidates (ranks
/// selected, segments summed).
fn finalize(
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
                .map(|r| cand.edge(sel, r as u64))
                .unzip();
            let st = fill_bins(h, sel, cand, pos, &edges, &eb, b);
            (adaptive_boundaries(&edges, b, thr), st)
        })
        .collect();
    (even, adaptive)
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
/// `scratch.picked` (or `scratch.lists`): placed bucket by bucket (the histogram gives
/// every bucket's offset; see [`Candidates::place`] for the checks), the wanted ranks
/// selected, then the tables filled. Gathering first and placing only the few gathered values
/// keeps the passes over all values free of the store-to-load dependencies of a direct
/// scatter (consecutive values landing in the same bucket would chain through its slot
/// counter).
pub(super) fn finish(
    h: Hist,
    sel: &Selection,
    pos: &[f64],
    req: &Request,
    thr: f64,
    scratch: &mut Candidates,
) -> Result<GroupResult, KernelError> {
    let placed = scratch.place(&h, sel, req.keys);
    let res = placed.map(|()| {
        scratch.select_ranks(&h, sel, req);
        let mut segs = std::mem::take(&mut scratch.segs);
        segs.build(&h, sel, scratch, req);
        scratch.segs = segs;
        scratch.running.build(&h, sel.wanted.len());
        finalize(&h, sel, scratch, pos, req, thr)
    });
    scratch.hist = Some(h);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::tests::xorshift as uniform;

    /// Counts known beforehand (one pass taking sums and candidates) give bitwise the same
    /// tables as the histogram pass followed by the gathering pass, over uneven segments, ties,
    /// zeros and thresholds, and with the scratch buffers reused from group to group.
    #[test]
    fn counted_path_equals_two_pass_path() {
        let mut draw = uniform(0x9E37_79B9_7F4A_7C15u64);
        let vals: Vec<f64> = (0..20_000)
            .map(|i| {
                let x = draw();
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

    /// Deterministic values over many magnitudes, with ties and f32-rounded ones.
    fn spread(n: usize, seed: u64) -> Vec<f64> {
        let mut draw = uniform(seed);
        (0..n)
            .map(|i| {
                let u = draw();
                match i % 6 {
                    0 => 0.25,
                    1 => ((u * u) as f32) as f64,
                    2 => u.powi(12),
                    3 => 1.0 - u * 1e-9,
                    _ => u * 0.05,
                }
            })
            .collect()
    }

    /// Every table is bitwise the table of pushing each kept score, one by one, into its bin at
    /// the table's edges ([`BinStats::push`]: units per score): counts, units, sums and
    /// outcomes, for even and adaptive tables, with and without a threshold, f64 and f32
    /// values, class and pooled buckets, many equal scores (wholly inside buckets and split
    /// by edges) and values in the lowest buckets.
    #[test]
    fn tables_are_the_per_score_tables() {
        let mut vals = spread(40_000, 0x1234_5678_9ABC_DEF1);
        vals.extend([1e-40, 3e-45, 1e-300, f64::MIN_POSITIVE, 0.5, 1.0, 1.0 + 1e-12, 2f64.powi(-126)]);
        vals.extend(std::iter::repeat_n(0.7, 20_000));
        let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
        let (even, adaptive) = ([3usize, 15, 200], [1usize, 2, 15, 100]);
        let direct = |kept: &[f64], pos: &[f64], upper: &[f64], nb: usize| {
            let mut st = BinStats::zeros(1, nb);
            for &s in kept {
                st.push(0, bin_by_edges(upper, s), s, 0.0);
            }
            for &s in pos {
                st.sum_outcome[bin_by_edges(upper, s)] += 1.0;
            }
            st.finish();
            st
        };
        for keys in [Keys::CLASS, Keys::CLASS_FINE, Keys::POOLED] {
            for thr in [0.0, 0.01] {
                let req = Request::new(keys.above(thr), &even, &adaptive);
                let widened: Vec<f64> = vals32.iter().map(|&v| v as f64).collect();
                for (at, all) in [("f64", &vals), ("f32", &widened)] {
                    let kept: Vec<f64> = all.iter().copied().filter(|&v| v > thr).collect();
                    let pos: Vec<f64> = kept.iter().step_by(3).copied().collect();
                    let mut sc = Candidates::default();
                    let (e, a) = if at == "f64" {
                        group_from_segments(&[&vals[..]], &pos, &req, thr, &mut sc).unwrap()
                    } else {
                        group_from_segments(&[&vals32[..]], &pos, &req, thr, &mut sc).unwrap()
                    };
                    for ((ev, upper, _), got) in req.even.iter().zip(&e) {
                        let want = direct(&kept, &pos, upper, ev.num_bins());
                        assert_eq!(got, &want, "{at} thr={thr} even {}", upper.len());
                    }
                    for (&b, (bounds, got)) in adaptive.iter().zip(&a) {
                        let want = direct(&kept, &pos, &bounds[1..b], b);
                        assert_eq!(got, &want, "{at} thr={thr} adaptive {b}");
                    }
                }
            }
        }
    }

    /// Each table of a request with many bin counts, even and adaptive, is bitwise the table of
    /// a request with that bin count alone (the run sums are exact, so sharing the per-bucket
    /// pass does not change them), for f64 and f32 values.
    #[test]
    fn tables_do_not_depend_on_the_other_tables() {
        let vals = spread(30_000, 0x0DDB_A11C_0FFE_E123);
        let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
        let (even, adaptive) = ([3usize, 10, 15, 50], [2usize, 10, 15, 40, 100]);
        for thr in [0.0, 0.01] {
            let all = Request::new(Keys::CLASS.above(thr), &even, &adaptive);
            let pos: Vec<f64> = vals.iter().step_by(3).copied().filter(|&v| v > thr).collect();
            let (e_all, a_all) = group_from_segments(&[&vals[..]], &pos, &all, thr, &mut Candidates::default()).unwrap();
            let (e32, a32) = group_from_segments(&[&vals32[..]], &pos, &all, thr, &mut Candidates::default()).unwrap();
            for (i, &b) in even.iter().enumerate() {
                let one = Request::new(Keys::CLASS.above(thr), &[b], &[]);
                let (e, _) = group_from_segments(&[&vals[..]], &pos, &one, thr, &mut Candidates::default()).unwrap();
                assert_eq!(e[0], e_all[i], "even {b} thr={thr}");
                let (e, _) = group_from_segments(&[&vals32[..]], &pos, &one, thr, &mut Candidates::default()).unwrap();
                assert_eq!(e[0], e32[i], "f32 even {b} thr={thr}");
            }
            for (i, &b) in adaptive.iter().enumerate() {
                let one = Request::new(Keys::CLASS.above(thr), &[], &[b]);
                let (_, a) = group_from_segments(&[&vals[..]], &pos, &one, thr, &mut Candidates::default()).unwrap();
                assert_eq!(a[0], a_all[i], "adaptive {b} thr={thr}");
                let (_, a) = group_from_segments(&[&vals32[..]], &pos, &one, thr, &mut Candidates::default()).unwrap();
                assert_eq!(a[0], a32[i], "f32 adaptive {b} thr={thr}");
            }
        }
    }

    /// Thresholded groups on the buckets above the threshold only ([`Keys::above`]) give
    /// bitwise the tables of all the buckets: adaptive edges, and even edges above, at and
    /// below the threshold (B = 200 has edges below 0.01), f64 and f32 values, including values
    /// at the threshold, in its bucket, and in the top bucket.
    #[test]
    fn keys_above_threshold_give_the_same_tables() {
        let mut draw = uniform(0x2545_F491_4F6C_DD1Du64);
        let vals: Vec<f64> = (0..30_000)
            .map(|i| {
                let u = draw();
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
        for keys in [Keys::CLASS, Keys::CLASS_FINE, Keys::POOLED] {
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
        // Gathered candidates (the pooled path) that do not match the histogram.
        let mut h = Hist::zeros(keys);
        hist_values(&mut h, keys, &vals, 0.0);
        let sel = Selection::new(&h, &req);
        let mut cand = Vec::new();
        gather_values(&sel.wanted, keys, &vals, 0.0, &mut cand);
        // Given as one list, or (as the pooled path gathers them) as per-chunk lists.
        let run = |picked: Vec<f64>, lists: Vec<Vec<f64>>| {
            let mut h2 = Hist::zeros(keys);
            hist_values(&mut h2, keys, &vals, 0.0);
            let mut sc = Candidates { picked, lists, ..Default::default() };
            finish(h2, &sel, &[], &req, 0.0, &mut sc)
        };
        let whole = run(cand.clone(), Vec::new()).unwrap();
        let cut = cand.len() / 3;
        assert_eq!(run(Vec::new(), vec![cand[..cut].to_vec(), cand[cut..].to_vec()]).unwrap(), whole);
        // Placed from both ends of each list: lists of one, none and an odd or even number.
        let uneven = vec![cand[..1].to_vec(), Vec::new(), cand[1..cut | 1].to_vec(), cand[cut | 1..].to_vec()];
        assert_eq!(run(cand[..0].to_vec(), uneven).unwrap(), whole);
        let mut short = cand.clone();
        short.pop();
        assert_eq!(run(short, Vec::new()).err(), Some(KernelError::InputChanged));
        let short_list = vec![cand[..cut].to_vec(), cand[cut + 1..].to_vec()];
        assert_eq!(run(Vec::new(), short_list).err(), Some(KernelError::InputChanged));
        let mut moved = cand.clone();
        let last = moved.len() - 1;
        moved[last] = 0.999_999; // same length, a member of another bucket
        assert_eq!(run(Vec::new(), vec![moved]).err(), Some(KernelError::InputChanged));
    }
}
