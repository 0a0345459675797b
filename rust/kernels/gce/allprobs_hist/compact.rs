//! Threshold-first path: when a threshold drops most entries (TACE on a many-class softmax),
//! the kept scores are compacted into per-class lists (one set per chunk of rows, built in
//! parallel) and the matrix is never transposed.

use rayon::prelude::*;

use crate::kernels::core::simd;
use crate::kernels::core::validate::{self, Checks};
use crate::kernels::{Inputs, KernelError, Score};

/// How many of the entries of the first rows pass the threshold, and how many were sampled: a
/// sample of the data itself, so the choice of path it drives, and hence the result, is
/// deterministic. About 2^18 entries (at most 2048 rows, at least 64 when there are as many):
/// the sample is read by one thread before the parallel passes start.
pub(super) fn sample_kept<T: Score>(x: &Inputs<T>, thr: f64) -> (usize, usize) {
    let rows = x.n.min(2048).min(((1 << 18) / x.k).max(64));
    let sample = &x.probs[..rows * x.k];
    let kept = sample.iter().filter(|v| v.to_f64() > thr).count();
    (kept, sample.len())
}

/// Entries per compaction chunk, at least: each chunk holds a list per class, so chunks are
/// large enough that those lists are not mostly empty.
const COMPACT_ENTRIES: usize = 1 << 20;

/// The kept scores of one chunk of rows, class by class in row order: class c's are
/// `values[offsets[c]..offsets[c + 1]]`; and its kept true-label scores (class, score) in row
/// order.
pub(super) struct ChunkLists {
    values: Vec<f64>,
    offsets: Vec<usize>,
    positives: Vec<(u32, f64)>,
}

/// The kept scores of every class, as one list per chunk of rows (chunks in row order).
pub(super) struct Kept {
    chunks: Vec<ChunkLists>,
}

impl Kept {
    /// Class c's kept scores in row order, as one segment per chunk.
    pub(super) fn class(&self, c: usize) -> Vec<&[f64]> {
        self.chunks.iter().map(|l| &l.values[l.offsets[c]..l.offsets[c + 1]]).collect()
    }

    /// Every kept score, chunk by chunk (class by class within a chunk).
    pub(super) fn all(&self) -> Vec<&[f64]> {
        self.chunks.iter().map(|l| &l.values[..]).collect()
    }

    /// The kept true-label scores per class, in row order: what [`super::positives`] reads,
    /// taken here from rows already in cache.
    pub(super) fn positives(&self, k: usize) -> Vec<Vec<f64>> {
        let mut pos = vec![Vec::new(); k];
        for (c, s) in self.chunks.iter().flat_map(|l| &l.positives) {
            pos[*c as usize].push(*s);
        }
        pos
    }
}

/// Appends row `i`'s true-label score (class, score) to `pos` if it is kept; `false` if the
/// label is not a column (labels were checked before: another thread changed it).
#[inline(always)]
fn push_positive<T: Score>(x: &Inputs<T>, i: usize, row: &[T], thr: f64, pos: &mut Vec<(u32, f64)>) -> bool {
    let c = x.labels[i] as u64 as usize;
    match row.get(c) {
        Some(v) => {
            let s = v.to_f64();
            if s > thr {
                pos.push((c as u32, s));
            }
            true
        }
        None => false,
    }
}

/// Why a chunk's compaction stopped: the first row failing a check, or a label that is not a
/// column.
#[derive(Debug, PartialEq)]
enum Stop {
    Row(usize),
    Label,
}

/// The kept scores of every class ([`Kept`]). One parallel pass over chunks of rows, each
/// compacting its rows' kept (class, score) pairs and sorting them by class (a stable counting
/// sort of the chunk's pairs, in the same task: nothing runs serially over all kept entries).
/// Rows are validated in the same read (the first failing row, in row order, is reported), and
/// the kept true-label scores are taken from them too (no separate pass of random reads).
/// Each chunk's lists are sized for the `kept` fraction (sampled) with some slack, so that they
/// rarely grow (which would copy them, and fault in fresh pages, again).
pub(super) fn compact_kept<T: Score>(x: &Inputs<T>, thr: f64, kept: f64, check: &Checks) -> Result<Kept, KernelError> {
    if check.labels {
        validate::labels(x)?;
    }
    let chunks = crate::kernels::core::chunks::row_chunks_min(x.n, x.k, COMPACT_ENTRIES);
    let parts: Vec<Result<ChunkLists, Stop>> = chunks
        .par_iter()
        .map(|r| {
            let cap = (r.len() as f64 * x.k as f64 * kept * 1.25) as usize + x.k;
            let (mut cls, mut val) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
            let mut pos = Vec::with_capacity(r.len());
            compact_rows(x, r.clone(), thr, check, &mut cls, &mut val, &mut pos)?;
            Ok(by_class(x.k, &cls, &val, pos))
        })
        .collect();
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Ok(l) => out.push(l),
            Err(Stop::Row(i)) => return Err(validate::row_error(x, i, check)),
            Err(Stop::Label) => return Err(KernelError::InputChanged),
        }
    }
    Ok(Kept { chunks: out })
}

