//! The kept scores of a metric as rows (`rows.rs`, the input of sample weights and of the
//! bootstrap with moving bins). Valid matrices: the rows equal the reference's score groups
//! (group, score, outcome exactly, in row then column order, with the row of each), and the
//! weighted primitive on them gives the metric kernels' table (counts and edges exactly, sums
//! to 1e-9), also with integer row weights against repeated rows. Arbitrary bytes as f32/f64
//! matrices of any shape, labels and thresholds: never a panic, and an error exactly when the
//! metric kernels refuse the same input.
#![no_main]

use calibkit::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
use calibkit::kernels::gce::rows::score_rows;
use calibkit::kernels::core::validate::Checks;
use calibkit::kernels::{self, Binning, Grouping, Inputs, Score};
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fn valid<T: Score>(probs: &[T], wide: &[f64], labels: &[i64], k: usize, g: Grouping, b: usize, w: &[f64]) {
    let x = Inputs::new(probs, labels, k).expect("valid shapes");
    let rows = score_rows(&x, &g, &Checks::ALL).expect("score_rows on valid input");
    let want = groups_of(wide, labels, k, &g);
    assert_eq!(rows.score.len(), want.len(), "{g:?}: number of kept scores");
    for (i, &(gr, s, o)) in want.iter().enumerate() {
        assert_eq!((rows.group[i] as usize, rows.score[i].to_bits(), rows.outcome[i]), (gr, s.to_bits(), o), "{g:?}: entry {i}");
    }
    assert!(rows.row.windows(2).all(|p| p[0] <= p[1]) && rows.row.iter().all(|&r| (r as usize) < labels.len()));
    let ng = g.groups(k);
    let gr = GroupedRows { groups: Some(&rows.group), scores: &rows.score, outcomes: &rows.outcome, weights: None, num_groups: ng };
    let got = grouped_bin_stats(&gr, g.binning, b).expect("grouped_bin_stats");
    let st = kernels::bin_stats(&x, &g, b, &Checks::ALL).expect("bin_stats");
    assert_same_stats(&format!("rows + primitive vs bin_stats {g:?} B={b}"), &got, &st, 1e-9, g.binning == Binning::Adaptive);
    // integer row weights: the primitive on the rows equals repeated matrix rows
    let tw: Vec<f64> = rows.row.iter().map(|&r| w[r as usize]).collect();
    let weighted = grouped_bin_stats(&GroupedRows { weights: Some(&tw), ..gr }, g.binning, b).expect("weighted");
    let (mut rp, mut rl) = (Vec::new(), Vec::new());
    for (i, &wi) in w.iter().enumerate() {
        for _ in 0..wi as usize {
            rp.extend_from_slice(&probs[i * k..(i + 1) * k]);
            rl.push(labels[i]);
        }
    }
    if !rl.is_empty() {
        let xr = Inputs::new(&rp, &rl, k).expect("valid shapes");
        let rep = kernels::bin_stats(&xr, &g, b, &Checks::ALL).expect("bin_stats of repeated rows");
        assert_same_stats(&format!("weighted rows vs repeated rows {g:?} B={b}"), &weighted, &rep, 1e-9, g.binning == Binning::Adaptive);
    }
}

fn arbitrary<T: Score>(probs: &[T], labels: &[i64], k: usize, r: &mut Reader) {
    let x = match Inputs::new(probs, labels, k) {
        Ok(x) => x,
        Err(_) => return,
    };
    let flags = r.u8();
    let g = Grouping {
        binning: Binning::Even,
        max_prob: flags & 2 == 2,
        class_conditional: flags & 4 == 4,
        threshold: if flags & 8 == 8 { r.f64() } else { (r.u8() as f64) / 255.0 },
    };
    let check = Checks { values: true, row_sums: flags & 64 == 0, labels: true };
    let rows = score_rows(&x, &g, &check);
    if g.check(1).is_ok() {
        let st = kernels::bin_stats(&x, &g, 1, &check);
        assert_eq!(rows.is_ok(), st.is_ok(), "{g:?} {check:?}: score_rows {:?} vs bin_stats {:?}", rows.as_ref().err(), st.as_ref().err());
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let head = r.u8();
    if head & 4 == 4 {
        let k = (r.u8() % 17) as usize;
        let n = r.u8() as usize;
        let nvals = if head & 2 == 2 { (r.u16() % 2048) as usize } else { n * k };
        let labels: Vec<i64> = (0..n).map(|_| if r.u8() % 4 == 0 { r.u64() as i64 } else { (r.u8() % 20) as i64 - 2 }).collect();
        if head & 1 == 1 {
            let p: Vec<f32> = (0..nvals).map(|_| if r.u8() & 3 == 0 { r.f32() } else { r.u8() as f32 / 255.0 }).collect();
            arbitrary(&p, &labels, k, &mut r);
        } else {
            let p: Vec<f64> = (0..nvals).map(|_| if r.u8() & 3 == 0 { r.f64() } else { r.u8() as f64 / 255.0 }).collect();
            arbitrary(&p, &labels, k, &mut r);
        }
        return;
    }
    let k = 1 + (r.u8() % 10) as usize;
    let g = grouping(&mut r);
    let b = 1 + (r.u8() % 30) as usize;
    let f32_input = head & 1 == 1;
    let (probs, labels) = prob_rows(&mut r, k, 200, head & 2 == 2);
    if labels.is_empty() {
        return;
    }
    let w: Vec<f64> = (0..labels.len()).map(|i| (i * 7 + head as usize) as f64 % 3.0).collect();
    if f32_input {
        let p32: Vec<f32> = probs.iter().map(|&v| v as f32).collect();
        let wide: Vec<f64> = p32.iter().map(|&v| v as f64).collect();
        valid(&p32, &wide, &labels, k, g, b, &w);
    } else {
        valid(&probs, &probs, &labels, k, g, b, &w);
    }
});
