//! The smooth-ECE grid (`smooth.rs`): each prediction's value and weight split linearly over
//! the two nearest points of an m-point grid. Against independent facts of linear
//! interpolation: the grids' totals are the totals of the values and weights, their first
//! moments (sum of grid mass times grid position) are the sums of weight times score (scores in
//! [0, 1]), every grid entry stays within the range the inputs allow, and integer weights
//! equal repeated rows; against a direct transcription of relplot's `smooth_round_to_grid`
//! (truncate, clip, split) to 1e-12. Arbitrary bytes (NaN, infinite, negative, huge scores and
//! weights, any grid size, mismatched lengths): a value or an error, never a panic.
#![no_main]

use calibkit::kernels::binfree::smooth::grid_mass;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

fn relplot(s: &[f64], v: &[f64], w: &[f64], m: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut gv, mut gm) = (vec![0.0; m], vec![0.0; m]);
    for i in 0..s.len() {
        let t = s[i] * (m - 1) as f64;
        let b = (t.trunc() as i64).clamp(0, m as i64 - 2) as usize;
        let f = t - b as f64;
        gv[b] += (1.0 - f) * v[i];
        gv[b + 1] += f * v[i];
        gm[b] += (1.0 - f) * w[i];
        gm[b + 1] += f * w[i];
    }
    (gv, gm)
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let mode = r.u8();
    let n = r.u8() as usize;
    if mode & 1 == 1 {
        let m = match r.u8() % 4 {
            0 => (r.u16() % 4) as usize, // 0, 1 (errors), 2, 3
            _ => r.u16() as usize,
        };
        let s: Vec<f64> = (0..n).map(|_| if r.bool() { r.f64() } else { r.u8() as f64 / 255.0 }).collect();
        let v: Vec<f64> = (0..n.saturating_sub((mode >> 4) as usize % 2)).map(|_| r.f64()).collect();
        let w: Vec<f64> = (0..n).map(|_| r.f64()).collect();
        let _ = grid_mass(&s, &v, None, m);
        if let Ok(g) = grid_mass(&s, &v, Some(&w), m) {
            assert_eq!((g.values.len(), g.mass.len()), (m, m));
        }
        return;
    }
    let m = 2 + (r.u16() % 3000) as usize;
    let levels = 1 + (r.u8() % 50) as u32;
    let (mut s, mut v, mut w) = (vec![], vec![], vec![]);
    for _ in 0..n {
        let b = r.u8();
        s.push(match b % 8 {
            0 => 1.0,
            1 => 0.0,
            2 => (r.u16() as usize % m) as f64 / (m - 1) as f64, // on a grid point
            _ => (r.u8() as u32 % (levels + 1)) as f64 / levels as f64,
        });
        v.push((r.u8() as f64 - 128.0) / 64.0);
        w.push((r.u8() % 4) as f64);
    }
    let g = grid_mass(&s, &v, Some(&w), m).expect("valid input");
    let (rv, rm) = relplot(&s, &v, &w, m);
    for j in 0..m {
        assert!(close(g.values[j], rv[j], 1e-12) && close(g.mass[j], rm[j], 1e-12), "grid point {j}");
        assert!(g.mass[j] >= 0.0, "negative mass at {j}");
    }
    let tw: f64 = w.iter().sum();
    let tv: f64 = v.iter().sum();
    let sw: f64 = s.iter().zip(&w).map(|(a, b)| a * b).sum();
    let scale = 1.0 + tw + v.iter().map(|x| x.abs()).sum::<f64>();
    assert!((g.mass.iter().sum::<f64>() - tw).abs() <= 1e-9 * scale, "total mass");
    assert!((g.values.iter().sum::<f64>() - tv).abs() <= 1e-9 * scale, "total value");
    let moment: f64 = g.mass.iter().enumerate().map(|(j, &x)| x * j as f64 / (m - 1) as f64).sum();
    assert!((moment - sw).abs() <= 1e-9 * scale, "first moment {moment} vs {sw}");
    // integer weights are repeated rows (values too: each repeated row carries its value)
    let (mut rs, mut rv2) = (vec![], vec![]);
    let mut wv = vec![];
    for i in 0..s.len() {
        for _ in 0..w[i] as usize {
            rs.push(s[i]);
            rv2.push(v[i]);
        }
        wv.push(v[i] * w[i]);
    }
    let a = grid_mass(&rs, &rv2, None, m).expect("valid input");
    let b = grid_mass(&s, &wv, Some(&w), m).expect("valid input");
    for j in 0..m {
        assert!((a.mass[j] - b.mass[j]).abs() <= 1e-9 * scale && (a.values[j] - b.values[j]).abs() <= 1e-9 * scale, "repeated rows at {j}");
    }
});