/// The (class, value) pairs sorted by class, stably, with the chunk's true-label scores.
/// Classes are below `k` (column indices).
fn by_class(k: usize, cls: &[u32], val: &[f64], positives: Vec<(u32, f64)>) -> ChunkLists {
    let mut offsets = vec![0usize; k + 1];
    for &c in cls {
        offsets[c as usize + 1] += 1;
    }
    for c in 0..k {
        offsets[c + 1] += offsets[c];
    }
    let mut next = offsets.clone();
    let mut values = vec![0.0f64; offsets[k]];
    for (&c, &v) in cls.iter().zip(val) {
        values[next[c as usize]] = v;
        next[c as usize] += 1;
    }
    ChunkLists { values, offsets, positives }
}

/// Appends the kept (class, score) pairs of `rows`, and the kept true-label scores to `pos`;
/// stops at the first row failing a check.
/// (The portable path branches per entry; the AVX2 path marks the kept entries in its
/// checking read and walks the marks with no data-dependent branch, since whether a group of
/// eight keeps anything is unpredictable.) Dispatches to [`x86::compact_rows`] where the CPU
/// has AVX2, else [`compact_rows_portable`].
fn compact_rows<T: Score>(
    x: &Inputs<T>,
    rows: std::ops::Range<usize>,
    thr: f64,
    check: &Checks,
    cls: &mut Vec<u32>,
    val: &mut Vec<f64>,
    pos: &mut Vec<(u32, f64)>,
) -> Result<(), Stop> {
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        simd::record(simd::Kernel::Compact, simd::Level::Avx2);
        // SAFETY: the CPU has AVX2, the only feature `x86::compact_rows` is compiled for.
        return unsafe { x86::compact_rows(x, rows, thr, check, cls, val, pos) };
    }
    simd::record(simd::Kernel::Compact, simd::Level::Portable);
    compact_rows_portable(x, rows, thr, check, cls, val, pos)
}

