//! Weighted tables over all probabilities straight from the matrix (`weighted::matrix::stats`:
//! even bins in one pass per bin count, adaptive bins from each group sorted once for several
//! bin counts) against the weighted primitive on the metric's kept triples, each weighted by
//! its row's weight: the same table bit for bit (counts, score and outcome sums, exact units,
//! edges) at each bin count, for valid matrices of f32 and f64, every threshold, both
//! groupings (alone, or with the other one asked for first: even pooled tables are then the
//! class-conditional sums added), and weights whole, fractional, tiny, huge or mostly zero (which move the scales
//! the pass guesses first and exercise its second pass). Bad weights (NaN, negative,
//! infinite, an overflowing sum, a wrong length) are errors, never a panic.
#![no_main]

use calibkit::kernels::core::validate::Checks;
use calibkit::kernels::weighted::matrix::{stats, triples_table};
use calibkit::kernels::{BinStats, Grouping, Inputs, KernelError, Score};
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn same(what: &str, a: &BinStats, b: &BinStats) {
    assert_eq!((a.groups, a.nb), (b.groups, b.nb), "shape, {what}");
    assert_eq!(bits(&a.count), bits(&b.count), "counts, {what}");
    assert_eq!(bits(&a.sum_score), bits(&b.sum_score), "score sums, {what}");
    assert_eq!(bits(&a.sum_outcome), bits(&b.sum_outcome), "outcome sums, {what}");
    assert_eq!(a.units, b.units, "units, {what}");
    assert_eq!(bits(&a.edges), bits(&b.edges), "edges, {what}");
}

fn check<T: Score>(probs: &[T], labels: &[i64], k: usize, g: &Grouping, both: bool, bins: &[usize], w: &[f64]) {
    let x = Inputs::new(probs, labels, k).expect("valid shapes");
    // this grouping alone, or with the other one first (even: pooled from the class sums)
    let groupings: &[bool] = if both { &[!g.class_conditional, g.class_conditional] } else { &[g.class_conditional] };
    let got = stats(&x, w, g.binning, groupings, g.threshold, bins, &Checks::ALL).map(|mut t| t.pop().expect("one list per grouping"));
    let want: Result<Vec<BinStats>, KernelError> = bins.iter().map(|&b| triples_table(&x, w, g, b)).collect();
    let what = format!("{g:?} groupings={groupings:?} bins={bins:?} n={} k={k}", labels.len());
    match (&got, &want) {
        (Ok(a), Ok(e)) => {
            assert_eq!(a.len(), bins.len(), "{what}: one table per bin count");
            for ((a, e), b) in a.iter().zip(e).zip(bins) {
                same(&format!("{what} B={b}"), a, e);
            }
        }
        (Err(_), Err(_)) => {}
        _ => panic!("{what}: matrix pass {:?} vs triples {:?}", got.as_ref().err(), want.as_ref().err()),
    }
}

/// Row weights of one kind (from a byte), never NaN, negative or infinite.
fn weights(r: &mut Reader, n: usize) -> Vec<f64> {
    let kind = r.u8() % 6;
    let mut w: Vec<f64> = (0..n)
        .map(|_| {
            let b = r.u8() as f64;
            match kind {
                0 => b % 5.0,                              // whole, some zeros
                1 => b / 37.0,                             // fractional
                2 => (1.0 + b) * 1e-9,                     // tiny: scaled up by a power of two
                3 => (1.0 + b) * 1e20,                     // huge: products past 2^51
                4 => if b < 230.0 { 0.0 } else { b / 7.0 }, // mostly zero
                _ => (1.0 + b) * 2f64.powi((b as i32 % 97) - 48), // every magnitude at once
            }
        })
        .collect();
    if kind == 0 && !w.is_empty() {
        w[0] = 2.0; // never all zero
    }
    w
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let head = r.u8();
    let k = 1 + (r.u8() % 12) as usize;
    let mut g = grouping(&mut r);
    g.max_prob = false;
    let bins: Vec<usize> = (0..1 + r.u8() % 3).map(|_| 1 + (r.u8() % 30) as usize).collect();
    let (probs, labels) = prob_rows(&mut r, k, 200, head & 2 == 2);
    if labels.is_empty() {
        return;
    }
    let mut w = weights(&mut r, labels.len());
    if head & 8 == 8 {
        // One bad weight (or a wrong length): an error from both, or from the matrix pass
        // alone when the bad row keeps no entry (the matrix pass checks every row).
        let i = r.u8() as usize % w.len();
        match r.u8() % 5 {
            0 => w[i] = f64::NAN,
            1 => w[i] = -1.0,
            2 => w[i] = f64::INFINITY,
            3 if w.len() >= 2 => w.iter_mut().for_each(|v| *v = f64::MAX),
            3 => w[i] = f64::NAN,
            _ => {
                w.pop();
            }
        }
        let x = Inputs::new(&probs, &labels, k).expect("valid shapes");
        let got = stats(&x, &w, g.binning, &[g.class_conditional], g.threshold, &bins, &Checks::ALL);
        assert!(got.is_err(), "{g:?}: a bad weight vector must be refused");
        return;
    }
    if head & 1 == 1 {
        let p32: Vec<f32> = probs.iter().map(|&v| v as f32).collect();
        check(&p32, &labels, k, &g, head & 16 == 16, &bins, &w);
    } else {
        check(&probs, &labels, k, &g, head & 16 == 16, &bins, &w);
    }
});
