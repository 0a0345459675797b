//! Tests of the pair kernels: against the matrix form, bad pairs named, AVX2 twins bitwise
//! their portable ones, the pooled path at both levels, thread counts.

use super::grouped::{cells_of_portable, push_block_portable, Buffers, PairTables};
#[cfg(target_arch = "x86_64")]
use super::grouped::x86;
use super::pooled::{pooled_chunk, pooled_fits, push_pooled, push_pooled_portable, POOLED_MAX_BINS};
use super::*;
use crate::kernels::core::validate::RANGE_TOL;
use crate::kernels::core::validate::Checks;
use crate::kernels::{Inputs, Norm};

/// A matrix whose rows have the given top-label confidences and predictions.
fn matrix(conf: &[f64], pred: &[i64], k: usize) -> Vec<f64> {
    let mut m = Vec::with_capacity(conf.len() * k);
    for (&c, &p) in conf.iter().zip(pred) {
        let rest = (1.0 - c) / (k - 1) as f64;
        for j in 0..k {
            m.push(if j as i64 == p { c } else { rest });
        }
    }
    m
}

fn data(n: usize, k: usize) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let mut state = 12345u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut conf = Vec::new();
    let mut pred = Vec::new();
    let mut labels = Vec::new();
    for i in 0..n {
        let lo = 1.0 / k as f64;
        let c = if i % 97 == 0 { 1.0 } else { lo + (1.0 - lo) * next() };
        let c = if c <= lo { lo + 1e-9 } else { c };
        conf.push(c);
        let p = (next() * k as f64) as i64 % k as i64;
        pred.push(p);
        labels.push(if next() < c { p } else { (p + 1) % k as i64 });
    }
    (conf, pred, labels)
}

