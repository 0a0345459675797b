//! Per-entry cells (`cells.rs`, what the trust layer and the histogram recalibrators bin with):
//! each cell against a plain count of the upper edges `<=` the score (even edges as
//! `np.linspace` computes them, or the given edges), the threshold rule (`score > threshold`),
//! and the cells' counts against the weighted primitive's table at the same bins. Arbitrary
//! bytes (NaN, infinite, negative scores; any group ids, bin counts, edges and thresholds;
//! mismatched lengths): a value or an error, never a panic.
#![no_main]

use calibkit::kernels::weighted::cells::{table_cells, Groups, TableBins, DROPPED};
use calibkit::kernels::weighted::grouped::{grouped_bin_stats, grouped_bin_stats_at, GroupedRows};
use calibkit::kernels::Binning;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let mode = r.u8();
    let n = r.u8() as usize;
    if mode & 1 == 1 {
        let ng = r.u32() as usize % 1_000_000;
        let b = r.u32() as usize % 2_000_000;
        let s: Vec<f64> = (0..n).map(|_| if r.bool() { r.f64() } else { r.u8() as f64 / 255.0 }).collect();
        let g: Vec<i64> = (0..n.saturating_sub((mode >> 4) as usize % 2)).map(|_| r.u8() as i8 as i64).collect();
        let e: Vec<f64> = (0..(r.u16() as usize)).map(|_| if r.u8() == 0 { f64::NAN } else { r.u8() as f64 / 255.0 }).collect();
        let thr = if r.bool() { Some(r.f64()) } else { None };
        let _ = table_cells(&s, Groups::Ids(&g), ng, &TableBins::Even(b), thr);
        let _ = table_cells(&s, Groups::One, ng, &TableBins::Edges { num_bins: b, edges: &e }, thr);
        let s32: Vec<f32> = s.iter().map(|&v| v as f32).collect();
        let _ = table_cells(&s32, Groups::Ids(&g), ng, &TableBins::Edges { num_bins: b, edges: &e }, thr);
        return;
    }
    let ng = 1 + (r.u8() % 5) as usize;
    let b = 1 + (r.u8() % 40) as usize;
    let levels = 1 + (r.u8() % 30) as usize;
    let thr = match r.u8() % 4 {
        0 => None,
        1 => Some(0.0),
        _ => Some((r.u8() % 8) as f64 / 8.0),
    };
    let (mut s, mut g) = (vec![], vec![]);
    for _ in 0..n {
        let x = r.u8();
        s.push(match x % 8 {
            0 => 1.0,
            1 => (r.u8() as usize % (b + 1)) as f64 / b as f64, // j / B
            2 => (r.u8() as usize % (b + 1)) as f64 * (1.0 / b as f64), // the even edge itself
            3 => thr.unwrap_or(0.0),
            _ => (r.u8() as usize % (levels + 1)) as f64 / levels as f64,
        });
        g.push((r.u8() as usize % ng) as i64);
    }
    let kept = |i: usize| thr.is_none_or(|t| s[i] > t);
    // even bins
    let upper: Vec<f64> = (1..=b).map(|j| if j == b { 1.0 } else { j as f64 * (1.0 / b as f64) }).collect();
    let c = table_cells(&s, Groups::Ids(&g), ng, &TableBins::Even(b), thr).expect("valid input");
    for i in 0..n {
        let want = if kept(i) { g[i] as u32 * (b as u32 + 1) + upper.iter().filter(|&&e| e <= s[i]).count() as u32 } else { DROPPED };
        assert_eq!(c[i], want, "even B={b} s={} thr={thr:?}", s[i]);
    }
    let o = vec![0.0; n];
    let rows = GroupedRows { groups: Some(&g), scores: &s, outcomes: &o, weights: None, num_groups: ng };
    let st = grouped_bin_stats(&rows, Binning::Even, b).expect("valid input");
    let all = table_cells(&s, Groups::Ids(&g), ng, &TableBins::Even(b), None).expect("valid input");
    let mut counts = vec![0.0; st.count.len()];
    for &ci in &all {
        counts[ci as usize] += 1.0;
    }
    assert_eq!(counts, st.count, "even counts");
    // given edges: sorted draws per group, some groups without edges (NaN)
    let mut edges = Vec::new();
    let mut empty = vec![false; ng];
    for (gi, e) in empty.iter_mut().enumerate() {
        edges.push(0.0);
        let mut inner: Vec<f64> = (1..b).map(|_| (r.u8() as usize % (levels + 1)) as f64 / levels as f64).collect();
        inner.sort_by(|a, c| a.partial_cmp(c).unwrap());
        *e = b > 1 && !g.contains(&(gi as i64)) && r.bool();
        if *e {
            inner.iter_mut().for_each(|x| *x = f64::NAN);
        }
        edges.extend(inner);
        edges.push(1.0);
    }
    let c = table_cells(&s, Groups::Ids(&g), ng, &TableBins::Edges { num_bins: b, edges: &edges }, thr).expect("valid input");
    for i in 0..n {
        let gi = g[i] as usize;
        let inner = &edges[gi * (b + 1) + 1..gi * (b + 1) + b];
        let want = if kept(i) { (gi * b + inner.iter().filter(|&&e| e <= s[i]).count()) as u32 } else { DROPPED };
        assert_eq!(c[i], want, "edges B={b} s={} thr={thr:?}", s[i]);
    }
    let all = table_cells(&s, Groups::Ids(&g), ng, &TableBins::Edges { num_bins: b, edges: &edges }, None).expect("valid input");
    let flat: Vec<f64> = (0..ng).flat_map(|gi| edges[gi * (b + 1) + 1..gi * (b + 1) + b].iter().map(|&e| if e.is_nan() { 0.0 } else { e })).collect();
    let st = grouped_bin_stats_at(&rows, &flat, b).expect("valid edges");
    let mut counts = vec![0.0; st.count.len()];
    for &ci in &all {
        counts[ci as usize] += 1.0;
    }
    assert_eq!(counts, st.count, "counts at the edges");
});

