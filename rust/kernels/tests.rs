//! Unit tests of the pure kernels: SPEC's worked example, edge rules, validation errors,
//! shared-work evaluation, and bitwise determinism across thread counts.

use super::core::edges::{adaptive_edges, adaptive_positions, bin_by_edges, EvenEdges};
use super::core::validate::Checks;
use super::*;

/// Uniform draws in [0, 1) from a xorshift generator seeded with `seed` (non-zero): the
/// deterministic test data of the kernel tests.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> f64 {
    let mut bits = xorshift_bits(seed);
    move || (bits() >> 11) as f64 / (1u64 << 53) as f64
}

/// The raw 64-bit states of [`xorshift`]'s generator (`seed` non-zero).
pub(crate) fn xorshift_bits(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

const P: [[f64; 3]; 10] = [
    [0.70, 0.20, 0.10],
    [0.50, 0.30, 0.20],
    [0.15, 0.60, 0.25],
    [0.40, 0.35, 0.25],
    [0.005, 0.195, 0.80],
    [0.90, 0.05, 0.05],
    [0.30, 0.45, 0.25],
    [0.20, 0.25, 0.55],
    [0.34, 0.33, 0.33],
    [0.10, 0.85, 0.05],
];
const Y: [i64; 10] = [0, 1, 1, 2, 2, 0, 0, 1, 0, 1];
const EXPECTED: [f64; 32] = [
    0.189888888888889, 0.257556897705256, 0.189888888888889, 0.257556897705256,
    0.159000000000000, 0.160693808219234, 0.159000000000000, 0.160693808219234,
    0.111333333333333, 0.145404703423850, 0.114796296296296, 0.147270065601337,
    0.079333333333333, 0.108491854330822, 0.082241379310345, 0.110473337224635,
    0.313444444444444, 0.352298799947494, 0.313444444444444, 0.352298799947494,
    0.099000000000000, 0.104956340129281, 0.099000000000000, 0.104956340129281,
    0.112000000000000, 0.136022873893409, 0.130759259259259, 0.163879566589856,
    0.120000000000000, 0.122780291578087, 0.165344827586207, 0.178953133914808,
];

fn paper_metric(i: usize) -> (Grouping, Norm) {
    let g = Grouping {
        binning: if i & 16 != 0 { Binning::Adaptive } else { Binning::Even },
        max_prob: i & 8 == 0,
        class_conditional: i & 4 == 0,
        threshold: if i & 2 != 0 { 0.01 } else { 0.0 },
    };
    (g, if i & 1 != 0 { Norm::L2 } else { Norm::L1 })
}

fn flat() -> Vec<f64> {
    P.iter().flatten().copied().collect()
}

#[test]
fn worked_example_all_32_metrics() {
    let p = flat();
    let x = Inputs::new(&p, &Y, 3).unwrap();
    for (i, want) in EXPECTED.iter().enumerate() {
        let (grouping, norm) = paper_metric(i);
        let got = gce(&x, &GceSpec { grouping, norm, num_bins: 3 }, &Checks::ALL).unwrap();
        assert!((got - want).abs() < 1e-12, "metric {i}: {got} vs {want}");
    }
}

#[test]
fn worked_example_float32_within_rounding() {
    let p: Vec<f32> = flat().iter().map(|&v| v as f32).collect();
    let x = Inputs::new(&p, &Y, 3).unwrap();
    for (i, want) in EXPECTED.iter().enumerate() {
        let (grouping, norm) = paper_metric(i);
        let got = gce(&x, &GceSpec { grouping, norm, num_bins: 3 }, &Checks::ALL).unwrap();
        assert!((got - want).abs() < 1e-6, "metric {i}: {got} vs {want}");
    }
}

#[test]
fn evaluate_equals_single_calls() {
    let p = flat();
    let x = Inputs::new(&p, &Y, 3).unwrap();
    let metrics: Vec<(Grouping, Norm)> = (0..32).map(paper_metric).collect();
    let bins = [1, 2, 3, 7];
    let all = evaluate(&x, &metrics, &bins, &Checks::ALL).unwrap();
    for (m, &(grouping, norm)) in metrics.iter().enumerate() {
        for (bi, &b) in bins.iter().enumerate() {
            let one = gce(&x, &GceSpec { grouping, norm, num_bins: b }, &Checks::ALL).unwrap();
            // Adaptive metrics gather a different set of edge buckets when several bin counts
            // share the pass, so sums may differ in the last bit (never more).
            let got = all[m * bins.len() + bi];
            assert!((got - one).abs() <= 1e-15, "metric {m} bins {b}: {got} vs {one}");
        }
    }
}

#[test]
fn even_edges_follow_linspace() {
    let e = EvenEdges::new(10);
    // np.linspace(0, 1, 11)[3] == 0.30000000000000004, so 0.3 is still in bin 2.
    assert_eq!(e.bin(0.3), 2);
    assert_eq!(e.bin(3.0 * 0.1), 3);
    assert_eq!(e.bin(0.0), 0);
    assert_eq!(e.bin(0.999_999), 9);
    assert_eq!(e.bin(1.0), 10, "1.0 gets the extra bin");
    assert_eq!(e.bin(1.00005), 10);
    for b in 1..60 {
        let e = EvenEdges::new(b);
        let step = 1.0 / b as f64;
        for j in 1..b {
            let u = j as f64 * step;
            assert_eq!(e.bin(u), j, "B={b} edge {j}");
            assert_eq!(e.bin(f64::from_bits(u.to_bits() - 1)), j - 1, "B={b} below edge {j}");
        }
    }
}

#[test]
fn even_bin_equals_counting_edges_and_batch() {
    // The arithmetic binning equals "number of linspace upper edges <= s" (B for s >= 1),
    // everywhere: edges and their neighbours, out-of-range values, +-0, infinities, NaN.
    let mut rnd = xorshift(7);
    for b in [1usize, 2, 3, 7, 10, 15, 30, 100, 1000, 65_537] {
        let e = EvenEdges::new(b);
        let upper: Vec<f64> = (1..=b).map(|j| if j == b { 1.0 } else { j as f64 * (1.0 / b as f64) }).collect();
        let mut vals = vec![0.0, -0.0, 1.0, -1e-4, 1.0001, 2.0, -3.0, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, 1e-300];
        for u in upper.iter().take(200) {
            vals.extend([*u, u.next_up(), u.next_down()]);
        }
        vals.extend((0..2000).map(|_| rnd() * 1.2 - 0.1));
        // The vector binning (four at a time) where the CPU has it.
        let mut batch: Vec<Option<u32>> = vec![None; vals.len()];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            for (i, four) in vals.chunks_exact(4).enumerate() {
                let mut out = [0i32; 4];
                // SAFETY: AVX2 is present; `out` holds four i32.
                unsafe {
                    use std::arch::x86_64::*;
                    let bins = e.bin4(_mm256_loadu_pd(four.as_ptr()));
                    _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, bins);
                }
                for (l, o) in out.iter().enumerate() {
                    batch[4 * i + l] = Some(*o as u32);
                }
            }
        }
        for (&v, &got) in vals.iter().zip(&batch) {
            let want = if v >= 1.0 { b } else { upper.partition_point(|&u| u <= v) };
            assert_eq!(e.bin(v), want, "B={b} s={v:e}");
            if let Some(got) = got {
                assert_eq!(got as usize, want, "vector B={b} s={v:e}");
            }
        }
        assert_eq!(e.bin(f64::NAN), 0);
    }
}

