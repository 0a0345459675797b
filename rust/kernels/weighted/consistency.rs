//! Consistency resampling on fixed per-entry bins (the calibration test): every row's label
//! redrawn from its own predicted distribution, scores and bins unchanged, each resample's
//! table reduced as the data's ([`consistency`]); and the same draws for a Python callable
//! ([`consistency_draws`]).
//!
//! The cells, their exact unit sums and the counter-based draws are the bootstrap's
//! ([`crate::kernels::weighted::resample`]): a resample's outcome sums are the redrawn hits'
//! count units, exact in `i128`, so every resample is the same for any thread count.

use rayon::prelude::*;

use crate::kernels::core::reduce::reduce;
use crate::kernels::core::units;
use crate::kernels::weighted::draws::{draw, stream_key, tag, unit};
use crate::kernels::weighted::hits::{hit_sums, LANES as HIT_LANES};
use crate::kernels::weighted::resample::{fill_blocks, run_blocks, Cells, Terms, DROPPED, FAST_CELLS};
use crate::kernels::{BinStats, KernelError, Norm};

/// The draws below which a top-label row of confidence `s` is redrawn correct: [`redraw`]'s
/// test `u < s`, with `u = k * 2^-53` for the 53-bit integer `k = x >> 11` of the random bits
/// `x` ([`unit`]), is `k < hit_threshold(s)` (`k < s * 2^53` exactly, the scaling being exact,
/// and for a whole `k` that is `k < ceil(s * 2^53)`; no hit for `s <= 0` or NaN). An integer
/// compare per draw instead of a conversion and a float compare.
#[inline]
fn hit_threshold(s: f64) -> u64 {
    let y = s * (1u64 << 53) as f64;
    // (NaN too)
    if y.is_nan() || y <= 0.0 {
        return 0;
    }
    // beyond 2^53 every draw hits; below, the ceiling by a truncation (no libm call)
    let y = y.min((1u64 << 53) as f64 + 1.0);
    let t = y as u64;
    t + ((t as f64) < y) as u64
}

/// [`consistency`] for one entry per row (top-label): counts and score sums are the data's,
/// only the outcome sums are redrawn. The rows are grouped by cell, and each resample sums a
/// cell's hits over its run in registers ([`hit_threshold`]: an integer test per row). Same
/// numbers as the general loop (exact unit sums).
fn consistency_top(cells: &Cells<'_>, t: &Terms, norm: Norm, class_conditional: bool, seed: u64, n_resamples: usize) -> Result<Vec<f64>, KernelError> {
    let nc = cells.groups * cells.nb;
    let base = cells.unit_sums(t);
    // rows grouped by cell (dropped rows left out): (row's tag, hit threshold, count units)
    let (cell, start) = cells.by_cell();
    let mut fill = start.clone();
    let mut rows = vec![(0u64, 0u64, 0u64); start[nc]];
    for (i, &c) in cell.iter().enumerate().filter(|(_, &c)| c != DROPPED) {
        rows[fill[c as usize]] = (tag(i as u64), hit_threshold(cells.score[i]), t.count[i] as u64);
        fill[c as usize] += 1;
    }
    let plain = cells.base.is_none();
    // rows whose count units one `u64` sum takes: as many as cannot wrap it, by the largest
    // count units of the call (below 2^61: at least 7 rows; about 2^13 for weights within a
    // factor 2^12 of each other, whose units are about 2^50)
    let most = rows.iter().map(|r| r.2).max().unwrap_or(0);
    let hit_run = (u64::MAX / most.max(1)).min(1 << 30) as usize;
    // HIT_LANES resamples per pass over the rows ([`hit_sums`]; each row read once for them)
    fill_blocks(n_resamples, HIT_LANES, |range, out| {
        let (r0, lanes) = (range.start, range.len());
        let mut keys = [0u64; HIT_LANES];
        for (j, k) in keys.iter_mut().enumerate() {
            *k = stream_key(seed, (r0 + j) as u64);
        }
        let mut ys = vec![[0i128; HIT_LANES]; nc];
        for (c, y) in ys.iter_mut().enumerate() {
            let run = &rows[start[c]..start[c + 1]];
            if plain {
                // with no base weights a hit adds one row's 2^50 units: count the hits
                let h = hit_sums(run, &keys, false);
                for j in 0..HIT_LANES {
                    y[j] = h[j] as i128 * units::SCALE as i128;
                }
            } else {
                // the hits' count units (each below 2^61, [`Scales::of_terms`]) summed in
                // `u64` over runs of `hit_run` rows, then folded into `i128`
                let mut wide = [0i128; HIT_LANES];
                for part in run.chunks(hit_run) {
                    for (w, s) in wide.iter_mut().zip(hit_sums(part, &keys, true)) {
                        *w = w.wrapping_add(s as i128);
                    }
                }
                *y = wide;
            }
        }
        let mut st = t.sc.table(cells.groups, cells.nb);
        for (j, o) in out.iter_mut().enumerate().take(lanes) {
            for (c, y) in ys.iter().enumerate() {
                t.sc.write(&mut st, c, base.count[c], base.score[c], y[j]);
            }
            *o = reduce(&st, norm, class_conditional);
        }
    })
}

