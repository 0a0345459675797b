//! One table per metric whatever the entry point: the tables `evaluate` reduces
//! ([`space::for_each_table`]) against [`bin_stats`] (what `gce` and the `bin_stats` binding
//! run), for all 32 metrics of the paper's space, f32 and f64, short (K <= 16) and long rows,
//! inputs of one and of several chunks, even and adaptive, with and without the compaction
//! path, and bin counts with and without the raised twins of the even all-probabilities pass
//! (first edges above and below 0.01). Bitwise for every metric, as the table of paths in the
//! module doc says.

use super::core::validate::Checks;
use super::core::reduce;
use super::gce::space;
use super::*;

fn paper_metric(i: usize) -> (Grouping, Norm) {
    let g = Grouping {
        binning: if i & 16 != 0 { Binning::Adaptive } else { Binning::Even },
        max_prob: i & 8 == 0,
        class_conditional: i & 4 == 0,
        threshold: if i & 2 != 0 { 0.01 } else { 0.0 },
    };
    (g, if i & 1 != 0 { Norm::L2 } else { Norm::L1 })
}

/// Softmax rows with a few repeated values and exact ties, and labels.
fn data(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let mut rnd = crate::kernels::tests::xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut p = vec![0.0; n * k];
    for (i, row) in p.chunks_mut(k).enumerate() {
        if i % 7 == 0 {
            row.iter_mut().for_each(|v| *v = 1.0 / k as f64);
            continue;
        }
        row.iter_mut().for_each(|v| *v = (6.0 * rnd()).exp());
        let t: f64 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= t);
    }
    let y = (0..n).map(|_| (rnd() * k as f64) as i64 % k as i64).collect();
    (p, y)
}

fn check_paths<T: Score>(x: &Inputs<T>, what: &str) {
    for bins in [&[1usize, 3, 10, 15, 25][..], &[4, 120][..]] {
        check_paths_at(x, what, bins);
    }
}

fn check_paths_at<T: Score>(x: &Inputs<T>, what: &str, bins: &[usize]) {
    let metrics: Vec<(Grouping, Norm)> = (0..32).map(paper_metric).collect();
    let mut tables: Vec<Vec<Option<BinStats>>> = vec![vec![None; bins.len()]; 32];
    space::for_each_table(x, &metrics, bins, &Checks::ALL, |m, bi, t| tables[m][bi] = Some(t.clone())).unwrap();
    let values = space::evaluate(x, &metrics, bins, &Checks::ALL).unwrap();
    for (m, (g, norm)) in metrics.iter().enumerate() {
        for (bi, &b) in bins.iter().enumerate() {
            let at = format!("{what} metric {m} ({g:?}, {norm:?}) B={b}");
            let ev = tables[m][bi].as_ref().unwrap();
            let direct = bin_stats(x, g, b, &Checks::ALL).unwrap();
            let value = gce(x, &GceSpec { grouping: *g, norm: *norm, num_bins: b }, &Checks::ALL).unwrap();
            let ev_value = values[m * bins.len() + bi];
            assert_eq!(ev, &direct, "{at}");
            assert_eq!(ev_value.to_bits(), value.to_bits(), "{at}: {ev_value} vs {value}");
        }
    }
}

#[test]
fn evaluate_gce_and_bin_stats_take_the_same_path() {
    // (N, K): short rows (vector scan), 17+ columns, several chunks of the fused top-label
    // pass, and a many-class softmax (the threshold compacts it).
    for &(n, k) in &[(300usize, 3usize), (9000, 10), (2500, 17), (4000, 64), (40_000, 2)] {
        let (p, y) = data(n, k, (n * k) as u64);
        let x = Inputs::new(&p, &y, k).unwrap();
        check_paths(&x, &format!("f64 N={n} K={k}"));
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        let x = Inputs::new(&p32, &y, k).unwrap();
        check_paths(&x, &format!("f32 N={n} K={k}"));
    }
}