#[test]
fn adaptive_positions_round_half_even() {
    // n = 10, B = 3: positions round(3.33) = 3, round(6.67) = 7 -> sizes [3, 4, 3].
    assert_eq!(adaptive_positions(10, 3), vec![3, 7]);
    // n = 5, B = 2: 2.5 rounds to 2 (half to even).
    assert_eq!(adaptive_positions(5, 2), vec![2]);
    // n < B: clipped to n - 1.
    assert_eq!(adaptive_positions(2, 5), vec![0, 1, 1, 1]);
    let sorted = [0.1, 0.2, 0.2, 0.2, 0.5];
    let edges = adaptive_edges(&sorted, 2);
    assert_eq!(edges, vec![0.2]);
    // Ties on an edge move to the upper bin.
    assert_eq!(bin_by_edges(&edges, 0.2), 1);
    assert_eq!(bin_by_edges(&edges, 0.1), 0);
}

#[test]
fn adaptive_bin_sizes_3_4_3() {
    let p: Vec<f64> = (0..10).flat_map(|i| {
        let s = 0.5 + 0.04 * i as f64;
        [s, 1.0 - s]
    }).collect();
    let y = [0i64; 10];
    let x = Inputs::new(&p, &y, 2).unwrap();
    let g = Grouping { binning: Binning::Adaptive, max_prob: true, class_conditional: false, threshold: 0.0 };
    let st = bin_stats(&x, &g, 3, &Checks::ALL).unwrap();
    assert_eq!(st.count, vec![3.0, 4.0, 3.0]);
}

