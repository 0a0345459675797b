//! The Kolmogorov-Smirnov calibration error (Gupta et al., ICLR 2021).
//!
//! Sort the N (score, outcome, weight) triples by score; the error is
//! `max_j |sum_{i <= j} w_i (s_i - o_i)| / sum_i w_i`, the maximum taken only at the last
//! element of each block of tied scores, so the order within ties does not matter.
//!
//! Fast path (unit weights, outcomes 0/1, scores >= 0): the score's f64 bit pattern (which
//! orders like the value for non-negative floats) shifted left once, with the outcome in the
//! low bit, is one u64 key; the LSD radix sort of the keys alone
//! ([`radix_sort_u64`](crate::kernels::core::order::radix_sort_u64): 11-bit digits, digits
//! that are the same for every key skipped) and one scan give the error. Otherwise: a comparison
//! sort of (order key, weighted residual, weight) triples and the same scan.

use crate::kernels::core::order::{order_key, radix_sort_u64};
use crate::kernels::KernelError;

/// The KS calibration error of (score, outcome) pairs with optional weights.
pub fn ks_error(scores: &[f64], outcomes: &[f64], weights: Option<&[f64]>) -> Result<f64, KernelError> {
    let n = scores.len();
    if outcomes.len() != n || weights.is_some_and(|w| w.len() != n) {
        return Err(KernelError::Shape(format!(
            "scores has {n} entries but outcomes has {} (and weights {:?}); pass one of each per prediction",
            outcomes.len(),
            weights.map(|w| w.len())
        )));
    }
    if n == 0 {
        return Err(KernelError::Shape("no predictions: pass at least one".into()));
    }
    if let Some(w) = weights {
        crate::kernels::core::validate::weights(w, "weights")?;
    }
    let fast = weights.is_none()
        && outcomes.iter().all(|&o| o == 0.0 || o == 1.0)
        && scores.iter().all(|&s| s >= 0.0 && s.is_finite());
    if fast {
        return Ok(ks_unit(scores, outcomes));
    }
    let mut t: Vec<(u64, f64, f64)> = match weights {
        None => scores.iter().zip(outcomes).map(|(&s, &o)| (order_key(s), s - o, 1.0)).collect(),
        Some(w) => scores
            .iter()
            .zip(outcomes)
            .zip(w)
            .map(|((&s, &o), &wi)| (order_key(s), wi * (s - o), wi))
            .collect(),
    };
    let total: f64 = t.iter().map(|e| e.2).sum();
    if total == 0.0 {
        return Err(KernelError::Parameter("the weights sum to 0: at least one prediction needs a positive weight".into()));
    }
    t.sort_unstable_by_key(|e| e.0);
    let mut s = 0.0f64;
    let mut best = 0.0f64;
    for (j, e) in t.iter().enumerate() {
        s += e.1;
        if j + 1 == n || t[j + 1].0 != e.0 {
            best = best.max(s.abs());
        }
    }
    Ok(best / total)
}

fn ks_unit(scores: &[f64], outcomes: &[f64]) -> f64 {
    let n = scores.len();
    let mut keys: Vec<u64> = scores
        .iter()
        .zip(outcomes)
        .map(|(&s, &o)| ((s + 0.0).to_bits() << 1) | (o as u64))
        .collect();
    radix_sort_u64(&mut keys);
    let mut s = 0.0f64;
    let mut best = 0.0f64;
    for j in 0..n {
        let k = keys[j];
        s += f64::from_bits(k >> 1) - (k & 1) as f64;
        if j + 1 == n || (keys[j + 1] >> 1) != (k >> 1) {
            best = best.max(s.abs());
        }
    }
    best / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(s: &[f64], o: &[f64], w: &[f64]) -> f64 {
        let mut idx: Vec<usize> = (0..s.len()).collect();
        idx.sort_by(|&a, &b| s[a].partial_cmp(&s[b]).unwrap());
        let tot: f64 = w.iter().sum();
        let (mut c, mut best) = (0.0f64, 0.0f64);
        for (j, &i) in idx.iter().enumerate() {
            c += w[i] * (s[i] - o[i]);
            if j + 1 == idx.len() || s[idx[j + 1]] != s[i] {
                best = best.max(c.abs());
            }
        }
        best / tot
    }

    fn lcg(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn fast_and_general_paths_agree_with_brute_force() {
        let mut st = 3u64;
        for n in [1usize, 2, 17, 1000] {
            // Coarse scores to make ties, plus exact 0 and 1.
            let s: Vec<f64> = (0..n).map(|i| if i % 7 == 0 { 1.0 } else if i % 11 == 0 { 0.0 } else { (lcg(&mut st) * 20.0).floor() / 20.0 }).collect();
            let o: Vec<f64> = (0..n).map(|_| (lcg(&mut st) < 0.6) as u8 as f64).collect();
            let ones = vec![1.0; n];
            let want = brute(&s, &o, &ones);
            assert!((ks_error(&s, &o, None).unwrap() - want).abs() < 1e-12);
            assert!((ks_error(&s, &o, Some(&ones)).unwrap() - want).abs() < 1e-12);
            let w: Vec<f64> = (0..n).map(|_| (lcg(&mut st) * 3.0).floor()).collect();
            if w.iter().sum::<f64>() > 0.0 {
                assert!((ks_error(&s, &o, Some(&w)).unwrap() - brute(&s, &o, &w)).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn ties_are_evaluated_at_block_ends() {
        // Both at 0.5, one right one wrong: order inside the tie must not matter.
        let a = ks_error(&[0.5, 0.5], &[1.0, 0.0], None).unwrap();
        let b = ks_error(&[0.5, 0.5], &[0.0, 1.0], None).unwrap();
        assert_eq!(a, 0.0);
        assert_eq!(b, 0.0);
    }

    #[test]
    fn negative_scores_and_bad_weights() {
        let v = ks_error(&[-1e-5, 0.3], &[0.0, 1.0], None).unwrap();
        assert!((v - brute(&[-1e-5, 0.3], &[0.0, 1.0], &[1.0, 1.0])).abs() < 1e-15);
        assert!(ks_error(&[0.3], &[1.0], Some(&[0.0])).is_err());
        assert!(ks_error(&[], &[], None).is_err());
        assert!(ks_error(&[0.3], &[], None).is_err());
    }
}
