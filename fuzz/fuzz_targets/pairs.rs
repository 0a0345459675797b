//! Top-label pairs (`kernels/pairs/`: confidence, correct[, predicted]) against the matrix-form
//! top-label kernels on a matrix built from the pairs (the predicted class holds the confidence,
//! the rest share 1 - confidence below it), and against the sort-based reference: tables
//! (counts, edges and sums exactly), `gce` (bit for bit) and `evaluate` (1e-9), every top-label
//! grouping, threshold and bin count, float32 and float64, confidences on bin edges, at 1 and
//! just above 1. Then arbitrary pairs (NaN, out of range, bad outcomes and classes, any number
//! of classes and bins): an error exactly when a pair or an argument is invalid, never a panic.
#![no_main]

use calibkit::kernels::gce::pairs::{self, Pairs};
use calibkit::kernels::core::spec::MAX_BINS;
use calibkit::kernels::core::validate::{Checks, RANGE_TOL};
use calibkit::kernels::{self, Binning, GceSpec, Grouping, Inputs, Norm, Score};
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

const TOL: f64 = 1e-9;

#[allow(clippy::too_many_arguments)]
fn compare<T: Score>(conf: &[T], correct: &[u8], pred: &[i64], m: &[T], labels: &[i64], k: usize, g: Grouping, norm: Norm, b: usize, with_pred: bool) {
    let p = Pairs::new(conf, correct, if with_pred { Some(pred) } else { None }, k).expect("valid shapes");
    let x = Inputs::new(m, labels, k).expect("valid shapes");
    let name = format!("{g:?} B={b} k={k} n={} {}", conf.len(), std::any::type_name::<T>());
    if g.class_conditional && !with_pred {
        assert!(pairs::bin_stats(&p, &g, b).is_err(), "class-conditional without predicted: {name}");
        return;
    }
    let got = pairs::bin_stats(&p, &g, b).expect("pairs bin_stats on valid pairs");
    let want = kernels::bin_stats(&x, &g, b, &Checks::ALL).expect("matrix bin_stats on a valid matrix");
    assert_same_stats(&format!("pairs vs matrix {name}"), &got, &want, EXACT, false);
    let wide: Vec<f64> = m.iter().map(|v| v.to_f64()).collect();
    let rows = groups_of(&wide, labels, k, &g);
    let reference = reference_stats(&rows, g.groups(k), g.binning, b, g.threshold);
    assert_same_stats(&format!("pairs vs reference {name}"), &got, &reference, EXACT, false);
    let spec = GceSpec { grouping: g, norm, num_bins: b };
    let v = pairs::gce(&p, &spec).expect("pairs gce");
    let w = kernels::gce(&x, &spec, &Checks::ALL).expect("matrix gce");
    assert!(close(v, w, EXACT), "gce {name} {norm:?}: {v} vs {w}");
    let other = Grouping { binning: if g.binning == Binning::Even { Binning::Adaptive } else { Binning::Even }, ..g };
    let ev = pairs::evaluate(&p, &[(g, norm), (other, Norm::Max)], &[b, b + 3]).expect("pairs evaluate");
    for (mi, (gm, nm)) in [(g, norm), (other, Norm::Max)].into_iter().enumerate() {
        for (j, bj) in [b, b + 3].into_iter().enumerate() {
            let one = kernels::gce(&x, &GceSpec { grouping: gm, norm: nm, num_bins: bj }, &Checks::ALL).expect("matrix gce");
            let e = ev[mi * 2 + j];
            assert!(close(e, one, TOL), "evaluate {gm:?} {nm:?} B={bj}: {e} vs {one}");
        }
    }
}