#[test]
fn threshold_is_strict_and_drops_exact_zero() {
    let p = [1.0, 0.0, 0.0, 1.0];
    let y = [0i64, 1];
    let x = Inputs::new(&p, &y, 2).unwrap();
    let g = Grouping { binning: Binning::Even, max_prob: false, class_conditional: false, threshold: 0.0 };
    let st = bin_stats(&x, &g, 4, &Checks::ALL).unwrap();
    assert_eq!(st.count.iter().sum::<f64>(), 2.0);
}

#[test]
fn validation_errors_name_the_entry() {
    let mut p = flat();
    p[3 * 4 + 1] = f64::NAN;
    let x = Inputs::new(&p, &Y, 3).unwrap();
    let spec = GceSpec { grouping: paper_metric(4).0, norm: Norm::L1, num_bins: 3 };
    assert!(matches!(gce(&x, &spec, &Checks::ALL), Err(KernelError::NonFinite { row: 4, col: 1, .. })));
    let mut p = flat();
    p[2] = 2.5;
    let x = Inputs::new(&p, &Y, 3).unwrap();
    for i in [4, 8, 24, 28] {
        let (grouping, norm) = paper_metric(i);
        let r = gce(&x, &GceSpec { grouping, norm, num_bins: 3 }, &Checks::ALL);
        assert!(matches!(r, Err(KernelError::OutOfRange { row: 0, col: 2, .. })), "metric {i}: {r:?}");
    }
    let mut p = flat();
    p[0] = 0.6;
    let x = Inputs::new(&p, &Y, 3).unwrap();
    assert!(matches!(gce(&x, &spec, &Checks::ALL), Err(KernelError::RowSum { row: 0, .. })));
    let no_sums = Checks { row_sums: false, ..Checks::ALL };
    assert!(gce(&x, &spec, &no_sums).is_ok());
    let p = flat();
    let mut y = Y;
    y[9] = 3;
    let x = Inputs::new(&p, &y, 3).unwrap();
    assert!(matches!(
        gce(&x, &spec, &Checks::ALL),
        Err(KernelError::LabelOutOfRange { index: 9, label: 3, num_classes: 3 })
    ));
    assert!(matches!(Inputs::new(&p, &Y[..9], 3), Err(KernelError::Shape(_))));
    assert!(matches!(Inputs::<f64>::new(&[], &[], 3), Err(KernelError::Shape(_))));
    let bad = GceSpec { num_bins: 0, ..spec };
    assert!(matches!(gce(&Inputs::new(&p, &Y, 3).unwrap(), &bad, &Checks::ALL), Err(KernelError::Parameter(_))));
}

fn random_probs(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let mut rnd = xorshift(seed);
    let mut p = vec![0.0; n * k];
    let mut y = vec![0; n];
    for i in 0..n {
        let row = &mut p[i * k..(i + 1) * k];
        let mut t = 0.0;
        for v in row.iter_mut() {
            *v = (8.0 * rnd()).exp();
            t += *v;
        }
        row.iter_mut().for_each(|v| *v /= t);
        y[i] = (rnd() * k as f64) as i64 % k as i64;
    }
    (p, y)
}

#[test]
fn bitwise_identical_across_thread_counts() {
    // (4100, 260): over 2^20 entries and 256 classes, so `evaluate` makes its top-label tables
    // and reduces its class-conditional ones in parallel (`space::parallel`)
    for (n, k) in [(60_000, 5), (3000, 200), (13_001, 10), (4100, 260)] {
        let (p, y) = random_probs(n, k, 7);
        let x = Inputs::new(&p, &y, k).unwrap();
        let metrics: Vec<(Grouping, Norm)> = (0..32).map(paper_metric).collect();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    // Both entry points: the shared evaluation and the single-metric kernels
                    // (the even top-label ones split short inputs across threads too).
                    let mut v = evaluate(&x, &metrics, &[10, 15], &Checks::ALL).unwrap();
                    for &(grouping, norm) in &metrics {
                        v.push(gce(&x, &GceSpec { grouping, norm, num_bins: 15 }, &Checks::ALL).unwrap());
                    }
                    v
                })
        };
        let one: Vec<u64> = run(1).iter().map(|v| v.to_bits()).collect();
        for t in [2, 3, 4] {
            let other: Vec<u64> = run(t).iter().map(|v| v.to_bits()).collect();
            assert_eq!(one, other, "N={n} K={k} threads={t}");
        }
    }
}

