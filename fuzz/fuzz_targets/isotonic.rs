//! Isotonic regression by pool-adjacent-violators (`isotonic.rs`) against a naive O(n^2) PAV:
//! pool rows of equal x, drop zero-weight blocks, then merge the first adjacent pair of blocks
//! whose means decrease until none does; a zero-weight block takes the value of the weighted
//! block before it (after it when it comes first). Fitted values to 1e-9; the fit is
//! non-decreasing in x; integer weights equal repeated rows. Ties, -0.0, negative and huge x.
//! Arbitrary bytes (NaN, infinite, negative weights, mismatched lengths): a value or an error,
//! never a panic.
#![no_main]

use calibkit::kernels::binfree::isotonic::isotonic_fit;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fn naive(x: &[f64], y: &[f64], w: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| x[a].partial_cmp(&x[b]).unwrap());
    // tie blocks: (rows, sum w*y, sum w)
    let mut ties: Vec<(Vec<usize>, f64, f64)> = Vec::new();
    for &i in &idx {
        match ties.last_mut() {
            Some(t) if x[t.0[0]] == x[i] => {
                t.0.push(i);
                t.1 += w[i] * y[i];
                t.2 += w[i];
            }
            _ => ties.push((vec![i], w[i] * y[i], w[i])),
        }
    }
    // weighted blocks only, each remembering the tie blocks it covers
    let mut blocks: Vec<(Vec<usize>, f64, f64)> = ties.iter().enumerate().filter(|t| t.1 .2 > 0.0).map(|(j, t)| (vec![j], t.1, t.2)).collect();
    loop {
        let v = (0..blocks.len().saturating_sub(1)).find(|&j| blocks[j].1 / blocks[j].2 > blocks[j + 1].1 / blocks[j + 1].2);
        match v {
            Some(j) => {
                let b = blocks.remove(j + 1);
                blocks[j].0.extend(b.0);
                blocks[j].1 += b.1;
                blocks[j].2 += b.2;
            }
            None => break,
        }
    }
    let mut value_of_tie = vec![f64::NAN; ties.len()];
    for b in &blocks {
        for &t in &b.0 {
            value_of_tie[t] = b.1 / b.2;
        }
    }
    // zero-weight tie blocks: the value before them, else the first after them
    let first = value_of_tie.iter().copied().find(|v| !v.is_nan()).unwrap();
    let mut last = first;
    for v in value_of_tie.iter_mut() {
        if v.is_nan() {
            *v = last;
        } else {
            last = *v;
        }
    }
    let mut out = vec![0.0; n];
    for (t, tie) in ties.iter().enumerate() {
        for &i in &tie.0 {
            out[i] = value_of_tie[t];
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let mode = r.u8();
    let n = r.u8() as usize % 160;
    if mode & 1 == 1 {
        let x: Vec<f64> = (0..n).map(|_| if r.bool() { r.f64() } else { r.u8() as f64 }).collect();
        let y: Vec<f64> = (0..n.saturating_sub((mode >> 4) as usize % 2)).map(|_| if r.bool() { r.f64() } else { r.u8() as f64 }).collect();
        let w: Vec<f64> = (0..n).map(|_| if r.bool() { r.f64() } else { r.u8() as f64 }).collect();
        let _ = isotonic_fit(&x, &y, None);
        let _ = isotonic_fit(&x, &y, Some(&w));
        let _ = isotonic_fit(&x, &y, Some(&w[..w.len().saturating_sub(1)]));
        return;
    }
    let levels = 1 + (r.u8() % 30) as u32;
    let (mut x, mut y, mut w) = (vec![], vec![], vec![]);
    for _ in 0..n {
        let b = r.u8();
        x.push(match b % 16 {
            0 => -0.0,
            1 => -1e300,
            2 => 1e300,
            _ => (r.u8() as u32 % (levels + 1)) as f64 / levels as f64,
        });
        y.push(if mode & 2 == 2 { (r.u8() as f64 - 128.0) / 16.0 } else { (b >> 7) as f64 });
        w.push(if mode & 4 == 4 { (r.u8() % 4) as f64 * if mode & 8 == 8 { 0.37 } else { 1.0 } } else { 1.0 });
    }
    if x.is_empty() {
        assert!(isotonic_fit(&x, &y, None).is_err());
        return;
    }
    if w.iter().all(|&v| v == 0.0) {
        assert!(isotonic_fit(&x, &y, Some(&w)).is_err(), "zero total weight");
        return;
    }
    let got = isotonic_fit(&x, &y, Some(&w)).expect("valid input");
    let want = naive(&x, &y, &w);
    for i in 0..x.len() {
        assert!(close(got[i], want[i], 1e-9), "row {i}: {} vs naive {}", got[i], want[i]);
    }
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].partial_cmp(&x[b]).unwrap());
    for p in idx.windows(2) {
        assert!(got[p[0]] <= got[p[1]] + 1e-9 * (1.0 + got[p[1]].abs()), "not monotone: {} then {}", got[p[0]], got[p[1]]);
    }
    let unweighted = isotonic_fit(&x, &y, None).expect("valid input");
    let ones = naive(&x, &y, &vec![1.0; x.len()]);
    for i in 0..x.len() {
        assert!(close(unweighted[i], ones[i], 1e-9), "unweighted row {i}: {} vs {}", unweighted[i], ones[i]);
    }
    if mode & 8 == 0 {
        // integer weights are repeated rows
        let (mut rx, mut ry, mut from) = (vec![], vec![], vec![]);
        for i in 0..x.len() {
            for _ in 0..w[i] as usize {
                rx.push(x[i]);
                ry.push(y[i]);
                from.push(i);
            }
        }
        let rep = isotonic_fit(&rx, &ry, None).expect("valid input");
        for (j, &i) in from.iter().enumerate() {
            assert!(close(rep[j], got[i], 1e-9), "repeated row of {i}: {} vs {}", rep[j], got[i]);
        }
    }
});
