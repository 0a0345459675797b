//! Threshold-first path: when a threshold drops most entries (TACE on a many-class softmax),
//! the kept scores are compacted into per-class lists and the matrix is never transposed.

use rayon::prelude::*;

use crate::kernels::validate::{self, Checks};
use crate::kernels::{Inputs, KernelError, Score};

/// How many of the entries of the first rows pass the threshold, and how many were sampled: a
/// sample of the data itself, so the choice of path it drives, and hence the result, is
/// deterministic.
pub(super) fn sample_kept<T: Score>(x: &Inputs<T>, thr: f64) -> (usize, usize) {
    let rows = x.n.min(2048);
    let sample = &x.probs[..rows * x.k];
    let kept = sample.iter().filter(|v| v.to_f64() > thr).count();
    (kept, sample.len())
}

/// The kept scores of every class, class by class in row order: `values[offsets[c]..offsets[c+1]]`
/// holds class c's. One parallel pass over row chunks, then a stable counting sort by class.
/// Rows are validated in the same read (the first failing row, in row order, is reported).
/// Each chunk's lists are sized for the `kept` fraction (sampled) with some slack, so that they
/// rarely grow (which would copy them, and fault in fresh pages, again).
pub(super) fn compact_kept<T: Score>(
    x: &Inputs<T>,
    thr: f64,
    kept: f64,
    check: &Checks,
) -> Result<(Vec<f64>, Vec<usize>), KernelError> {
    if check.labels {
        validate::labels(x)?;
    }
    let chunks = crate::kernels::chunks::row_chunks(x.n, x.k);
    let parts: Vec<(Vec<u32>, Vec<f64>, Option<usize>)> = chunks
        .par_iter()
        .map(|r| {
            let cap = (r.len() as f64 * x.k as f64 * kept * 1.25) as usize + x.k;
            let (mut cls, mut val) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
            let bad = compact_rows(x, r.clone(), thr, check, &mut cls, &mut val);
            (cls, val, bad)
        })
        .collect();
    if let Some(i) = parts.iter().find_map(|p| p.2) {
        return Err(validate::row_error(x, i, check));
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
    /// (A branch per entry: with few entries kept it is well predicted, and measured faster
    /// than branch-free compaction, which stores every entry.)
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
            let (sum, bad) = validate::row_sum_and_bad(row);
            if !validate::row_ok(sum, bad, check) {
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