#[test]
fn paths_agree_for_any_thread_count() {
    let (p, y) = data(30_000, 12, 7);
    let x = Inputs::new(&p, &y, 12).unwrap();
    let metrics: Vec<(Grouping, Norm)> = (0..32).map(paper_metric).collect();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let ev = space::evaluate(&x, &metrics, &[15], &Checks::ALL).unwrap();
            let one: Vec<f64> = metrics
                .iter()
                .map(|&(grouping, norm)| gce(&x, &GceSpec { grouping, norm, num_bins: 15 }, &Checks::ALL).unwrap())
                .collect();
            (ev.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), one.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
        })
    };
    assert_eq!(run(1), run(2));
}

/// The table `bin_stats` gives, as the Python binding returns it (counts as int64, read back
/// as float64; no edges), accepted by [`reduce::check_table`] and reduced by
/// [`reduce::reduce`] (what `_native.reduce_table` runs) for each norm, the max norm
/// included: the round trip through Python changes no bit (`gce` itself reduces the table
/// before any conversion). `tests/test_paths.py` checks the binding end to end.
fn check_reduce_is_gce<T: Score>(x: &Inputs<T>, what: &str) {
    for i in 0..32 {
        let (g, _) = paper_metric(i);
        for norm in [Norm::L1, Norm::L2, Norm::Max] {
            for b in [1usize, 10, 15, 25] {
                let st = bin_stats(x, &g, b, &Checks::ALL).unwrap();
                let table = BinStats::from_sums(
                    st.groups,
                    st.nb,
                    st.count.iter().map(|&c| c as i64 as f64).collect(),
                    st.sum_score.clone(),
                    st.sum_outcome.clone(),
                );
                reduce::check_table(&table, g.class_conditional).unwrap();
                let reduced = reduce::reduce(&table, norm, g.class_conditional);
                let value = gce(x, &GceSpec { grouping: g, norm, num_bins: b }, &Checks::ALL).unwrap();
                assert_eq!(reduced.to_bits(), value.to_bits(), "{what} {g:?} {norm:?} B={b}: {reduced} vs {value}");
            }
        }
    }
}

/// One reduction: a table reduced on its own is bitwise the metric `gce` computes, on every
/// path of the table of paths (both element types, short and long rows).
#[test]
fn reduce_on_the_bin_stats_table_is_gce_bitwise() {
    for &(n, k) in &[(300usize, 3usize), (9000, 10), (2500, 17)] {
        let (p, y) = data(n, k, (n + k) as u64);
        check_reduce_is_gce(&Inputs::new(&p, &y, k).unwrap(), &format!("f64 N={n} K={k}"));
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        check_reduce_is_gce(&Inputs::new(&p32, &y, k).unwrap(), &format!("f32 N={n} K={k}"));
    }
}

/// Even all-probabilities metrics at more thresholds than the paper's two, some of which can
/// be raised twins of a lower one and some not (0.3 is above the first edge of 10 bins),
/// listed out of order: every table is still `bin_stats`' own, computed once. And an empty
/// list of bin counts is refused (its thresholds, NaN included, would go unchecked), not
/// looped on.
#[test]
fn even_metrics_at_any_thresholds_are_computed_once_each() {
    let (p, y) = data(3000, 20, 11);
    let x = Inputs::new(&p, &y, 20).unwrap();
    let mut metrics = Vec::new();
    for thr in [0.3, 0.0, 0.02, 0.01, 0.5] {
        for cc in [true, false] {
            metrics.push((Grouping { binning: Binning::Even, max_prob: false, class_conditional: cc, threshold: thr }, Norm::L1));
        }
    }
    let bins = [2usize, 10, 15];
    let mut seen = vec![0usize; metrics.len() * bins.len()];
    space::for_each_table(&x, &metrics, &bins, &Checks::ALL, |m, bi, t| {
        seen[m * bins.len() + bi] += 1;
        assert_eq!(t, &bin_stats(&x, &metrics[m].0, bins[bi], &Checks::ALL).unwrap(), "{:?} B={}", metrics[m].0, bins[bi]);
    })
    .unwrap();
    assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
    for thr in [0.0, f64::NAN] {
        let g = Grouping { binning: Binning::Even, max_prob: false, class_conditional: true, threshold: thr };
        let r = space::evaluate(&x, &[(g, Norm::L1)], &[], &Checks::ALL);
        assert!(matches!(r, Err(KernelError::Parameter(ref m)) if m.contains("at least one bin count")), "{r:?}");
    }
}
