//! The weighted binning primitive: integer weights equal repeated rows (counts and edges
//! exactly, sums to 1e-9), zero weights drop rows, and the unweighted result equals the
//! sort-based reference; fractional weights must not break anything.
#![no_main]

use calibkit::kernels::weighted::grouped::{grouped_bin_stats, grouped_bin_stats_at, GroupedRows};
use calibkit::kernels::Binning;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let ng = 1 + (r.u8() % 5) as usize;
    let b = 1 + (r.u8() % 30) as usize;
    let binning = if r.bool() { Binning::Adaptive } else { Binning::Even };
    let levels = 1 + (r.u8() % 20) as u32;
    let (mut g, mut s, mut o, mut w) = (vec![], vec![], vec![], vec![]);
    while r.left() >= 4 && g.len() < 300 {
        g.push((r.u8() as usize % ng) as i64);
        s.push(((r.u8() as u32) % (levels + 1)) as f64 / levels as f64);
        o.push((r.u8() & 1) as f64);
        w.push((r.u8() % 5) as f64);
    }
    let rows = GroupedRows { groups: Some(&g), scores: &s, outcomes: &o, weights: Some(&w), num_groups: ng };
    let got = grouped_bin_stats(&rows, binning, b).expect("valid input");
    let (mut rg, mut rs, mut ro) = (vec![], vec![], vec![]);
    for i in 0..g.len() {
        for _ in 0..w[i] as usize {
            rg.push(g[i]);
            rs.push(s[i]);
            ro.push(o[i]);
        }
    }
    let rep = GroupedRows { groups: Some(&rg), scores: &rs, outcomes: &ro, weights: None, num_groups: ng };
    let want = grouped_bin_stats(&rep, binning, b).expect("valid input");
    assert_same_stats("weights vs repeated rows", &got, &want, 1e-9, false);
    let tuples: Vec<(usize, f64, f64)> = (0..rg.len()).map(|i| (rg[i] as usize, rs[i], ro[i])).collect();
    let reference = reference_stats(&tuples, ng, binning, b, 0.0);
    assert_same_stats("repeated rows vs reference", &want, &reference, 1e-9, false);
    if binning == Binning::Adaptive && b > 1 {
        // counting against the edges found must give the same table
        let upper: Vec<f64> = (0..ng)
            .flat_map(|gi| got.edges[gi * (b + 1) + 1..gi * (b + 1) + b].iter().map(|&e| if e.is_nan() { 0.0 } else { e }))
            .collect();
        let at = grouped_bin_stats_at(&rows, &upper, b).expect("valid edges");
        assert_eq!(at.count, got.count);
        assert_eq!(at.sum_score, got.sum_score);
    }
    // fractional weights: any finite non-negative value works and the total weight is kept
    let frac: Vec<f64> = w.iter().zip(&s).map(|(&x, &y)| x * 0.37 + y).collect();
    let fr = GroupedRows { weights: Some(&frac), ..rows };
    let st = grouped_bin_stats(&fr, binning, b).expect("valid input");
    let total: f64 = st.count.iter().sum();
    let want_total: f64 = frac.iter().sum();
    assert!(close(total, want_total, 1e-9), "{total} vs {want_total}");
});
