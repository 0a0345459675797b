//! The vector top-label scan against the scalar definition: same maximum and first argmax for
//! every K it handles, float32 and float64, ragged final groups, ties, signed zeros (and so
//! does the portable scan that replaces it without AVX2); and it never misses a row that the
//! scalar checks reject.

use super::toplabel::summarise_rows;
use super::toplabel_scan::{scan, Suspect, Wide};
use super::validate::{row_ok, row_sum_and_bad, Checks};
use super::Score;

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rows summing to 1, with ties of the maximum and zeros (positive and negative) mixed in.
fn rows(n: usize, k: usize, seed: u64) -> Vec<f64> {
    let mut r = rng(seed);
    let mut p = vec![0.0; n * k];
    for i in 0..n {
        let row = &mut p[i * k..(i + 1) * k];
        let kind = (r() * 4.0) as usize;
        for v in row.iter_mut() {
            *v = match kind {
                0 => (r() * 8.0).floor(), // many ties
                1 if r() < 0.3 => if r() < 0.5 { 0.0 } else { -0.0 },
                _ => r(),
            };
        }
        let t: f64 = row.iter().sum();
        if t == 0.0 {
            row[k - 1] = 1.0;
        } else {
            row.iter_mut().for_each(|v| *v /= t);
        }
    }
    p
}

fn scalar_top<T: Score>(row: &[T]) -> (f64, u32) {
    let (mut mx, mut arg) = (f64::NEG_INFINITY, 0u32);
    for (j, v) in row.iter().enumerate() {
        if v.to_f64() > mx {
            mx = v.to_f64();
            arg = j as u32;
        }
    }
    (mx, arg)
}

fn check_same<T: Score + Wide>(p: &[T], k: usize) -> Option<Suspect> {
    let n = p.len() / k;
    let (mut conf, mut pred) = (vec![0.0; n], vec![0u32; n]);
    let s = scan(p, k, 0..n, &mut conf, &mut pred)?;
    // The portable fallback the kernels use without AVX2.
    let labels = vec![0i64; n];
    let x = super::Inputs::new(p, &labels, k).unwrap();
    let (mut conf2, mut pred2) = (vec![0.0; n], vec![0u32; n]);
    assert!(summarise_rows(&x, 0, &mut pred2, &mut conf2, &Checks::ALL));
    for i in 0..n {
        let (mx, arg) = scalar_top(&p[i * k..(i + 1) * k]);
        assert_eq!(conf[i].to_bits(), mx.to_bits(), "K={k} row {i}");
        assert_eq!(pred[i], arg, "K={k} row {i}");
        assert_eq!((conf2[i].to_bits(), pred2[i]), (mx.to_bits(), arg), "portable K={k} row {i}");
    }
    Some(s)
}

#[test]
fn vector_scan_equals_scalar_scan() {
    if !std::is_x86_feature_detected!("avx2") {
        return; // no vector path on this CPU: nothing to compare
    }
    for k in 1..=16 {
        for n in [1usize, 2, 3, 4, 5, 7, 8, 9, 33, 257] {
            let p = rows(n, k, (k * 1000 + n) as u64);
            let s = check_same(&p, k).expect("K <= 16 has a vector path");
            assert_eq!(s, Suspect::default(), "valid rows K={k} N={n}");
            let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
            check_same(&p32, k).expect("K <= 16 has a vector path");
        }
    }
    let p = rows(4, 17, 1);
    assert!(scan(&p, 17, 0..4, &mut [0.0; 4], &mut [0; 4]).is_none(), "K > 16 has no vector path");
}

#[test]
fn vector_scan_never_misses_a_bad_row() {
    if !std::is_x86_feature_detected!("avx2") {
        return;
    }
    let bad_values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -0.01, 1.0 + 2e-4, -2e-4];
    let mut r = rng(99);
    for k in 1..=16 {
        for n in [1usize, 3, 4, 6, 9] {
            for &bad in &bad_values {
                for shift in [0.0, 0.002, -0.002] {
                    let mut p = rows(n, k, (k + n) as u64);
                    let i = (r() * n as f64) as usize;
                    let j = (r() * k as f64) as usize;
                    if shift == 0.0 {
                        p[i * k + j] = bad;
                    } else {
                        // A row whose sum is off by more than the tolerance, values in range.
                        let row = &mut p[i * k..(i + 1) * k];
                        let m = row.iter().cloned().fold(0.0, f64::max);
                        let at = row.iter().position(|&v| v == m).unwrap();
                        row[at] = (row[at] + shift).clamp(0.0, 1.0);
                    }
                    let row = &p[i * k..(i + 1) * k];
                    let (sum, bad_value) = row_sum_and_bad(row);
                    let values_fail = !row_ok(sum, bad_value, &Checks { row_sums: false, ..Checks::ALL });
                    let sums_fail = !row_ok(sum, bad_value, &Checks { values: false, ..Checks::ALL });
                    let (mut conf, mut pred) = (vec![0.0; n], vec![0u32; n]);
                    let s = scan(&p, k, 0..n, &mut conf, &mut pred).unwrap();
                    assert!(!values_fail || s.values, "K={k} N={n} row {i} value {bad}");
                    assert!(!sums_fail || s.sums || s.values, "K={k} N={n} row {i} sum {sum}");
                    assert!(pred.iter().all(|&a| (a as usize) < k));
                    let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
                    let s32 = scan(&p32, k, 0..n, &mut conf, &mut pred).unwrap();
                    let (sum32, bad32) = row_sum_and_bad(&p32[i * k..(i + 1) * k]);
                    assert!(row_ok(sum32, bad32, &Checks { row_sums: false, ..Checks::ALL }) || s32.values);
                    assert!(row_ok(sum32, bad32, &Checks { values: false, ..Checks::ALL }) || s32.sums || s32.values);
                }
            }
        }
    }
}