/// The metric on `n_resamples` consistency resamples: every row's label redrawn from its own
/// predicted distribution, scores and bins unchanged.
///
/// `width == 1` (top-label): the outcome is a Bernoulli(score) draw. `width == K`: a class is
/// drawn by inverse CDF over the row's cumulative sum of scores (the row's full probability
/// vector must be in `score`, kept or not). Bins are fixed per entry: exact for even bins, and
/// for adaptive bins too, since their edges depend on the scores only.
pub fn consistency(
    cells: &Cells<'_>,
    norm: Norm,
    class_conditional: bool,
    seed: u64,
    n_resamples: usize,
) -> Result<Vec<f64>, KernelError> {
    cells.check()?;
    let t = cells.terms();
    if cells.width == 1 && cells.groups * cells.nb <= FAST_CELLS {
        return consistency_top(cells, &t, norm, class_conditional, seed, n_resamples);
    }
    let n = cells.rows();
    let k = cells.width;
    let nc = cells.groups * cells.nb;
    let base = cells.unit_sums(&t);
    let plain = cells.base.is_none();
    // with no base weights a hit adds one row's 2^50 units: count the hits
    run_blocks(n_resamples, |r, s: &mut (Vec<u64>, Vec<i128>, Option<BinStats>)| {
        let (hits, acc, st) = s;
        hits.clear();
        hits.resize(if plain { nc } else { 0 }, 0);
        acc.clear();
        acc.resize(if plain { 0 } else { nc }, 0);
        let key = stream_key(seed, r as u64);
        for i in 0..n {
            let hit = redraw(&cells.score[i * k..(i + 1) * k], unit(draw(key, i as u64)));
            if (hit as usize) < k {
                let c = cells.cell[i * k + hit as usize] as usize;
                if let Some(h) = hits.get_mut(c) {
                    *h += 1;
                } else if let Some(o) = acc.get_mut(c) {
                    *o = o.wrapping_add(t.count[i] as i128);
                }
            }
        }
        let st = st.get_or_insert_with(|| t.sc.table(cells.groups, cells.nb));
        for c in 0..nc {
            let y = if plain { hits[c] as i128 * units::SCALE as i128 } else { acc[c] };
            t.sc.write(st, c, base.count[c], base.score[c], y);
        }
        reduce(st, norm, class_conditional)
    })
}

/// The outcome a consistency resample draws for one row from the uniform `u`: a top-label row
/// (one score, the confidence) is correct (column 0) when `u < score`, else [`DROPPED`]; a row of
/// K probabilities gives the class whose running sum first exceeds `u * total` (inverse CDF; a
/// target past the last sum, by rounding, takes the last class).
#[inline(always)]
fn redraw(row: &[f64], u: f64) -> u32 {
    if row.len() == 1 {
        return if u < row[0] { 0 } else { DROPPED };
    }
    let total: f64 = row.iter().sum();
    let target = u * total;
    let mut acc = 0.0;
    for (j, &p) in row.iter().enumerate() {
        acc += p;
        if target < acc {
            return j as u32;
        }
    }
    (row.len() - 1) as u32
}