#[test]
fn equals_the_matrix_form() {
    // (600 classes: a class-conditional table too large for the interleaved copies.)
    for (k, n) in [(4, 1usize), (4, 7), (4, 300), (4, 70_000), (4, 140_001), (600, 3001)] {
        let (conf, pred, labels) = data(n, k);
        let correct: Vec<u8> = pred.iter().zip(&labels).map(|(p, l)| (p == l) as u8).collect();
        let m = matrix(&conf, &pred, k);
        let x = Inputs::new(&m, &labels, k).unwrap();
        let pairs = Pairs::new(&conf, &correct, Some(&pred), k).unwrap();
        // Without predicted classes the pooled groupings take the pooled path.
        let pooled = Pairs::new(&conf, &correct, None, k).unwrap();
        for binning in [Binning::Even, Binning::Adaptive] {
            for cc in [false, true] {
                for threshold in [0.0, 0.5] {
                    let g = Grouping { binning, max_prob: true, class_conditional: cc, threshold };
                    for (norm, num_bins) in [(Norm::L1, 10), (Norm::L2, 10), (Norm::Max, 10), (Norm::L1, 15), (Norm::L1, 49)] {
                        let spec = GceSpec { grouping: g, norm, num_bins };
                        let a = crate::kernels::gce(&x, &spec, &Checks::ALL).unwrap();
                        let b = gce(&pairs, &spec).unwrap();
                        // Cell sums are exact in grid units on every path: the same bits.
                        assert_eq!(a.to_bits(), b.to_bits(), "{n} {g:?} {norm:?}: {a} vs {b}");
                        let ev = evaluate(&pairs, &[(g, norm)], &[num_bins]).unwrap();
                        assert_eq!(ev[0].to_bits(), b.to_bits());
                        if !cc {
                            let c = gce(&pooled, &spec).unwrap();
                            assert_eq!(a.to_bits(), c.to_bits(), "pooled {n} {g:?} {norm:?}: {a} vs {c}");
                            // Predicted classes change nothing in a pooled grouping.
                            assert_eq!(c.to_bits(), b.to_bits(), "pooled {n} {g:?} {norm:?}");
                            let st = bin_stats(&pooled, &g, num_bins).unwrap();
                            let sm = crate::kernels::bin_stats(&x, &g, num_bins, &Checks::ALL).unwrap();
                            assert_eq!(st.count, sm.count);
                            assert_eq!(st.sum_outcome, sm.sum_outcome);
                            assert_eq!(st.units, sm.units);
                            assert_eq!(st.sum_score, sm.sum_score);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn refuses_bad_pairs_naming_the_first() {
    let conf = vec![0.5f64; 200_000];
    let mut correct = vec![1u8; 200_000];
    correct[150_000] = 2;
    let p = Pairs::new(&conf, &correct, None, 1).unwrap();
    let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
    assert_eq!(bin_stats(&p, &g, 10).unwrap_err(), KernelError::BadCorrect { index: 150_000, value: 2 });
    let mut conf2 = conf.clone();
    conf2[160_000] = f64::NAN;
    conf2[170_000] = 1.5;
    let p = Pairs::new(&conf2, &correct, None, 1).unwrap();
    assert_eq!(bin_stats(&p, &g, 10).unwrap_err(), KernelError::BadCorrect { index: 150_000, value: 2 });
    correct[150_000] = 0;
    let p = Pairs::new(&conf2, &correct, None, 1).unwrap();
    let e = bin_stats(&p, &Grouping { binning: Binning::Adaptive, ..g }, 10).unwrap_err();
    assert!(matches!(e, KernelError::BadConfidence { index: 160_000, .. }));
    let pred = vec![3i64; 200_000];
    let p = Pairs::new(&conf, &correct, Some(&pred), 3).unwrap();
    let gc = Grouping { class_conditional: true, ..g };
    assert_eq!(bin_stats(&p, &gc, 10).unwrap_err(), KernelError::BadPredicted { index: 0, value: 3, num_classes: 3 });
    // Pooled groupings check the predicted classes too.
    assert_eq!(bin_stats(&p, &g, 10).unwrap_err(), KernelError::BadPredicted { index: 0, value: 3, num_classes: 3 });
    let mut pred2 = vec![0i64; 200_000];
    pred2[180_000] = -1;
    let p2 = Pairs::new(&conf, &correct, Some(&pred2), 3).unwrap();
    assert_eq!(bin_stats(&p2, &g, 10).unwrap_err(), KernelError::BadPredicted { index: 180_000, value: -1, num_classes: 3 });
    assert!(matches!(bin_stats(&p, &Grouping { max_prob: false, ..g }, 10), Err(KernelError::Parameter(_))));
    assert!(matches!(Pairs::new(&conf[..3], &correct[..2], None, 1), Err(KernelError::Shape(_))));
}

/// One pair check of a twin test.
type TwinCase<T> = fn(&Pairs<'_, T>, &Grouping, usize, Option<usize>);

/// The cases of the AVX2-twin tests: valid pairs (f64 and f32, with and without predicted
/// classes), a NaN confidence at index 4 (f64 and f32) and the predicted class `bad_pred` at
/// index 2, for both groupings, two thresholds and three bin counts; each is checked with
/// `f64_case` or `f32_case` (given the index of the failing pair, if any).
#[cfg(target_arch = "x86_64")]
fn twin_cases(conf: &[f64], correct: &[u8], pred: &[i64], bad_pred: i64, f64_case: TwinCase<f64>, f32_case: TwinCase<f32>) {
    let conf32: Vec<f32> = conf.iter().map(|&v| v as f32).collect();
    let mut conf_bad = conf.to_vec();
    conf_bad[4] = f64::NAN;
    let conf_bad32: Vec<f32> = conf_bad.iter().map(|&v| v as f32).collect();
    let mut pred_bad = pred.to_vec();
    pred_bad[2] = bad_pred;
    for cc in [false, true] {
        for threshold in [0.0, 0.5] {
            let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: cc, threshold };
            for b in [1, 10, 15] {
                f64_case(&Pairs::new(conf, correct, Some(pred), 7).unwrap(), &g, b, None);
                f32_case(&Pairs::new(&conf32, correct, Some(pred), 7).unwrap(), &g, b, None);
                if !cc {
                    f64_case(&Pairs::new(conf, correct, None, 7).unwrap(), &g, b, None);
                }
                f64_case(&Pairs::new(&conf_bad, correct, Some(pred), 7).unwrap(), &g, b, Some(4));
                f32_case(&Pairs::new(&conf_bad32, correct, Some(pred), 7).unwrap(), &g, b, Some(4));
                f64_case(&Pairs::new(conf, correct, Some(&pred_bad), 7).unwrap(), &g, b, Some(2));
            }
        }
    }
}

#[test]
fn pair_cells_avx2_twin_is_the_portable_one_bitwise() {
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        let (conf, pred, labels) = data(BLOCK + 3, 7);
        let mut correct: Vec<u8> = pred.iter().zip(&labels).map(|(p, l)| (p == l) as u8).collect();
        fn both<T: Score>(x: &Pairs<'_, T>, g: &Grouping, b: usize, bad_at: Option<usize>) {
            let e = EvenEdges::new(b);
            let drop = (g.groups(x.k) * b) as u32;
            for block in [0..x.n.min(BLOCK), 3..x.n.min(BLOCK + 3), 0..5, 2..3] {
                let new = || Box::new(Buffers { scores: [0.0; BLOCK], cells: [0; BLOCK], incs: [0; BLOCK] });
                let (mut a, mut p) = (new(), new());
                // SAFETY: AVX2 was detected by the caller; the block lies in the input.
                let (done, ok_a) = unsafe { x86::cells_of(x, g, &e, drop, block.clone(), &mut a) };
                let ok_a = ok_a & cells_of_portable(x, g, &e, drop, block.clone(), done, &mut a);
                let ok_p = cells_of_portable(x, g, &e, drop, block.clone(), 0, &mut p);
                assert_eq!(ok_a, ok_p, "{g:?} {block:?}");
                let valid = bad_at.is_none_or(|i| !block.contains(&i));
                assert_eq!(ok_p, valid, "{g:?} {block:?}");
                if valid {
                    let n = block.len();
                    let bits = |v: &[f64]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a.scores[..n]), bits(&p.scores[..n]), "{g:?} {block:?}");
                    assert_eq!(a.cells[..n], p.cells[..n], "{g:?} {block:?}");
                    assert_eq!(a.incs[..n], p.incs[..n], "{g:?} {block:?}");
                }
            }
        }
        twin_cases(&conf, &correct, &pred, 7, both::<f64>, both::<f32>);
        correct[3] = 2;
        let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
        both(&Pairs::new(&conf, &correct, None, 7).unwrap(), &g, 15, Some(3));
    }
}

#[test]
fn fused_pair_tables_avx2_twin_is_the_portable_one_bitwise() {
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        let (conf, pred, labels) = data(3 * BLOCK + 3, 7);
        let correct: Vec<u8> = pred.iter().zip(&labels).map(|(p, l)| (p == l) as u8).collect();
        fn both<T: Score>(x: &Pairs<'_, T>, g: &Grouping, b: usize, bad_at: Option<usize>) {
            let e = EvenEdges::new(b);
            let cells = g.groups(x.k) * e.num_bins();
            for block in [0..x.n.min(BLOCK), 3..x.n.min(BLOCK + 3), 0..5, 2..3, 0..x.n] {
                let (mut a, mut p) = (PairTables::new(cells), PairTables::new(cells));
                // SAFETY: AVX2 was detected by the caller; the block lies in the input.
                let (done, ok_a) = unsafe { x86::push_block(x, g, &e, block.clone(), &mut a) };
                let ok_a = ok_a & push_block_portable(x, g, &e, block.clone(), done, &mut a);
                let ok_p = push_block_portable(x, g, &e, block.clone(), 0, &mut p);
                assert_eq!(ok_a, ok_p, "{g:?} {block:?}");
                assert_eq!(ok_p, bad_at.is_none_or(|i| !block.contains(&i)), "{g:?} {block:?}");
                if ok_p {
                    assert_eq!(a.data, p.data, "{g:?} {block:?}");
                }
            }
        }
        twin_cases(&conf, &correct, &pred, -1, both::<f64>, both::<f32>);
    }
}

/// Confidences at and around every even edge of `b` bins, the exact ends and the tolerance
/// band, then `n` more spread over [0, 1] (ordered so that runs of one bin occur too).
fn edge_cases(b: usize, n: usize) -> Vec<f64> {
    let step = 1.0 / b as f64;
    let mut v = vec![0.0, -0.0, 1.0, 1.0 + RANGE_TOL, -RANGE_TOL, 1e-300, f64::MIN_POSITIVE, 5e-324, 0.5, 1.0 - f64::EPSILON / 2.0];
    for j in 0..=b + 1 {
        let u = if j == b { 1.0 } else { j as f64 * step };
        for d in -3i64..=3 {
            let w = f64::from_bits((u.to_bits() as i64 + d).max(0) as u64);
            if (-RANGE_TOL..=1.0 + RANGE_TOL).contains(&w) {
                v.push(w);
            }
        }
    }
    let mut state = 99u64;
    for i in 0..n {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = (state >> 11) as f64 / (1u64 << 53) as f64;
        v.push(if i % 300 < 40 { 0.97 } else { r });
    }
    v
}

/// The pooled path's statistics of `x` for `b` bins over one chunk, bitwise, through the
/// dispatcher (the AVX2 twin on an AVX2 CPU) or through the portable function alone.
fn pooled_bits<T: Score>(x: &Pairs<'_, T>, threshold: f64, b: usize, portable: bool) -> Option<Vec<u64>> {
    let e = EvenEdges::new(b);
    let st = if portable {
        pooled_chunk(x, threshold, &e, 0..x.n, |x, t, e, r, tab| push_pooled_portable(x, t, e, r, 0, tab))
    } else {
        pooled_chunk(x, threshold, &e, 0..x.n, push_pooled)
    }
    .ok()?;
    let units = st.units.iter().flat_map(|&u| [(u >> 64) as u64, u as u64]);
    Some(st.count.iter().chain(&st.sum_outcome).map(|v| v.to_bits()).chain(units).collect())
}

#[test]
fn pooled_path_avx2_twin_is_the_portable_one_bitwise() {
    for b in [1, 2, 10, 15, 49, 98, 100, 1000, POOLED_MAX_BINS] {
        assert!(pooled_fits(&EvenEdges::new(b), 0.0));
        for n in [0, 5, 3 * BLOCK + 5, 40_000] {
            let conf = edge_cases(b, n);
            let correct: Vec<u8> = (0..conf.len()).map(|i| ((i * 7) % 3 == 0) as u8).collect();
            // (f32 rounding may push the tolerance ends outside it: those become 0.5.)
            let conf32: Vec<f32> = conf.iter().map(|&v| if (-RANGE_TOL..=1.0 + RANGE_TOL).contains(&(v as f32 as f64)) { v as f32 } else { 0.5 }).collect();
            for threshold in [0.0, 0.3, 1.0 / b as f64, 0.97] {
                for start in [0, 3] {
                    let (c, o) = (&conf[start..], &correct[start..]);
                    let x = Pairs::new(c, o, None, 1).unwrap();
                    let p = pooled_bits(&x, threshold, b, true).expect("valid input");
                    assert_eq!(pooled_bits(&x, threshold, b, false).unwrap(), p, "b {b} n {n} t {threshold}");
                    // The bins are the edges' (the portable path uses EvenEdges::bin).
                    let st = pooled_chunk(&x, threshold, &EvenEdges::new(b), 0..x.n, push_pooled).unwrap();
                    let mut want = vec![0.0; b + 1];
                    for &s in c.iter().filter(|&&s| s > threshold) {
                        want[EvenEdges::new(b).bin(s)] += 1.0;
                    }
                    assert_eq!(st.count, want, "b {b} n {n} t {threshold}");
                    let x32 = Pairs::new(&conf32[start..], o, None, 1).unwrap();
                    let p32 = pooled_bits(&x32, threshold, b, true).expect("valid input");
                    assert_eq!(pooled_bits(&x32, threshold, b, false).unwrap(), p32);
                }
            }
        }
    }
}

#[test]
fn bin_counts_beyond_the_pooled_path_take_the_grouped_one() {
    for b in [POOLED_MAX_BINS + 1, 20_000] {
        assert!(!pooled_fits(&EvenEdges::new(b), 0.0));
        let conf = edge_cases(b, 1000);
        let correct = vec![1u8; conf.len()];
        let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
        let st = bin_stats(&Pairs::new(&conf, &correct, None, 1).unwrap(), &g, b).unwrap();
        let mut want = vec![0.0; b + 1];
        for &s in conf.iter().filter(|&&s| s > 0.0) {
            want[EvenEdges::new(b).bin(s)] += 1.0;
        }
        assert_eq!(st.count, want);
    }
    assert!(!pooled_fits(&EvenEdges::new(15), -0.1));
}

#[test]
fn pooled_path_refuses_every_bad_pair_at_both_levels() {
    let conf = edge_cases(15, 2 * BLOCK);
    let correct = vec![1u8; conf.len()];
    for at in [0, 7, 8, 300, conf.len() - 1] {
        for bad in [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0 + 2.0 * RANGE_TOL, -2.0 * RANGE_TOL, 7.0, -1e300] {
            let mut c = conf.clone();
            c[at] = bad;
            let x = Pairs::new(&c, &correct, None, 1).unwrap();
            for threshold in [0.0, 0.5] {
                for portable in [true, false] {
                    assert!(pooled_bits(&x, threshold, 15, portable).is_none(), "{bad} at {at}");
                }
            }
            let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
            let x = Pairs::new(&c32, &correct, None, 1).unwrap();
            assert!(pooled_bits(&x, 0.0, 15, false).is_none(), "f32 {bad} at {at}");
        }
        for bad in [2u8, 3, 255] {
            let mut o = correct.clone();
            o[at] = bad;
            let x = Pairs::new(&conf, &o, None, 1).unwrap();
            for portable in [true, false] {
                assert!(pooled_bits(&x, 0.0, 15, portable).is_none(), "correct {bad} at {at}");
            }
        }
    }
    // Through the public entry: the first bad pair is named.
    let mut c = vec![0.5f64; 300_000];
    c[200_001] = f64::NAN;
    c[250_000] = 2.0;
    let o = vec![0u8; c.len()];
    let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
    let e = bin_stats(&Pairs::new(&c, &o, None, 1).unwrap(), &g, 15).unwrap_err();
    assert!(matches!(e, KernelError::BadConfidence { index: 200_001, .. }), "{e:?}");
}

#[test]
fn pooled_path_is_the_same_for_any_number_of_threads() {
    let conf = edge_cases(15, 300_000);
    let correct: Vec<u8> = (0..conf.len()).map(|i| (i % 3 == 0) as u8).collect();
    let x = Pairs::new(&conf, &correct, None, 1).unwrap();
    let g = Grouping { binning: Binning::Even, max_prob: true, class_conditional: false, threshold: 0.0 };
    let run = |t: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let st = pool.install(|| bin_stats(&x, &g, 15).unwrap());
        st.count.iter().chain(&st.sum_score).chain(&st.sum_outcome).map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(run(2), one);
    assert_eq!(run(3), one);
}

#[test]
fn a_pair_no_longer_failing_is_input_changed() {
    let conf = vec![0.5f64; 10];
    let correct = vec![1u8; 10];
    let x = Pairs::new(&conf, &correct, None, 1).unwrap();
    assert_eq!(x.first_error(0..10), KernelError::InputChanged);
}

/// A predicted class out of range once the pairs were validated (what another thread writing
/// `predicted` during an adaptive call looks like) is InputChanged when grouping, not an index
/// panic; pooled groupings ignore the class.
#[test]
fn a_predicted_class_changed_after_validation_is_input_changed() {
    let (conf, correct) = ([0.9, 0.6, 0.8], [1u8, 0, 1]);
    let cc = Grouping { binning: Binning::Adaptive, max_prob: true, class_conditional: true, threshold: 0.0 };
    for bad in [3i64, -1, i64::MIN] {
        let pred = [0, bad, 2];
        let x = Pairs::new(&conf[..], &correct, Some(&pred), 3).unwrap();
        assert_eq!(group_members(&x, &cc).err(), Some(KernelError::InputChanged), "{bad}");
        let pooled = Grouping { class_conditional: false, ..cc };
        assert_eq!(group_members(&x, &pooled).unwrap()[0].len(), 3);
    }
}
