//! Bootstrap and consistency resampling (`resample.rs`, `consistency.rs`) on arbitrary per-entry
//! tables: cells in and out of range (and `DROPPED`), any hit column, any scores and base weights
//! (NaN, negative, huge), any table shape (huge ones must be refused before allocating), any seed.
//! Never a panic. On valid tables each fast loop is compared with the definition: resample `r` is
//! the table of the rows repeated as `weights_matrix` draws them, and with whole base weights (or
//! none) the data's table under multiplicity times weight (bootstrap), or under labels
//! redrawn by hand from the counter stream (consistency), and the grouped bootstrap is the weighted
//! primitive under the same multiplicities. Values must be equal bitwise, but for the grouped
//! bootstrap of adaptive bins: to 1e-13 (its score sums run in score order).
#![no_main]

use calibkit::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
use calibkit::kernels::core::reduce::reduce;
use calibkit::kernels::weighted::consistency::consistency;
use calibkit::kernels::weighted::resample::{self, bootstrap, bootstrap_grouped, bootstrap_grouped_from, weights_matrix, Cells, Scheme, Triples, DROPPED};
use calibkit::kernels::{Binning, Norm};
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Consistency resample `r` of `cells` redrawn by hand: the hit of row i from uniform (seed, r, i).
fn consistency_by_hand(cells: &Cells<'_>, norm: Norm, cc: bool, seed: u64, r: u64) -> f64 {
    let n = cells.hit.len();
    let k = cells.width;
    let hit: Vec<u32> = (0..n)
        .map(|i| {
            let u = resample::uniform(seed, r, i as u64);
            let row = &cells.score[i * k..(i + 1) * k];
            if k == 1 {
                return if u < row[0] { 0 } else { DROPPED };
            }
            let total: f64 = row.iter().sum();
            let mut acc = 0.0;
            for (j, &p) in row.iter().enumerate() {
                acc += p;
                if u * total < acc {
                    return j as u32;
                }
            }
            (k - 1) as u32
        })
        .collect();
    let c = Cells { hit: &hit, ..*cells };
    reduce(&c.stats(), norm, cc)
}