fn valid(r: &mut Reader) {
    let k = 1 + (r.u8() % 12) as usize;
    let g = grouping(r);
    let g = Grouping { max_prob: true, ..g };
    let norm = norm(r);
    let b = 1 + (r.u8() % 40) as usize;
    let levels = 1 + (r.u8() % 16) as usize;
    let with_pred = r.bool();
    let lo = 1.0 / k as f64;
    let (mut conf, mut correct, mut pred, mut labels) = (vec![], vec![], vec![], vec![]);
    let mut m = Vec::new();
    while r.left() >= 3 && conf.len() < 400 {
        let (a, c, p) = (r.u8(), r.u8(), r.u8());
        let p = (p as usize % k) as i64;
        // a confidence above 1/k (so that the predicted class is the only argmax): on a level,
        // on an even bin edge j/B, exactly 1, or just above 1 (within the range tolerance)
        let s = match a % 8 {
            0 => 1.0,
            1 => 1.0 + RANGE_TOL * (c as f64 / 512.0),
            2 | 3 => ((c as usize % (b + 1)) as f64 / b as f64).max(lo + (1.0 - lo) / 32.0).min(1.0),
            _ => lo + (1.0 - lo) * (1 + (c as usize % levels)) as f64 / levels as f64,
        };
        let s = if k == 1 { if a % 8 == 1 { s } else { 1.0 } } else { s };
        let ok = k == 1 || c & 1 == 1;
        conf.push(s);
        correct.push(ok as u8);
        pred.push(p);
        labels.push(if ok { p } else { (p + 1) % k as i64 });
        let rest = if k > 1 { (1.0 - s) / (k - 1) as f64 } else { 0.0 };
        m.extend((0..k).map(|j| if j as i64 == p { s } else { rest }));
    }
    if conf.is_empty() {
        return;
    }
    if r.bool() {
        let c32: Vec<f32> = conf.iter().map(|&v| v as f32).collect();
        let m32: Vec<f32> = m.iter().map(|&v| v as f32).collect();
        compare(&c32, &correct, &pred, &m32, &labels, k, g, norm, b, with_pred);
    } else {
        compare(&conf, &correct, &pred, &m, &labels, k, g, norm, b, with_pred);
    }
}

fn bins(r: &mut Reader, groups: usize) -> usize {
    let raw = r.u32() as usize;
    if raw > MAX_BINS || raw == 0 {
        return raw;
    }
    raw.min((1 << 20) / groups.max(1)).max(1)
}

fn arbitrary<T: Score>(conf: &[T], r: &mut Reader) {
    let n = conf.len();
    let correct: Vec<u8> = (0..n).map(|_| if r.u8() < 8 { r.u8() } else { r.u8() & 1 }).collect();
    let k = match r.u8() % 4 {
        // any size, 2^63 and beyond included (a negative class once read as in range there)
        0 => r.u64() as usize,
        _ => (r.u8() % 20) as usize,
    };
    let pred: Vec<i64> = (0..n).map(|_| if r.u8() < 8 { r.u64() as i64 } else { (r.u8() % 24) as i64 - 2 }).collect();
    let with_pred = r.bool();
    let p = match Pairs::new(conf, &correct, if with_pred { Some(&pred) } else { None }, k) {
        Ok(p) => p,
        Err(_) => return,
    };
    let flags = r.u8();
    let g = Grouping {
        binning: if flags & 1 == 1 { Binning::Adaptive } else { Binning::Even },
        max_prob: flags & 2 != 2, // all-probabilities groupings must be refused
        class_conditional: flags & 4 == 4,
        threshold: if flags & 8 == 8 { r.f64() } else { (r.u8() as f64) / 255.0 },
    };
    let norm = [Norm::L1, Norm::L2, Norm::Max][(flags >> 4) as usize % 3];
    let b = bins(r, if g.class_conditional { k } else { 1 });
    let res = pairs::bin_stats(&p, &g, b);
    let _ = pairs::gce(&p, &GceSpec { grouping: g, norm, num_bins: b });
    let b2 = bins(r, if g.class_conditional { k } else { 1 });
    let _ = pairs::evaluate(&p, &[(g, norm), (Grouping { binning: Binning::Even, ..g }, Norm::L2)], &[b, b2]);
    let _ = p.validate();
    // an error exactly when something is invalid
    let pair_ok = |i: usize| {
        let s = conf[i].to_f64();
        (-RANGE_TOL..=1.0 + RANGE_TOL).contains(&s) && correct[i] <= 1 && (!with_pred || (pred[i] >= 0 && (pred[i] as u64) < k as u64))
    };
    let args_ok = g.max_prob
        && (!g.class_conditional || with_pred)
        && g.check(b).is_ok()
        && g.check_table(k, b).is_ok();
    let all_ok = args_ok && (0..n).all(pair_ok);
    assert_eq!(res.is_ok(), all_ok, "{g:?} B={b} k={k}: {res:?}");
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    match r.u8() % 3 {
        0 => {
            let n = r.u8() as usize;
            let conf: Vec<f32> = (0..n).map(|_| if r.u8() & 3 == 0 { r.f32() } else { r.u8() as f32 / 255.0 }).collect();
            arbitrary(&conf, &mut r);
        }
        1 => {
            let n = r.u8() as usize;
            let conf: Vec<f64> = (0..n).map(|_| if r.u8() & 3 == 0 { r.f64() } else { r.u8() as f64 / 255.0 }).collect();
            arbitrary(&conf, &mut r);
        }
        _ => valid(&mut r),
    }
});
