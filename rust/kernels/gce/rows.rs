//! The kept scores of one metric as `(group, score, outcome, row)` rows: the input of the
//! weighted primitive ([`crate::kernels::weighted::grouped`]) for sample weights and for the bootstrap
//! of bins that move with the weights.
//!
//! Validation is that of every other entry point ([`toplabel::summarise`] for top-label
//! groupings, [`validate::scan`] otherwise). Groups follow docs/spec.md: top-label, the row's
//! prediction (first argmax) when class-conditional, else 0, with outcome "prediction correct";
//! all probabilities, column k when class-conditional, else 0, with outcome "label == k". A score
//! is kept when `score > threshold` (compared in float64). Scores are widened exactly to f64.

use rayon::prelude::*;

use crate::kernels::core::chunks::row_chunks;
use crate::kernels::core::validate::{self, Checks};
use crate::kernels::gce::toplabel;
use crate::kernels::{Grouping, Inputs, KernelError, Score};

/// Kept scores with their group, outcome and row, in row order (then column order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreRows {
    pub group: Vec<i64>,
    pub score: Vec<f64>,
    pub outcome: Vec<f64>,
    pub row: Vec<i64>,
}

/// One chunk's share of the outputs: its kept entries, in order.
struct Part<'a> {
    group: &'a mut [i64],
    score: &'a mut [f64],
    outcome: &'a mut [f64],
    row: &'a mut [i64],
}