/// The portable [`compact_rows`].
fn compact_rows_portable<T: Score>(
    x: &Inputs<T>,
    rows: std::ops::Range<usize>,
    thr: f64,
    check: &Checks,
    cls: &mut Vec<u32>,
    val: &mut Vec<f64>,
    pos: &mut Vec<(u32, f64)>,
) -> Result<(), Stop> {
    for i in rows {
        let row = x.row(i);
        let (sum, bad) = validate::row_sum_and_bad(row);
        if !validate::row_ok(sum, bad, check) {
            return Err(Stop::Row(i));
        }
        if !push_positive(x, i, row, thr, pos) {
            return Err(Stop::Label);
        }
        for (c, &v) in row.iter().enumerate() {
            let s = v.to_f64();
            if s > thr {
                cls.push(c as u32);
                val.push(s);
            }
        }
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{push_positive, Stop};
    use crate::kernels::core::validate::{self, row_sum_and_bad_avx2, Checks, RowVisitor};
    use crate::kernels::{Inputs, Score};

    /// Records, per row, which entries pass the threshold: one bit per entry, eight entries a
    /// byte (the bytes past the row's stay 0).
    struct Marks {
        thr: __m256d,
        bytes: Vec<u8>,
    }

    impl RowVisitor for Marks {
        #[inline(always)]
        unsafe fn visit(&mut self, j: usize, v0: __m256d, v1: __m256d, n: usize) {
            // SAFETY: register operations only (no memory access); AVX2 is available, as the
            // caller guarantees (`visit` is inlined into AVX2 code).
            let mask = unsafe {
                _mm256_movemask_pd(_mm256_cmp_pd(v0, self.thr, _CMP_GT_OQ))
                    | _mm256_movemask_pd(_mm256_cmp_pd(v1, self.thr, _CMP_GT_OQ)) << 4
            };
            // j is a multiple of 8 below the row's length: byte j / 8 exists (bounds-checked).
            self.bytes[j / 8] = (mask & ((1 << n) - 1)) as u8;
        }
    }

    /// Appends the entries of `row` marked in `marks` (class, score), in column order. Works
    /// on spans of 4096 entries (64 words of marks) with a word holding which of those words
    /// are not zero, so that each kept entry costs a few bit operations and the only
    /// data-dependent branch is the loop's own exit, once per span: whether a group of eight
    /// entries keeps anything is unpredictable (about one in eight for a 1000-class softmax
    /// at 0.01), and a branch on it mispredicted often enough to cost most of the pass.
    fn append_marked<T: Score>(row: &[T], marks: &[u8], cls: &mut Vec<u32>, val: &mut Vec<f64>) {
        let nbytes = row.len().div_ceil(8);
        for span in (0..nbytes).step_by(512) {
            let nwords = (nbytes - span).min(512).div_ceil(8);
            let mut words = [0u64; 64];
            let mut live = 0u64;
            for (i, w) in words[..nwords].iter_mut().enumerate() {
                // `marks` is padded to whole words (see `compact_rows`), bounds-checked anyway.
                let b: [u8; 8] = marks[span + 8 * i..span + 8 * i + 8].try_into().unwrap_or([0; 8]);
                *w = u64::from_le_bytes(b);
                live |= ((*w != 0) as u64) << i;
            }
            while live != 0 {
                let wi = live.trailing_zeros() as usize;
                let cur = words[wi];
                let c = span * 8 + 64 * wi + cur.trailing_zeros() as usize;
                // c < row.len(): only the row's entries are marked (`get` keeps it so anyway).
                if let Some(v) = row.get(c) {
                    cls.push(c as u32);
                    val.push(v.to_f64());
                }
                let rest = cur & cur.wrapping_sub(1);
                words[wi] = rest;
                live &= !(((rest == 0) as u64) << wi);
            }
        }
    }

    /// [`super::compact_rows`] in one read of each row ([`row_sum_and_bad_avx2`]) that checks
    /// it and marks the entries above the threshold ([`Marks`]), then a walk over the marks of
    /// that row, still in cache ([`append_marked`]).
    ///
    /// (Kept values are read again from the row, bounds-checked: a value changed by another
    /// thread since the check is kept as read, never out of bounds.)
    #[target_feature(enable = "avx2")]
    pub(super) fn compact_rows<T: Score>(
        x: &Inputs<T>,
        rows: std::ops::Range<usize>,
        thr: f64,
        check: &Checks,
        cls: &mut Vec<u32>,
        val: &mut Vec<f64>,
        pos: &mut Vec<(u32, f64)>,
    ) -> Result<(), Stop> {
        let mut marks = Marks { thr: _mm256_set1_pd(thr), bytes: vec![0u8; x.k.div_ceil(64) * 8] };
        for i in rows {
            let row = x.row(i);
            // SAFETY: AVX2 is enabled here; `row_sum_and_bad_avx2` reads only inside `row` (a
            // slice whose length no other thread can change).
            let (sum, bad) = unsafe { row_sum_and_bad_avx2(row, &mut marks) };
            if !validate::row_ok(sum, bad, check) {
                return Err(Stop::Row(i));
            }
            if !push_positive(x, i, row, thr, pos) {
                return Err(Stop::Label);
            }
            append_marked(row, &marks.bytes, cls, val);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each class's kept scores, read from the per-chunk lists, are the class's scores above
    /// the threshold in row order, over several chunks; every list together holds every kept
    /// score; a bad row is reported as the first in row order, whichever chunk holds it.
    #[test]
    fn per_chunk_lists_hold_each_class_in_row_order() {
        let (n, k) = (2500usize, 1000usize); // 2.5M entries: 3 chunks
        let mut draw = crate::kernels::tests::xorshift(11);
        let mut p: Vec<f64> = (0..n * k).map(|_| draw()).collect();
        for row in p.chunks_mut(k) {
            let t: f64 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= t);
        }
        let y: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % k as i64).collect();
        let x = Inputs::new(&p, &y, k).unwrap();
        let thr = 1.5 / k as f64;
        let kept = compact_kept(&x, thr, 0.25, &Checks::ALL).unwrap();
        assert!(kept.chunks.len() > 1);
        // The true-label scores taken in the compaction are the separate pass's.
        let pos = kept.positives(k);
        assert!(pos.iter().map(Vec::len).sum::<usize>() > n / 8);
        assert_eq!(pos, super::super::positives(&x, thr).unwrap());
        let mut total = 0;
        for c in 0..k {
            let want: Vec<f64> = (0..n).map(|i| p[i * k + c]).filter(|&v| v > thr).collect();
            assert_eq!(kept.class(c).concat(), want, "class {c}");
            total += want.len();
        }
        assert_eq!(kept.all().iter().map(|l| l.len()).sum::<usize>(), total);
        for bad in [n - 1, n / 2, 3] {
            let mut q = p.clone();
            q[bad * k + 7] = 2.0;
            if bad + 1 < n {
                q[(bad + 1) * k] = f64::NAN; // a later bad row, in the same or a later chunk
            }
            let x = Inputs::new(&q, &y, k).unwrap();
            let r = compact_kept(&x, thr, 0.25, &Checks::ALL);
            assert!(matches!(r, Err(KernelError::OutOfRange { row, .. }) if row == bad), "bad row {bad}");
        }
        // A label that is not a column, with labels left unchecked (as if changed by another
        // thread after the check): an error, not an index panic.
        let mut z = y.clone();
        z[n - 2] = k as i64;
        let x = Inputs::new(&p, &z, k).unwrap();
        let unchecked = Checks { labels: false, ..Checks::ALL };
        assert!(matches!(compact_kept(&x, thr, 0.25, &unchecked), Err(KernelError::InputChanged)));
        let r = compact_kept(&x, thr, 0.25, &Checks::ALL);
        assert!(matches!(r, Err(KernelError::LabelOutOfRange { index, .. }) if index == n - 2));
    }

    /// The one-read AVX2 compaction keeps exactly what the production portable compaction
    /// keeps, in the same order, and reports the same failing row.
    #[test]
    fn vector_compaction_equals_portable() {
        if !simd::avx2() {
            return;
        }
        let mut rnd = crate::kernels::tests::xorshift(5);
        for k in [1usize, 7, 8, 9, 31, 100, 4096, 4097, 9001] {
            let n = 200;
            let mut p = vec![0.0f64; n * k];
            for row in p.chunks_mut(k) {
                row.iter_mut().for_each(|v| *v = (10.0 * rnd()).exp());
                let t: f64 = row.iter().sum();
                row.iter_mut().for_each(|v| *v /= t);
            }
            let y: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % k as i64).collect();
            for bad_row in [None, Some(150)] {
                let mut p = p.clone();
                if let Some(r) = bad_row {
                    p[r * k + k / 2] = 1.5;
                }
                let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
                for thr in [0.0, 0.01, 0.2] {
                    let x = Inputs::new(&p, &y, k).unwrap();
                    let (mut c, mut v, mut q, mut pc, mut pv, mut pq) = Default::default();
                    // SAFETY: AVX2 is present (checked above).
                    let bad = unsafe { x86::compact_rows(&x, 0..n, thr, &Checks::ALL, &mut c, &mut v, &mut q) };
                    let pbad = compact_rows_portable(&x, 0..n, thr, &Checks::ALL, &mut pc, &mut pv, &mut pq);
                    // (What was appended before a failing row does not matter: it is an error.)
                    assert_eq!(bad, pbad, "f64 K={k} thr={thr}");
                    if bad.is_ok() {
                        assert_eq!((&c, &v, &q), (&pc, &pv, &pq), "f64 K={k} thr={thr}");
                    }
                    let x = Inputs::new(&p32, &y, k).unwrap();
                    let (mut c, mut v, mut q, mut pc, mut pv, mut pq) = Default::default();
                    // SAFETY: as above.
                    let bad = unsafe { x86::compact_rows(&x, 0..n, thr, &Checks::ALL, &mut c, &mut v, &mut q) };
                    let pbad = compact_rows_portable(&x, 0..n, thr, &Checks::ALL, &mut pc, &mut pv, &mut pq);
                    assert_eq!(bad, pbad, "f32 K={k} thr={thr}");
                    if bad.is_ok() {
                        assert_eq!((&c, &v, &q), (&pc, &pv, &pq), "f32 K={k} thr={thr}");
                    }
                }
            }
        }
    }
}
