//! All-probabilities metrics (`max_prob = false`) by histogram selection: ACE, TACE and their
//! relatives (one pass for every bin count). It bins even edges too, in the same pass; the
//! production paths take even tables from [`crate::kernels::gce::allprobs_even`] (the table of paths
//! in [`crate::kernels`]), and the tests and fuzz targets use this as an independent check.
//!
//! Every bin edge, adaptive or even, is a value; only the entries near the edges need exact
//! treatment, so nothing is sorted whole:
//! 1. a histogram over a monotone bucket key of the value (the top bits of its float pattern,
//!    see [`Score::key_bits`]) holding count and score sum (in grid units) per bucket;
//! 2. prefix sums locate the bucket holding each wanted rank (adaptive edges, for every
//!    requested bin count at once); even edges `j/B` sit in the buckets of their own keys;
//! 3. a second pass gathers only the members of those "wanted" buckets, which are placed
//!    bucket by bucket (in no particular order within a bucket; nothing is sorted); the exact
//!    adaptive edges are read by selection within their buckets;
//! 4. every other bucket lies wholly inside one bin, so bin totals come from the histogram
//!    sums (the buckets between two edges at once, from running totals); the members of each
//!    wanted bucket are summed by segment between the edges of every requested table that
//!    fall in it (once for all tables); outcomes (1 only at the true label) are binned from
//!    the list of true-label scores.
//!
//! Score sums follow the rule of [`crate::kernels::core::units`]: each kept score adds exactly
//! its grid units, bucket totals and segment sums are exact integers, and a bin's sum is their
//! exact total, rounded once. So a table is bitwise the table of any other path that bins the
//! same scores at the same edges (the weighted kernels with unit weights, streaming, Dask
//! tables added per chunk), whatever the order of the scores, the buckets, the other tables
//! requested with it, the chunking or the thread count.
//!
//! With a threshold that drops most entries (TACE on a many-class softmax), the kept scores are
//! first compacted, in parallel over large chunks of rows, into per-chunk lists sorted by class
//! (a class's scores are then its segments of every chunk, in row order), and the matrix is
//! never transposed (`compact`); with a threshold, the histograms leave out the buckets below
//! it (`Keys::above`), so the per-class work on the many small groups stays small. The kept
//! true-label scores are taken in the compaction, from rows in cache (`positives` reads them
//! in parallel on the other paths): nothing runs over all rows or all kept entries on one
//! thread.
//!
//! Class-conditional otherwise: blocks of classes are transposed (in parallel over row chunks,
//! with AVX2 register-block kernels and streamed stores; `transpose`) so that each class's
//! column is contiguous, and the bucket counts are taken during the transposition; then
//! classes are processed in parallel, each with one pass over its column that adds the bucket
//! sums and gathers the wanted buckets (`histogram`, `select`). Pooled: one finer histogram
//! over row chunks, whose partial histograms are added.
//!
//! Counts and unit sums are integers, so no result depends on the thread count, or on the
//! block, tile and chunk sizes.

mod compact;
mod histogram;
mod select;
mod transpose;

use rayon::prelude::*;

use crate::kernels::core::chunks::{row_chunks_min, row_chunks_split, PerThread};
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::validate::Checks;
use crate::kernels::{BinStats, Inputs, KernelError, Score};
use compact::{compact_kept, sample_kept};
use histogram::{gather_values, hist_values, Hist, GATHER_BLOCK};
use select::{finish, group_from_segments, group_with_counts, Candidates, Selection};
use transpose::{class_blocks, Tiles};

/// The bucket key of a group: f32 bits >> `shift`, clamped to `min..=max` (`max` is 2.0's
/// key), counted from `min`: slot `key - min`.
#[derive(Clone, Copy)]
struct Keys {
    shift: u32,
    min: usize,
    max: usize,
}

impl Keys {
    /// Per class: 2049 buckets (4 mantissa bits), so count + sum histograms fit in L1 (and
    /// [`Keys::CLASS_FINE`] when many edges are wanted: [`Keys::class`]).
    const CLASS: Keys = Keys { shift: 19, min: 0, max: 0x4000_0000 >> 19 };
    /// Per class, when many adaptive edges are wanted: 4097 buckets (5 mantissa bits).
    const CLASS_FINE: Keys = Keys { shift: 18, min: 0, max: 0x4000_0000 >> 18 };

    /// The class buckets for a request of adaptive bin counts summing to `bins` (about as many
    /// edges): [`Keys::CLASS_FINE`] above [`CLASS_FINE_BINS`], else [`Keys::CLASS`]. Every
    /// table is the same bits with either (sums exact in grid units, edges order statistics).
    fn class(bins: usize) -> Keys {
        if bins > CLASS_FINE_BINS { Keys::CLASS_FINE } else { Keys::CLASS }
    }
    /// Pooled groups are large: 32769 buckets (8 mantissa bits) keep the gathered edge
    /// buckets small.
    const POOLED: Keys = Keys { shift: 15, min: 0, max: 0x4000_0000 >> 15 };

