//! The Kolmogorov-Smirnov calibration error (`ks.rs`): its radix-sorted fast path (unit weights,
//! 0/1 outcomes, non-negative scores) and its comparison-sorted general path against a plain
//! sort-based computation (sort by score, running sum of w * (score - outcome), maximum at the
//! end of each block of tied scores), on scores full of ties, exact 0 and 1, -0.0, tiny and
//! negative values, and integer weights against repeated rows. Arbitrary bytes (NaN, infinite,
//! negative weights, mismatched lengths): a value or an error, never a panic.
#![no_main]

use calibkit::kernels::binfree::ks::ks_error;
use calibkit::kernels::core::order::radix_sort_u64;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fn by_sorting(s: &[f64], o: &[f64], w: &[f64]) -> f64 {
    let mut idx: Vec<usize> = (0..s.len()).collect();
    idx.sort_by(|&a, &b| s[a].partial_cmp(&s[b]).unwrap());
    let total: f64 = w.iter().sum();
    let (mut c, mut best) = (0.0f64, 0.0f64);
    for (j, &i) in idx.iter().enumerate() {
        c += w[i] * (s[i] - o[i]);
        if j + 1 == idx.len() || s[idx[j + 1]] != s[i] {
            best = best.max(c.abs());
        }
    }
    best / total
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let mode = r.u8();
    let n = r.u8() as usize + if mode & 8 == 8 { 3000 } else { 0 };
    if mode & 1 == 1 {
        // arbitrary values and lengths
        let s: Vec<f64> = (0..n).map(|_| r.f64()).collect();
        let o: Vec<f64> = (0..n.saturating_sub((mode >> 4) as usize % 2)).map(|_| if r.bool() { r.f64() } else { (r.u8() & 1) as f64 }).collect();
        let w: Vec<f64> = (0..n).map(|_| if r.bool() { r.f64() } else { r.u8() as f64 }).collect();
        let _ = ks_error(&s, &o, None);
        let _ = ks_error(&s, &o, Some(&w));
        let _ = ks_error(&s, &o, Some(&w[..w.len().saturating_sub(1)]));
        let mut keys: Vec<u64> = (0..n).map(|_| r.u64()).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        radix_sort_u64(&mut keys);
        assert_eq!(keys, sorted, "radix sort");
        return;
    }
    let levels = 1 + (r.u8() % 40) as u32;
    let (mut s, mut o, mut w) = (vec![], vec![], vec![]);
    for _ in 0..n {
        let b = r.u8();
        s.push(match b % 16 {
            0 => 1.0,
            1 => 0.0,
            2 => -0.0,
            3 => 1e-300 * (r.u8() as f64),
            4 if mode & 2 == 2 => -(r.u8() as f64) / 255.0, // negative: the general path
            _ => (r.u8() as u32 % (levels + 1)) as f64 / levels as f64,
        });
        o.push(if mode & 4 == 4 && b & 32 == 32 { r.u8() as f64 / 255.0 } else { (b >> 7) as f64 });
        w.push((r.u8() % 4) as f64);
    }
    if s.is_empty() {
        assert!(ks_error(&s, &o, None).is_err());
        return;
    }
    let ones = vec![1.0; s.len()];
    let want = by_sorting(&s, &o, &ones);
    let got = ks_error(&s, &o, None).expect("valid input");
    assert!(close(got, want, 1e-12), "unweighted: {got} vs {want}");
    let got = ks_error(&s, &o, Some(&ones)).expect("valid input");
    assert!(close(got, want, 1e-12), "unit weights: {got} vs {want}");
    if w.iter().sum::<f64>() > 0.0 {
        let want = by_sorting(&s, &o, &w);
        let got = ks_error(&s, &o, Some(&w)).expect("valid input");
        assert!(close(got, want, 1e-12), "weighted: {got} vs {want}");
        // integer weights are repeated rows
        let (mut rs, mut ro) = (vec![], vec![]);
        for i in 0..s.len() {
            for _ in 0..w[i] as usize {
                rs.push(s[i]);
                ro.push(o[i]);
            }
        }
        let rep = ks_error(&rs, &ro, None).expect("valid input");
        assert!(close(got, rep, 1e-12), "weights vs repeated rows: {got} vs {rep}");
    } else {
        assert!(ks_error(&s, &o, Some(&w)).is_err(), "zero total weight");
    }
});
