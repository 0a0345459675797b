//! Every kernel entry on valid inputs against the sort-based reference (fuzz/src/lib.rs):
//! `gce`, `bin_stats`, `evaluate`, each per-path kernel (fused top-label even, top-label
//! summary, all-probabilities even, histogram selection) and the grouped primitive, in f32 and
//! f64. Counts, edges and sums must agree exactly (every table builder and the reference sum
//! scores by the exact cell-sum rule), `evaluate` and `gce` bit for bit, values against the
//! reference's reduction to 1e-9.
#![no_main]

use calibkit::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
use calibkit::kernels::core::validate::Checks;
use calibkit::kernels::gce::{allprobs_even, allprobs_hist, toplabel, toplabel_even};
use calibkit::kernels;
use calibkit::kernels::{Binning, GceSpec, Grouping, Inputs, Norm, Score};
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

const TOL: f64 = 1e-9;

fn check<T: Score>(probs: &[T], wide: &[f64], labels: &[i64], k: usize, g: Grouping, norm: Norm, b: usize, b2: usize) {
    let x = Inputs::new(probs, labels, k).expect("valid shapes");
    let c = Checks::ALL;
    let rows = groups_of(wide, labels, k, &g);
    let ng = g.groups(k);
    let want = reference_stats(&rows, ng, g.binning, b, g.threshold);
    let name = format!("{g:?} B={b} k={k} n={} {}", labels.len(), std::any::type_name::<T>());

    // the entry points
    let st = kernels::bin_stats(&x, &g, b, &c).expect("bin_stats on valid input");
    assert_same_stats(&format!("bin_stats {name}"), &st, &want, EXACT, false);
    let v = kernels::gce(&x, &GceSpec { grouping: g, norm, num_bins: b }, &c).expect("gce");
    let r = reference_reduce(&want, norm);
    assert!(close(v, r, TOL), "gce {name} {norm:?}: {v} vs reference {r}");
    let other = Grouping { binning: if g.binning == Binning::Even { Binning::Adaptive } else { Binning::Even }, ..g };
    let metrics = [(g, norm), (other, Norm::L1), (g, Norm::Max)];
    let bins = if b2 == b { vec![b] } else { vec![b, b2] };
    let ev = kernels::evaluate(&x, &metrics, &bins, &c).expect("evaluate");
    for (m, &(gm, nm)) in metrics.iter().enumerate() {
        for (j, &bj) in bins.iter().enumerate() {
            let one = kernels::gce(&x, &GceSpec { grouping: gm, norm: nm, num_bins: bj }, &c).expect("gce");
            let e = ev[m * bins.len() + j];
            assert!(close(e, one, EXACT), "evaluate vs gce {gm:?} {nm:?} B={bj}: {e} vs {one}");
        }
    }

    // every path that can compute this grouping
    if g.max_prob {
        let top = toplabel::summarise(&x, &c).expect("summarise");
        assert_same_stats(&format!("toplabel::stats {name}"), &toplabel::stats(&top, k, &g, b), &want, EXACT, false);
        if g.binning == Binning::Even && toplabel_even::fused_even_fits(&g, k, &[b]) {
            let s = toplabel_even::even_stats(&x, &g, &[b], &c).expect("even_stats").pop().unwrap();
            assert_same_stats(&format!("toplabel_even {name}"), &s, &want, EXACT, false);
        }
    } else {
        let (even, adaptive) = match g.binning {
            Binning::Even => (vec![b], vec![]),
            Binning::Adaptive => (vec![], vec![b]),
        };
        let (e, a) = allprobs_hist::stats(&x, g.class_conditional, g.threshold, &even, &adaptive, &c).expect("allprobs_hist");
        let s = if g.binning == Binning::Even { &e[0] } else { &a[0] };
        assert_same_stats(&format!("allprobs_hist {name}"), s, &want, EXACT, false);
        if g.binning == Binning::Even {
            let s = allprobs_even::stats(&x, &g, &[b], &c).expect("allprobs_even").pop().unwrap();
            assert_same_stats(&format!("allprobs_even {name}"), &s, &want, EXACT, false);
        }
    }

    // the grouped primitive on the same groups
    let gid: Vec<i64> = rows.iter().map(|r| r.0 as i64).collect();
    let sc: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let oc: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let gr = GroupedRows { groups: Some(&gid), scores: &sc, outcomes: &oc, weights: None, num_groups: ng };
    let s = grouped_bin_stats(&gr, g.binning, b).expect("grouped_bin_stats");
    assert_same_stats(&format!("grouped {name}"), &s, &want, EXACT, g.binning == Binning::Adaptive);
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let k = 1 + (r.u8() % 12) as usize;
    let f32_input = r.bool();
    let g = grouping(&mut r);
    let norm = norm(&mut r);
    let b = 1 + (r.u8() % 40) as usize;
    let b2 = 1 + (r.u16() % 300) as usize;
    let (probs, labels) = prob_rows(&mut r, k, 400, false);
    if labels.is_empty() {
        return;
    }
    if f32_input {
        let p32: Vec<f32> = probs.iter().map(|&v| v as f32).collect();
        let wide: Vec<f64> = p32.iter().map(|&v| v as f64).collect();
        check(&p32, &wide, &labels, k, g, norm, b, b2);
    } else {
        check(&probs, &probs, &labels, k, g, norm, b, b2);
    }
});
