//! The histogram selection of the all-probabilities kernel (`allprobs_hist`: bucket by float
//! exponent, gather the wanted buckets, sort them, read the edges) against a sort-based
//! selection, on scores spread over many orders of magnitude and full of ties, with thresholds
//! that make it compact. Edges, counts and sums must agree exactly.
#![no_main]

use calibkit::kernels::core::validate::Checks;
use calibkit::kernels::gce::allprobs_hist;
use calibkit::kernels::{Binning, Inputs};
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let k = 1 + (r.u8() % 10) as usize;
    let cc = r.bool();
    let thr = match r.u8() {
        0..=99 => 0.0,
        100..=199 => 0.01,
        t => (t - 200) as f64 / 56.0,
    };
    let nbins = 1 + (r.u8() % 4) as usize;
    let adaptive: Vec<usize> = {
        let mut v: Vec<usize> = (0..nbins).map(|_| 1 + (r.u16() % 200) as usize).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let even: Vec<usize> = vec![1 + (r.u8() % 50) as usize];
    let wide = r.bool();
    let (probs, labels) = prob_rows(&mut r, k, 3000, wide);
    if labels.is_empty() {
        return;
    }
    let f32_input = r.bool();
    let p32: Vec<f32> = probs.iter().map(|&v| v as f32).collect();
    let widened: Vec<f64> = if f32_input { p32.iter().map(|&v| v as f64).collect() } else { probs.clone() };
    let (e, a) = if f32_input {
        let x = Inputs::new(&p32, &labels, k).unwrap();
        allprobs_hist::stats(&x, cc, thr, &even, &adaptive, &Checks::ALL).expect("valid input")
    } else {
        let x = Inputs::new(&probs, &labels, k).unwrap();
        allprobs_hist::stats(&x, cc, thr, &even, &adaptive, &Checks::ALL).expect("valid input")
    };
    let g = calibkit::kernels::Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: cc, threshold: thr };
    let rows = groups_of(&widened, &labels, k, &g);
    let ng = g.groups(k);
    for (st, &b) in a.iter().zip(&adaptive) {
        let want = reference_stats(&rows, ng, Binning::Adaptive, b, thr);
        assert_same_stats(&format!("adaptive B={b} cc={cc} thr={thr} k={k}"), st, &want, EXACT, false);
    }
    for (st, &b) in e.iter().zip(&even) {
        let want = reference_stats(&rows, ng, Binning::Even, b, thr);
        assert_same_stats(&format!("even B={b} cc={cc} thr={thr} k={k}"), st, &want, EXACT, false);
    }
});