/// The cell table with row i repeated `m[i]` times, each copy with its base weight; a row drawn
/// no time stays once with nothing kept, so the base weights' power-of-two scale (taken over
/// every row) is the resample's.
#[allow(clippy::type_complexity)]
fn repeated(cells: &Cells<'_>, m: &[f64]) -> (Vec<u32>, Vec<f64>, Vec<u32>, Option<Vec<f64>>) {
    let k = cells.width;
    let (mut c, mut s, mut h, mut b) = (vec![], vec![], vec![], vec![]);
    for (i, &mi) in m.iter().enumerate() {
        for copy in 0..(mi as usize).max(1) {
            let kept = mi as usize > copy;
            c.extend(cells.cell[i * k..(i + 1) * k].iter().map(|&x| if kept { x } else { DROPPED }));
            s.extend_from_slice(&cells.score[i * k..(i + 1) * k]);
            h.push(if kept { cells.hit[i] } else { DROPPED });
            b.push(cells.base.map_or(1.0, |b| b[i]));
        }
    }
    (c, s, h, cells.base.map(|_| b))
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let mode = r.u8();
    let width = 1 + (r.u8() % 5) as usize;
    let (groups, nb) = if mode & 1 == 1 {
        // a table beyond the cell limit (or beyond usize): an error, never an allocation failure
        (1 + r.u32() as usize, (1 << 25) + 1 + r.u32() as usize)
    } else {
        (1 + (r.u8() % 6) as usize, 1 + (r.u8() % 12) as usize)
    };
    let nc = groups.saturating_mul(nb);
    let n = (r.u8() % 64) as usize;
    let seed = r.u64();
    let n_resamples = (r.u8() % 20) as usize;
    let norm = norm(&mut r);
    let cc = r.bool();
    let scheme = if r.bool() { Scheme::Poisson } else { Scheme::Multinomial };
    let wild = mode & 2 == 2; // out-of-range cells and hits, non-finite values
    let mut cell = Vec::with_capacity(n * width);
    let mut score = Vec::with_capacity(n * width);
    for _ in 0..n * width {
        let b = r.u8();
        cell.push(match b % 8 {
            0 => DROPPED,
            1 if wild => r.u32(),
            _ => (r.u16() as usize % nc.clamp(1, 1 << 16)) as u32,
        });
        score.push(if wild && b & 64 == 64 { r.f64() } else { r.u8() as f64 / 255.0 });
    }
    let hit: Vec<u32> = (0..n)
        .map(|_| match r.u8() % 4 {
            0 => DROPPED,
            1 if wild => r.u32(),
            _ => (r.u8() as usize % width) as u32,
        })
        .collect();
    let base: Option<Vec<f64>> = if mode & 4 == 4 {
        Some((0..n).map(|_| if wild && r.bool() { r.f64() } else { (r.u8() % 4) as f64 * 0.5 }).collect())
    } else {
        None
    };
    // a wrong number of base weights, sometimes
    let base_len = if mode & 8 == 8 { base.as_ref().map(|b| b.len().saturating_sub(1)) } else { None };
    let base_ref = base.as_deref().map(|b| &b[..base_len.unwrap_or(b.len())]);
    let cells = Cells { cell: &cell, score: &score, hit: &hit, base: base_ref, width, groups, nb };
    let boot = bootstrap(&cells, norm, cc, scheme, seed, n_resamples);
    let cons = consistency(&cells, norm, cc, seed, n_resamples);
    let valid = cells.check().is_ok();
    assert_eq!(boot.is_ok(), valid, "bootstrap vs check");
    assert_eq!(cons.is_ok(), valid, "consistency vs check");
    if valid {
        let (boot, cons) = (boot.unwrap(), cons.unwrap());
        assert_eq!((boot.len(), cons.len()), (n_resamples, n_resamples));
        let w = weights_matrix(scheme, seed, 0, n_resamples, n);
        // whole base weights (or none): the primitive's table on multiplicity times weight;
        // fractional ones: the rows repeated as drawn (the primitive rounds each product once,
        // a resample each weight's units: resample.rs's module doc)
        let whole = base_ref.is_none_or(|b| b.iter().all(|x| x.fract() == 0.0));
        for rr in 0..n_resamples {
            let m: Vec<f64> = (0..n).map(|i| w[rr * n + i] * base_ref.map_or(1.0, |b| b[i])).collect();
            let one = Cells { base: Some(&m), ..cells };
            let want = reduce(&one.stats(), norm, cc);
            if !wild {
                let (c, s, h, b) = repeated(&cells, &w[rr * n..(rr + 1) * n]);
                let rep = Cells { cell: &c, score: &s, hit: &h, base: b.as_deref(), ..cells };
                let rep = reduce(&rep.stats(), norm, cc);
                assert!(same(boot[rr], rep), "bootstrap resample {rr}: {} vs the repeated rows' {rep}", boot[rr]);
                if whole {
                    assert!(same(boot[rr], want), "bootstrap resample {rr}: {} vs {want}", boot[rr]);
                }
                let want = consistency_by_hand(&cells, norm, cc, seed, rr as u64);
                assert!(same(cons[rr], want), "consistency resample {rr}: {} vs {want}", cons[rr]);
            }
        }
    }

    // the grouped bootstrap (bins moving with the weights)
    let m = (r.u8() % 64) as usize;
    let n_rows = 1 + (r.u8() % 32) as usize;
    let ng = 1 + (r.u8() % 4) as usize;
    let b = match r.u32() as usize {
        x if wild && x > 1_000_000 => x, // beyond the bin-count limit: an error
        x if wild => x % 4096,           // 0 (an error) to 4095
        x => 1 + x % 10,
    };
    let binning = if r.bool() { Binning::Adaptive } else { Binning::Even };
    let tg: Vec<i64> = (0..m).map(|_| if wild && r.u8() == 0 { -1 } else { (r.u8() as usize % ng) as i64 }).collect();
    let ts: Vec<f64> = (0..m).map(|_| if wild && r.u8() == 0 { f64::NAN } else { r.u8() as f64 / 255.0 }).collect();
    let to: Vec<f64> = (0..m).map(|_| (r.u8() & 1) as f64).collect();
    let tr: Vec<i64> = (0..m).map(|_| if wild && r.u8() == 0 { r.u64() as i64 } else { (r.u8() as usize % n_rows) as i64 }).collect();
    let tb: Vec<f64> = (0..n_rows).map(|_| (r.u8() % 3) as f64).collect();
    let t = Triples { groups: &tg, scores: &ts, outcomes: &to, rows: &tr, base: if mode & 16 == 16 { Some(&tb) } else { None }, n_rows, num_groups: ng };
    if let Ok(v) = bootstrap_grouped(&t, binning, b, norm, cc, scheme, seed, n_resamples) {
        assert_eq!(v.len(), n_resamples);
        let w = weights_matrix(scheme, seed, 0, n_resamples, n_rows);
        for (rr, &x) in v.iter().enumerate() {
            let tw: Vec<f64> = tr.iter().map(|&i| w[rr * n_rows + i as usize] * t.base.map_or(1.0, |b| b[i as usize])).collect();
            let g = GroupedRows { groups: Some(&tg), scores: &ts, outcomes: &to, weights: Some(&tw), num_groups: ng };
            let want = reduce(&grouped_bin_stats(&g, binning, b).expect("the kernel accepted it"), norm, cc);
            // adaptive bins: one sort, sums in score order (weighted/adaptive.rs), the same
            // edges and cells, score sums compensated in another order
            let ok = same(x, want) || (binning == Binning::Adaptive && close(x, want, 1e-13));
            assert!(ok, "grouped resample {rr}: {x} vs {want}");
        }
        // a chunk of resamples is those resamples of one call
        if n_resamples > 1 {
            let tail = bootstrap_grouped_from(&t, binning, b, norm, cc, scheme, seed, 1, n_resamples - 1).expect("accepted above");
            assert!(tail.iter().zip(&v[1..]).all(|(a, b)| same(*a, *b)));
        }
    }
});