#[test]
fn adaptive_histogram_path_matches_sorting() {
    // The histogram selection must give exactly the bins a full sort gives.
    let (p, y) = random_probs(5000, 7, 3);
    let x = Inputs::new(&p, &y, 7).unwrap();
    for cc in [true, false] {
        for thr in [0.0, 0.01, 0.2] {
            let g = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: cc, threshold: thr };
            let st = bin_stats(&x, &g, 13, &Checks::ALL).unwrap();
            let groups: Vec<Vec<usize>> = if cc { (0..7).map(|c| vec![c]).collect() } else { vec![(0..7).collect()] };
            for (gi, cols) in groups.iter().enumerate() {
                let mut vals: Vec<(f64, bool)> = (0..5000)
                    .flat_map(|i| cols.iter().map(move |&c| (i, c)))
                    .map(|(i, c)| (p[i * 7 + c], y[i] as usize == c))
                    .filter(|v| v.0 > thr)
                    .collect();
                vals.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
                let sorted: Vec<f64> = vals.iter().map(|v| v.0).collect();
                let edges = adaptive_edges(&sorted, 13);
                let mut count = [0.0; 13];
                let mut pos = [0.0; 13];
                for &(s, o) in &vals {
                    let b = bin_by_edges(&edges, s);
                    count[b] += 1.0;
                    pos[b] += o as u8 as f64;
                }
                assert_eq!(&st.count[gi * 13..(gi + 1) * 13], &count[..], "cc={cc} thr={thr} group {gi}");
                assert_eq!(&st.sum_outcome[gi * 13..(gi + 1) * 13], &pos[..]);
            }
        }
    }
}

/// The pooled histogram pass over several chunks (`allprobs_hist`'s `POOLED_CHUNK_ENTRIES`,
/// 2^20 entries: 1.2M entries make two): counts and outcomes are those of a full sort, score
/// sums within rounding of the sorted ones, and the tables are the same bits at 1 and 3
/// threads (each chunk's partial histogram and gathered list are added in chunk order).
#[test]
fn pooled_adaptive_over_several_chunks_matches_sorting() {
    let (n, k) = (300_000usize, 4usize);
    let (p, y) = random_probs(n, k, 17);
    let x = Inputs::new(&p, &y, k).unwrap();
    for thr in [0.0, 0.01] {
        let g = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: false, threshold: thr };
        let mut vals: Vec<(f64, bool)> =
            (0..n * k).map(|i| (p[i], y[i / k] as usize == i % k)).filter(|v| v.0 > thr).collect();
        vals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let sorted: Vec<f64> = vals.iter().map(|v| v.0).collect();
        for b in [13usize, 100] {
            let tables = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| bin_stats(&x, &g, b, &Checks::ALL).unwrap())
            };
            let st = tables(3);
            assert_eq!(st, tables(1), "thr={thr} B={b}");
            let edges = adaptive_edges(&sorted, b);
            let (mut count, mut pos, mut score) = (vec![0.0; b], vec![0.0; b], vec![0.0; b]);
            for &(s, o) in &vals {
                let bin = bin_by_edges(&edges, s);
                count[bin] += 1.0;
                pos[bin] += o as u8 as f64;
                score[bin] += s;
            }
            assert_eq!(st.count, count, "thr={thr} B={b}");
            assert_eq!(st.sum_outcome, pos, "thr={thr} B={b}");
            for (a, e) in st.sum_score.iter().zip(&score) {
                assert!((a - e).abs() <= 1e-9 * e.abs().max(1.0), "thr={thr} B={b}: {a} vs {e}");
            }
        }
    }
}

/// The same rows in another order give the same pooled tables, bit for bit, when the rows are
/// sorted so that the members of the wanted buckets crowd into a few chunks (their gathered
/// lists then outgrow each chunk's share of the wanted values and grow).
#[test]
fn pooled_adaptive_tables_do_not_depend_on_the_row_order() {
    let (n, k) = (400_000usize, 4usize);
    let (p, y) = random_probs(n, k, 29);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| p[a * k].total_cmp(&p[b * k]));
    let ps: Vec<f64> = order.iter().flat_map(|&i| p[i * k..(i + 1) * k].iter().copied()).collect();
    let ys: Vec<i64> = order.iter().map(|&i| y[i]).collect();
    let (x, xs) = (Inputs::new(&p, &y, k).unwrap(), Inputs::new(&ps, &ys, k).unwrap());
    for thr in [0.0, 0.01] {
        let g = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: false, threshold: thr };
        for b in [15usize, 200] {
            assert_eq!(bin_stats(&x, &g, b, &Checks::ALL).unwrap(), bin_stats(&xs, &g, b, &Checks::ALL).unwrap(), "thr={thr} B={b}");
        }
    }
}