    /// The same buckets, without most of those below `thr`'s, which hold no kept value (a
    /// value above `thr` rounds to an f32 at least `thr`'s, so its key is at least `thr`'s):
    /// with a threshold, groups are small and most of their buckets would lie below it, so the
    /// per-group tables (cleared and scanned once per group) shrink, e.g. to 130 buckets for
    /// 0.01. One bucket below `thr`'s is kept (slot 0, always empty), where the even edges below
    /// the threshold go, as they went to empty buckets before: every table is bitwise the same
    /// as with all the buckets (tested).
    fn above(self, thr: f64) -> Keys {
        let min = if thr > 0.0 { (thr.key_bits(self.shift) as usize).min(self.max).saturating_sub(1) } else { 0 };
        Keys { min, ..self }
    }

    fn nkeys(&self) -> usize {
        self.max - self.min + 1
    }

    /// Slot that counts dropped (thresholded) entries.
    fn drop_slot(&self) -> usize {
        self.nkeys()
    }

    /// The slot of a value's bucket (values below `min`'s bucket, never kept, in slot 0).
    #[inline(always)]
    fn of<T: Score>(&self, v: T) -> usize {
        (v.key_bits(self.shift) as usize).clamp(self.min, self.max) - self.min
    }

    /// The histogram slot of a value: its key if it is kept (above `thr`), else the drop slot.
    #[inline(always)]
    fn slot<T: Score>(&self, v: T, thr: f64) -> usize {
        if v.to_f64() > thr { self.of(v) } else { self.drop_slot() }
    }
}

/// Adaptive bins per class (summed over the requested bin counts) above which the class
/// buckets are finer. With more edges, more of a class's values lie in buckets holding one
/// (56% at the five bin counts 10..50 with 2049 buckets), and each of those is placed,
/// selected among and split by segment; finer buckets hold fewer, at the cost of count
/// tables twice the size in the transposition and histograms that leave L1. ACE at (50k,
/// 1000) float32, alternating builds (2026-11-28): bin count 15 (2049 buckets faster),
/// 192 ms against 211 ms with 4097; 30, the same (218 against 217); 50, 252 against 272;
/// 100, 279 against 330; 10..50, 353 against 383.
const CLASS_FINE_BINS: usize = 32;

/// Entries per chunk of the pooled histogram and gathering passes, at least: the passes' only
/// parallelism (chunks of 2^23 entries made 6 of a (50k, 1000) matrix, and the pooled adaptive
/// tables ran at 3.4x their one-thread speed on 16 cores, 2026-11-28; 2^20 make 48). Each
/// thread keeps one partial histogram (~650 KB) over its chunks: a partial per chunk was
/// zeroed (fresh pages), kept and added to the total on the calling thread 48 times. Counts
/// and unit sums are integers: no table depends on the chunks.
const POOLED_CHUNK_ENTRIES: usize = 1 << 20;

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

/// Per-group results: even tables (1 x (B+1)) and adaptive (boundaries, 1 x B) tables.
type GroupResult = (Vec<BinStats>, Vec<(Vec<f64>, BinStats)>);