/// The validated kept scores of grouping `g` (binning is ignored: it is the primitive's job).
///
/// Two passes over fixed row chunks ([`row_chunks`]): each chunk's kept entries are counted,
/// the outputs allocated at their exact length, and each chunk fills its own run of them in
/// parallel. (Pushing entry by entry grew four vectors by copying: at (10k, 100) the copies
/// and their page faults were most of the call's 30 ms.) The rows are those of the sequential
/// loop, in the same order, for any thread count.
pub fn score_rows<T: Score>(x: &Inputs<T>, g: &Grouping, check: &Checks) -> Result<ScoreRows, KernelError> {
    let thr = g.threshold;
    let top = if g.max_prob {
        Some(toplabel::summarise(x, check)?)
    } else {
        validate::scan(x, check)?;
        None
    };
    // each kept entry of rows `rows`, as (group, score, outcome, row), in order
    let each = |rows: std::ops::Range<usize>, f: &mut dyn FnMut(usize, f64, bool, usize)| match &top {
        Some(t) => {
            for i in rows {
                let s = t.conf[i];
                if s > thr {
                    f(t.group(g.class_conditional, i), s, t.correct[i], i);
                }
            }
        }
        None => {
            for i in rows {
                let label = x.labels[i];
                for (k, v) in x.row(i).iter().enumerate() {
                    let s = v.to_f64();
                    if s > thr {
                        f(if g.class_conditional { k } else { 0 }, s, label == k as i64, i);
                    }
                }
            }
        }
    };
    let width = if top.is_some() { 1 } else { x.k };
    let chunks = row_chunks(x.n, width);
    let counts: Vec<usize> = chunks
        .par_iter()
        .map(|r| {
            let mut c = 0usize;
            each(r.clone(), &mut |_, _, _, _| c += 1);
            c
        })
        .collect();
    let m: usize = counts.iter().sum();
    let mut out = ScoreRows { group: vec![0; m], score: vec![0.0; m], outcome: vec![0.0; m], row: vec![0; m] };
    let mut parts = Vec::with_capacity(chunks.len());
    {
        let (mut g_rest, mut s_rest, mut o_rest, mut r_rest) =
            (&mut out.group[..], &mut out.score[..], &mut out.outcome[..], &mut out.row[..]);
        for &c in &counts {
            let (g_head, g_tail) = std::mem::take(&mut g_rest).split_at_mut(c);
            let (s_head, s_tail) = std::mem::take(&mut s_rest).split_at_mut(c);
            let (o_head, o_tail) = std::mem::take(&mut o_rest).split_at_mut(c);
            let (r_head, r_tail) = std::mem::take(&mut r_rest).split_at_mut(c);
            parts.push(Part { group: g_head, score: s_head, outcome: o_head, row: r_head });
            (g_rest, s_rest, o_rest, r_rest) = (g_tail, s_tail, o_tail, r_tail);
        }
        parts.into_par_iter().zip(chunks.into_par_iter()).try_for_each(|(p, rows)| {
            let mut at = 0usize;
            let mut overflow = false;
            each(rows, &mut |grp, s, o, i| {
                // the inputs are read twice: an array changed by another thread in between
                // may keep more entries now than were counted
                if at < p.group.len() {
                    p.group[at] = grp as i64;
                    p.score[at] = s;
                    p.outcome[at] = if o { 1.0 } else { 0.0 };
                    p.row[at] = i as i64;
                    at += 1;
                } else {
                    overflow = true;
                }
            });
            if overflow || at != p.group.len() {
                return Err(KernelError::InputChanged);
            }
            Ok(())
        })?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Binning;

    fn grouping(max_prob: bool, cc: bool, threshold: f64) -> Grouping {
        Grouping { binning: Binning::Even, max_prob, class_conditional: cc, threshold }
    }

    #[test]
    fn spec_groups_and_threshold() {
        let probs = [0.6f64, 0.4, 0.3, 0.7, 0.0, 1.0];
        let labels = [0i64, 0, 1];
        let x = Inputs::new(&probs, &labels, 2).unwrap();
        let c = Checks { values: true, row_sums: true, labels: true };
        let top = score_rows(&x, &grouping(true, true, 0.0), &c).unwrap();
        assert_eq!(top.group, vec![0, 1, 1]);
        assert_eq!(top.score, vec![0.6, 0.7, 1.0]);
        assert_eq!(top.outcome, vec![1.0, 0.0, 1.0]);
        let all = score_rows(&x, &grouping(false, false, 0.35), &c).unwrap();
        // 0.0 and 0.3 dropped (strict threshold), pooled group
        assert_eq!(all.score, vec![0.6, 0.4, 0.7, 1.0]);
        assert_eq!(all.row, vec![0, 0, 1, 2]);
        assert_eq!(all.outcome, vec![1.0, 0.0, 0.0, 1.0]);
        assert_eq!(all.group, vec![0, 0, 0, 0]);
    }

    /// Over several chunks, the rows are those of the sequential definition (each row's kept
    /// entries in column order, rows in order), for every grouping and any thread count.
    #[test]
    fn chunked_rows_are_the_sequential_rows() {
        let (n, k) = (3001usize, 97usize); // n * k spans several chunks of rows
        let mut state = 7u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut probs = vec![0.0f64; n * k];
        let mut labels = vec![0i64; n];
        for i in 0..n {
            let raw: Vec<f64> = (0..k).map(|_| (next() % 1000) as f64 * if next() % 3 == 0 { 0.0 } else { 1.0 }).collect();
            let total: f64 = raw.iter().sum::<f64>().max(1.0);
            for j in 0..k {
                probs[i * k + j] = raw[j] / total;
            }
            if raw.iter().all(|&v| v == 0.0) {
                probs[i * k] = 1.0;
            }
            labels[i] = (next() % k as u64) as i64;
        }
        let x = Inputs::new(&probs, &labels, k).unwrap();
        let c = Checks { values: true, row_sums: true, labels: true };
        for (max_prob, cc, thr) in [(false, true, 0.0), (false, false, 0.01), (true, true, 0.0), (true, false, 0.02)] {
            let g = grouping(max_prob, cc, thr);
            let mut want = ScoreRows::default();
            for (i, &label) in labels.iter().enumerate() {
                let row = x.row(i);
                let cols: Vec<usize> = if max_prob {
                    // the first argmax
                    let best = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
                    vec![best]
                } else {
                    (0..k).collect()
                };
                for j in cols {
                    if row[j] > thr {
                        want.group.push(if cc { j as i64 } else { 0 });
                        want.score.push(row[j]);
                        want.outcome.push(if label == j as i64 { 1.0 } else { 0.0 });
                        want.row.push(i as i64);
                    }
                }
            }
            let got = score_rows(&x, &g, &c).unwrap();
            assert_eq!(got, want, "max_prob {max_prob} cc {cc} thr {thr}");
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            assert_eq!(pool.install(|| score_rows(&x, &g, &c).unwrap()), want);
        }
    }

    #[test]
    fn invalid_input_is_an_error() {
        let probs = [0.6f64, 0.5];
        let labels = [0i64];
        let x = Inputs::new(&probs, &labels, 2).unwrap();
        let c = Checks { values: true, row_sums: true, labels: true };
        assert!(score_rows(&x, &grouping(true, false, 0.0), &c).is_err());
        assert!(score_rows(&x, &grouping(false, true, 0.0), &c).is_err());
    }
}
