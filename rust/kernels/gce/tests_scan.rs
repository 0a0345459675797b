//! The vector top-label scan against the scalar definition: same maximum and first argmax for
//! every K it handles, float32 and float64, ragged final groups, ties, signed zeros (and so
//! does the portable scan that replaces it without AVX2); and it never misses a row that the
//! scalar checks reject.

use crate::kernels::core::score::Wide;
use crate::kernels::gce::toplabel_scan::{scan, summarise_rows, Suspect};
use crate::kernels::core::validate::{row_ok, row_sum_and_bad, Checks};
use crate::kernels::Score;

use crate::kernels::tests::xorshift as rng;

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
    let x = crate::kernels::Inputs::new(p, &labels, k).unwrap();
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

/// The scalar definition of the long-row scan: first argmax with strict `>`, maximum, the sum
/// in 8 lanes (lane order, then the tail), and whether some value is out of range or NaN.
#[allow(clippy::manual_range_contains)] // NaN is out of range
fn long_scalar<T: Score>(row: &[T]) -> (usize, f64, f64, bool) {
    use crate::kernels::core::validate::RANGE_TOL;
    let (mx, arg) = scalar_top(row);
    let mut lanes = [0.0f64; 8];
    let whole = row.len() / 8 * 8;
    for (j, v) in row[..whole].iter().enumerate() {
        lanes[j % 8] += v.to_f64();
    }
    let mut s = 0.0;
    for l in lanes {
        s += l;
    }
    for v in &row[whole..] {
        s += v.to_f64();
    }
    let bad = row.iter().any(|v| {
        let v = v.to_f64();
        !(v >= -RANGE_TOL && v <= 1.0 + RANGE_TOL)
    });
    (arg as usize, mx, s, bad)
}

fn bits(r: (usize, f64, f64, bool)) -> (usize, u64, u64, bool) {
    (r.0, r.1.to_bits(), r.2.to_bits(), r.3)
}

/// Long rows with ties, signed zeros, and (in some rows) NaN, infinities or out-of-range values.
fn long_rows(k: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut r = rng(seed);
    let mut out = Vec::new();
    for n in 0..120 {
        let mut row: Vec<f64> = rows(1, k, seed + n).into_iter().collect();
        match n % 10 {
            1 => {
                let j = (r() * k as f64) as usize;
                row[j] = f64::NAN;
            }
            2 => row[(r() * k as f64) as usize] = f64::INFINITY,
            3 => row[(r() * k as f64) as usize] = f64::NEG_INFINITY,
            4 => row[(r() * k as f64) as usize] = -0.5,
            5 => row[(r() * k as f64) as usize] = 1.5,
            6 => row.iter_mut().for_each(|v| *v = f64::NAN),
            7 => row.iter_mut().for_each(|v| *v = if r() < 0.5 { 0.0 } else { -0.0 }),
            8 => {
                // The maximum tied in several lanes and the tail.
                let m = 0.25;
                for j in [k - 1, k / 2, 3, 9] {
                    row[j] = m;
                }
            }
            9 => match n / 10 % 3 {
                // The maximum tied in one lane, in an odd chunk before an even one, with signed
                // zeros, or at exactly 1.
                0 => {
                    row[8 + 3] = 0.75;
                    if k > 19 {
                        row[16 + 3] = 0.75;
                    }
                    row[3] = -0.0;
                }
                1 => {
                    row.iter_mut().for_each(|v| *v = 0.0);
                    row[(r() * k as f64) as usize] = 1.0;
                    row[k - 1] = -0.0;
                }
                // The range limits exactly, and just outside.
                _ => {
                    use crate::kernels::core::validate::RANGE_TOL;
                    row[(r() * k as f64) as usize] = -RANGE_TOL;
                    row[(r() * k as f64) as usize] = 1.0 + RANGE_TOL;
                    if n % 20 == 9 {
                        row[(r() * k as f64) as usize] = f64::from_bits((1.0 + RANGE_TOL).to_bits() + 1);
                    }
                }
            },
            _ => {}
        }
        out.push(row);
    }
    out
}

#[test]
fn long_row_scan_is_the_scalar_definition_on_both_paths() {
    use crate::kernels::gce::toplabel_scan::{long_row, long_row_portable};
    for k in [17usize, 23, 24, 31, 32, 40, 64, 100, 1000, 1003] {
        for (i, row) in long_rows(k, k as u64).into_iter().enumerate() {
            let row32: Vec<f32> = row.iter().map(|&v| v as f32).collect();
            let want = bits(long_scalar(&row));
            let want32 = bits(long_scalar(&row32));
            assert_eq!(bits(long_row_portable(&row)), want, "portable f64 K={k} row {i}");
            assert_eq!(bits(long_row_portable(&row32)), want32, "portable f32 K={k} row {i}");
            // The dispatcher at every level this CPU has.
            for l in crate::kernels::core::simd::Level::ALL.into_iter().filter(|&l| l <= crate::kernels::core::simd::detect()) {
                crate::kernels::core::simd::with_level(l, || {
                    assert_eq!(bits(long_row(&row)), want, "dispatched f64 K={k} row {i} {l:?}");
                    assert_eq!(bits(long_row(&row32)), want32, "dispatched f32 K={k} row {i} {l:?}");
                });
            }
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                use crate::kernels::gce::toplabel_scan::long_x86;
                // SAFETY: AVX2 was detected just above; the rows are far below 2^24 chunks.
                let (a, b) = unsafe { (long_x86::long_row_f64(&row), long_x86::long_row_f32(&row32)) };
                assert_eq!(bits(a), want, "AVX2 f64 K={k} row {i}");
                assert_eq!(bits(b), want32, "AVX2 f32 K={k} row {i}");
            }
        }
    }
}
