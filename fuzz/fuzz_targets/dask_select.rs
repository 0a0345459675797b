//! The first pass of `calibkit.dask`'s exact selection (`kernels::gce::select::scan_matrix`
//! on the first pass's plans: every group's grid, tabled per bucket below a split and per
//! super-bucket above, at one or more thresholds sharing the read) against the plain rule: each
//! kept score's bucket by a search of the grid, its table and count added one by one. Grids
//! with and without a uniform run (the arithmetic lookup), splits anywhere, thresholds on and
//! between the bounds, float32 and float64, every grouping. Tables must agree exactly.
#![no_main]

use calibkit::kernels::core::units;
use calibkit::kernels::gce::select::{scan_matrix, Cell, Keyed, Plan, SUPER};
use calibkit::kernels::Inputs;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

/// The grid's bound values: the coordinator's shape (tiny powers of two, `u` equal steps on
/// [0, 1], steps toward 1, 1 and past it) and, if `extra`, a few irregular bounds besides.
fn grid_values(r: &mut Reader) -> Vec<f64> {
    let u = [8usize, 64, 256, 4096][(r.u8() % 4) as usize];
    let mut v: Vec<f64> = vec![-1.0, 0.0, 1.0, 2.0];
    v.extend((1..(1 + r.u8() % 40) as i32).map(|e| 2f64.powi(-e)));
    v.extend((0..=u).map(|i| i as f64 / u as f64));
    v.extend((1..(1 + r.u8() % 30) as i32).map(|j| 1.0 - 2f64.powi(-j)));
    if r.bool() {
        v.extend((0..r.u8() % 8).map(|_| r.u16() as f64 / 65536.0));
    }
    v
}

/// The plain rule for one plan: `entries` are (group, score, outcome).
fn plain<T: Keyed>(plan: &Plan, bounds: &[i64], fine: usize, entries: &[(usize, T, bool)]) -> (Vec<Cell>, Vec<u64>) {
    let (mut cells, mut counts) = (vec![Cell::default(); plan.size], vec![0u64; plan.counts_size]);
    let supers = (bounds.len() - 1 - fine).div_ceil(SUPER);
    for &(g, s, o) in entries {
        if !(s.to_f64() > plan.threshold) {
            continue;
        }
        let key = s.key();
        let b = bounds.partition_point(|&x| x <= key);
        if b == 0 || b == bounds.len() {
            continue; // outside the grid
        }
        let b = b - 1;
        let base = g * (supers + fine);
        let slot = if b < fine {
            base + supers + b
        } else {
            counts[SUPER * base + b - fine] += 1;
            base + (b - fine) / SUPER
        };
        let c = &mut cells[slot];
        c.count += 1;
        c.outcome += o as u64;
        c.units += units::units(s.to_f64()) as i128;
    }
    (cells, counts)
}

fn check<T: Keyed + Copy>(probs: &[T], labels: &[i64], k: usize, values: &[f64], split: f64, thresholds: &[f64]) {
    let mut bounds: Vec<i64> = values.iter().map(|&v| T::key_of_wide(v)).collect();
    bounds.push(T::key_of_wide(1.0) + 1);
    bounds.sort_unstable();
    bounds.dedup();
    let fine = bounds.partition_point(|&b| b < T::key_of_wide(split)).clamp(1, bounds.len() - 2);
    let x = Inputs::new(probs, labels, k).unwrap();
    for (mp, cc) in [(false, true), (true, true), (false, false), (true, false)] {
        let groups = if cc { k } else { 1 };
        let plans: Vec<Plan> = thresholds.iter().map(|&t| Plan::first_pass(t, groups, bounds.clone(), fine).unwrap()).collect();
        let mut entries = Vec::new();
        for (i, &label) in labels.iter().enumerate() {
            let row = &probs[i * k..(i + 1) * k];
            if mp {
                // the kernels' first-maximum rule
                let p = (1..k).fold(0, |best, c| if row[c].to_f64() > row[best].to_f64() { c } else { best });
                entries.push((if cc { p } else { 0 }, row[p], label == p as i64));
            } else {
                entries.extend(row.iter().enumerate().map(|(c, &s)| (if cc { c } else { 0 }, s, label == c as i64)));
            }
        }
        let got = scan_matrix(&x, mp, cc, &plans).expect("valid plans");
        for (plan, g) in plans.iter().zip(&got) {
            let (cells, counts) = plain(plan, &bounds, fine, &entries);
            let got_counts: Vec<u64> = g.counts.iter().map(|&c| c as u64).collect();
            assert_eq!(g.cells, cells, "cells: max_prob {mp}, class-conditional {cc}, threshold {}", plan.threshold);
            assert_eq!(got_counts, counts, "counts: max_prob {mp}, class-conditional {cc}, threshold {}", plan.threshold);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let k = 1 + (r.u8() % 6) as usize;
    let values = grid_values(&mut r);
    let split = [1.0 / 16.0, 0.5, 1e-3, r.u16() as f64 / 65536.0][(r.u8() % 4) as usize];
    let mut thresholds: Vec<f64> = (0..1 + r.u8() % 3)
        .map(|_| match r.u8() % 5 {
            0 => f64::NEG_INFINITY,
            1 => 0.0,
            2 => 0.01,
            3 => 0.25,
            _ => r.u16() as f64 / 65536.0,
        })
        .collect();
    thresholds.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let f32_input = r.bool();
    let wide = r.bool();
    let (probs, labels) = prob_rows(&mut r, k, 2000, wide);
    if labels.is_empty() {
        return;
    }
    if f32_input {
        let p32: Vec<f32> = probs.iter().map(|&v| v as f32).collect();
        check(&p32, &labels, k, &values, split, &thresholds);
    } else {
        check(&probs, &labels, k, &values, split, &thresholds);
    }
});