/// True-label scores that are kept, per class, in row order. Each is one read at a random
/// place of the matrix, so chunks of rows are read in parallel. Labels were checked before; one
/// out of range now means another thread changed it.
fn positives<T: Score>(x: &Inputs<T>, thr: f64) -> Result<Vec<Vec<f64>>, KernelError> {
    let chunks = row_chunks_split(x.n, 1, 4096, 1);
    let parts: Vec<Result<Vec<(u32, f64)>, KernelError>> = chunks
        .par_iter()
        .map(|r| {
            let mut out = Vec::with_capacity(r.len());
            for i in r.clone() {
                let c = x.labels[i] as u64 as usize;
                if c >= x.k {
                    return Err(KernelError::InputChanged);
                }
                let s = x.probs[i * x.k + c].to_f64();
                if s > thr {
                    out.push((c as u32, s));
                }
            }
            Ok(out)
        })
        .collect();
    let mut pos = vec![Vec::new(); x.k];
    for p in parts {
        for (c, s) in p? {
            pos[c as usize].push(s);
        }
    }
    Ok(pos)
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
    // Compact when fewer than a quarter of the (sampled) entries are kept.
    let (kept, sampled) = if thr > 0.0 { sample_kept(x, thr) } else { (1, 1) };
    let compact = kept * 4 < sampled;
    // The transposing path checks the values and row sums as it reads them (`Tiles`).
    let transposing = class_conditional && !compact && x.k > 1;
    if transposing {
        if check.labels {
            crate::kernels::core::validate::labels(x)?;
        }
    } else if !compact {
        crate::kernels::core::validate::scan(x, check)?;
    }
    // Compaction validates as it reads: run it before anything indexes by label
    // (`positives`), so that an out-of-range label is an error, not an index panic (found by
    // the `validation` fuzz target; regression test in `tests_fuzz.rs`).
    let compacted = if compact { Some(compact_kept(x, thr, kept as f64 / sampled as f64, check)?) } else { None };
    let pos = match &compacted {
        Some(kept) => kept.positives(x.k),
        None => positives(x, thr)?,
    };
    let per_group: Vec<GroupResult> = if let Some(kept) = compacted {
        // Thresholds drop most entries of a many-class softmax: filter first, then work on
        // the compact per-class lists of kept scores (no transposition of the whole matrix).
        if class_conditional {
            let req = Request::new(Keys::CLASS.above(thr), even, adaptive);
            let scratch = PerThread::<Candidates>::new();
            (0..x.k)
                .into_par_iter()
                .map(|c| scratch.with(|sc| group_from_segments(&kept.class(c), &pos[c], &req, thr, sc)))
                .collect::<Result<_, _>>()?
        } else {
            let req = Request::new(Keys::POOLED.above(thr), even, adaptive);
            vec![group_from_segments(&kept.all(), &pos.concat(), &req, thr, &mut Candidates::default())?]
        }
    } else if class_conditional {
        let req = Request::new(Keys::class(adaptive.iter().sum()).above(thr), even, adaptive);
        let mut out = Vec::with_capacity(x.k);
        if x.k == 1 {
            out.push(group_from_segments(&[x.probs], &pos[0], &req, thr, &mut Candidates::default())?);
        } else {
            let mut tiles = Tiles::new(x.n, req.keys);
            let scratch = PerThread::<Candidates>::new();
            let mut groups = || -> Result<(), KernelError> {
                for cols in class_blocks(x.n, x.k, std::mem::size_of::<T>()) {
                    tiles.fill(x, &cols, thr);
                    let res: Vec<GroupResult> = (0..cols.len())
                        .into_par_iter()
                        .map(|j| {
                            let counts = |cnt: &mut [u32]| tiles.add_counts(j, cnt);
                            let pos = &pos[cols.start + j];
                            scratch.with(|sc| group_with_counts(&tiles.column(j), counts, pos, &req, thr, sc))
                        })
                        .collect::<Result<_, _>>()?;
                    out.extend(res);
                }
                Ok(())
            };
            // The values were checked on the way; invalid input is named before any other
            // error it may have caused.
            groups().map_err(|e| crate::kernels::core::validate::input_error_first(x, check, e))?;
            tiles.check_rows(x, check)?;
        }
        out
    } else {
        let req = Request::new(Keys::POOLED.above(thr), even, adaptive);
        // Chunks of POOLED_CHUNK_ENTRIES; one partial histogram (~650 KB) per thread, added
        // to over its chunks, then the partials added together (counts and unit sums are
        // integers: no table depends on which thread counted which chunk).
        let chunks = row_chunks_min(x.n, x.k, POOLED_CHUNK_ENTRIES);
        let seg = |r: &std::ops::Range<usize>| &x.probs[r.start * x.k..r.end * x.k];
        let mut h = Hist::zeros(req.keys);
        if chunks.len() == 1 {
            hist_values(&mut h, req.keys, seg(&chunks[0]), thr);
        } else {
            let parts = PerThread::<Option<Hist>>::new();
            chunks.par_iter().for_each(|r| {
                parts.with(|p| hist_values(p.get_or_insert_with(|| Hist::zeros(req.keys)), req.keys, seg(r), thr))
            });
            for part in parts.into_values().flatten() {
                h.merge(&part);
            }
        }
        let sel = Selection::new(&h, &req);
        // Each chunk's list starts at its share of the wanted values (grown if it holds more).
        let share = sel.total as f64 / x.probs.len().max(1) as f64;
        let mut scratch = Candidates::default();
        scratch.lists = chunks
            .par_iter()
            .map(|r| {
                let room = (share * 1.25 * (r.len() * x.k) as f64) as usize + GATHER_BLOCK;
                let mut c = Vec::with_capacity(room);
                gather_values(&sel.wanted, req.keys, seg(r), thr, &mut c);
                c
            })
            .collect();
        // The gathering pass read the input again: `finish` checks it found what the
        // histogram counted.
        vec![finish(h, &sel, &pos.concat(), &req, thr, &mut scratch)?]
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
                st.set_group(gi, &ev[bi]);
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
            BinStats::from_groups(per_group.iter().map(|(_, ad)| (&ad[bi].0[..], &ad[bi].1)), b)
        })
        .collect();
    Ok((even_out, adaptive_out))
}