/// The labels [`consistency`] draws, for callers that recompute a metric themselves (a Python
/// callable): resamples `r0..r0 + count` of `n = score.len() / width` rows, row-major
/// `(count, n)`, by [`redraw`] with the same uniforms (keyed by (seed, resample, row)), so
/// the same seed gives the same draws as [`consistency`] on the same scores, for any thread
/// count. `width == K`: each row's redrawn class in `0..K` (the row's probabilities in `score`;
/// a top-label metric of the matrix redraws only "correct" from the confidence, which is the
/// same law but not the same draw); `width == 1`: 1 when the prediction is redrawn correct,
/// else 0 (the confidence in `score`). The scores must be validated probabilities; a
/// non-finite one is refused.
pub fn consistency_draws(score: &[f64], width: usize, seed: u64, r0: usize, count: usize) -> Result<Vec<i64>, KernelError> {
    if width == 0 || !score.len().is_multiple_of(width) {
        return Err(KernelError::Shape(format!(
            "scores hold {} values, not rows of {width}; pass an (N, K) matrix",
            score.len()
        )));
    }
    if let Some(i) = score.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFinite { row: i / width, col: i % width, value: score[i] });
    }
    let n = score.len() / width;
    let too_many = || KernelError::Parameter(format!("{count} resamples of {n} rows are too many labels to hold; draw fewer at a time"));
    let len = count.checked_mul(n).ok_or_else(too_many)?;
    let mut out: Vec<i64> = Vec::new();
    out.try_reserve_exact(len).map_err(|_| too_many())?;
    out.resize(len, 0);
    if n == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(n).enumerate().for_each(|(j, labels)| {
        let key = stream_key(seed, r0.wrapping_add(j) as u64);
        for (i, label) in labels.iter_mut().enumerate() {
            let hit = redraw(&score[i * width..(i + 1) * width], unit(draw(key, i as u64)));
            *label = if width == 1 { i64::from(hit == 0) } else { i64::from(hit) };
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::weighted::draws::{bits, uniform};
    use crate::kernels::weighted::resample::tests::toy;

    #[test]
    fn consistency_draws_follow_the_redraw_rule() {
        // Top-label: the draws are Bernoulli(confidence), the same u as `consistency`.
        let conf = [0.9, 0.1, 0.5, 1.0, 0.0];
        let d = consistency_draws(&conf, 1, 11, 3, 2).unwrap();
        for j in 0..2 {
            let key = stream_key(11, (3 + j) as u64);
            for (i, &c) in conf.iter().enumerate() {
                let want = i64::from(unit(draw(key, i as u64)) < c);
                assert_eq!(d[j * conf.len() + i], want);
            }
        }
        // K classes: every label in range, frequencies follow the row.
        let row = [0.2, 0.0, 0.8];
        let probs: Vec<f64> = row.iter().copied().cycle().take(3 * 20_000).collect();
        let d = consistency_draws(&probs, 3, 5, 0, 1).unwrap();
        assert!(d.iter().all(|&l| (0..3).contains(&l) && l != 1));
        let share = d.iter().filter(|&&l| l == 2).count() as f64 / d.len() as f64;
        assert!((share - 0.8).abs() < 0.01, "{share}");
        // A block of resamples gives each resample's own draws (keyed by (seed, r, row)).
        let all = consistency_draws(&probs, 3, 5, 0, 4).unwrap();
        let one = consistency_draws(&probs, 3, 5, 2, 1).unwrap();
        assert_eq!(&all[2 * 20_000..3 * 20_000], &one[..]);
        assert!(consistency_draws(&[0.5, f64::NAN], 1, 0, 0, 1).is_err());
        assert!(consistency_draws(&[0.5, 0.5, 0.2], 2, 0, 0, 1).is_err());
        assert!(consistency_draws(&[0.5; 4], 1, 0, 0, usize::MAX).is_err());
        assert!(consistency_draws(&[0.5; 4], 1, 0, 0, 1 << 60).is_err());
    }

    /// The integer hit test of the top-label consistency loop is `redraw`'s, for every score
    /// (edges of the grid of draws, tiny, negative, beyond 1, NaN) and random draws.
    #[test]
    fn hit_threshold_is_the_redraw_test() {
        let k53 = (1u64 << 53) as f64;
        let mut scores = vec![0.0, -0.0, 1.0, 0.5, 1.0 + 1e-4, -1e-4, 5e-324, 1e-300, 2.0, 1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        for k in [1u64, 2, 3, 12345, (1 << 52) + 1, (1 << 53) - 1] {
            let y = k as f64 / k53;
            scores.extend([y, y.next_up(), y.next_down()]);
        }
        scores.extend((0..2000).map(|i| uniform(5, 1, i)));
        for &s in &scores {
            let t = hit_threshold(s);
            let mut xs: Vec<u64> = (0..200).map(|i| bits(9, 2, i)).collect();
            // the draws next to the threshold
            for k in [t.saturating_sub(1), t, t + 1] {
                xs.extend([k << 11, (k << 11) | 0x7ff]);
            }
            for x in xs {
                assert_eq!((x >> 11) < t, redraw(&[s], unit(x)) == 0, "s {s:e} x {x}");
            }
        }
    }

    #[test]
    fn fast_consistency_equals_a_direct_redraw() {
        let (c, s, h) = toy();
        let base = [1.0, 2.5, 0.0, 1.5, 0.75, 3.0];
        for b in [None, Some(&base[..])] {
            let cells = Cells { cell: &c, score: &s, hit: &h, base: b, width: 1, groups: 1, nb: 3 };
            let fast = consistency(&cells, Norm::L1, false, 4, 19).unwrap();
            for (r, v) in fast.iter().enumerate() {
                let key = stream_key(4, r as u64);
                let hit: Vec<u32> = (0..6).map(|i| if unit(draw(key, i as u64)) < s[i] { 0 } else { DROPPED }).collect();
                let one = Cells { cell: &c, score: &s, hit: &hit, base: b, width: 1, groups: 1, nb: 3 };
                assert_eq!(reduce(&one.stats(), Norm::L1, false), *v, "resample {r}");
            }
        }
    }

    /// Weights that lift the count units near 2^61: the weighted test's `u64` runs must end
    /// every few rows (`hit_run`), or its sums would wrap.
    #[test]
    fn consistency_with_count_units_near_their_bound() {
        let n = 40;
        let c = vec![0u32; n];
        let s: Vec<f64> = (0..n).map(|i| 0.55 + i as f64 / 100.0).collect();
        let h = vec![0u32; n];
        let base: Vec<f64> = (0..n).map(|i| 2040.0 + (i % 7) as f64).collect();
        let cells = Cells { cell: &c, score: &s, hit: &h, base: Some(&base), width: 1, groups: 1, nb: 1 };
        assert!(cells.terms().count.iter().all(|&u| u > 1 << 60), "count units are not near their bound");
        for (r, v) in consistency(&cells, Norm::L1, false, 4, 9).unwrap().iter().enumerate() {
            let key = stream_key(4, r as u64);
            let hit: Vec<u32> = (0..n).map(|i| if unit(draw(key, i as u64)) < s[i] { 0 } else { DROPPED }).collect();
            let one = Cells { hit: &hit, ..cells };
            assert_eq!(reduce(&one.stats(), Norm::L1, false), *v, "resample {r}");
        }
    }

    #[test]
    fn consistency_of_certain_predictions_is_zero() {
        let c = vec![0u32, 1, 1];
        let s = vec![0.0, 1.0, 1.0];
        let h = vec![DROPPED; 3];
        let cells = Cells { cell: &c, score: &s, hit: &h, base: None, width: 1, groups: 1, nb: 2 };
        let v = consistency(&cells, Norm::L1, false, 1, 10).unwrap();
        assert!(v.iter().all(|&x| x == 0.0));
    }
}
