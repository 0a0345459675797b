//! Smooth ECE (Blasiok & Nakkiran 2023): the per-prediction half of the estimator.
//!
//! relplot 1.0.3 (`kernels.smooth_round_to_grid`) spreads each prediction's value over the two
//! nearest points of an `m`-point grid on [0, 1] by linear interpolation: with
//! `t = s * (m - 1)`, `b = trunc(t)` clipped to `[0, m - 2]` and `frac = t - b`, grid point `b`
//! receives `(1 - frac) * v` and `b + 1` receives `frac * v`. The smoothing kernel, the
//! reflection at the boundaries and the bandwidth search then work on the grid only (in
//! Python), so the N predictions are read once per grid size.
//!
//! The pass is sequential in row order, the order of relplot's `np.add.at`, so the grids are
//! bitwise the ones relplot builds (and the same for any number of threads).

use crate::kernels::KernelError;

/// The two grids of one pass: the interpolated values and the interpolated weights (mass).
pub struct GridMass {
    pub values: Vec<f64>,
    pub mass: Vec<f64>,
}

/// Grid point below `s` and the interpolation fraction, as relplot computes them.
#[inline(always)]
fn cell(s: f64, scale: f64, last: i64) -> (usize, f64) {
    let t = s * scale;
    // `astype(int)` truncates toward zero; then `clip(0, m - 2)`.
    let b = (t as i64).clamp(0, last);
    (b as usize, t - b as f64)
}

/// Interpolates `values[i]` and `weights[i]` (1 when `None`) at `scores[i]` onto an `m`-point
/// grid over [0, 1].
pub fn grid_mass(scores: &[f64], values: &[f64], weights: Option<&[f64]>, m: usize) -> Result<GridMass, KernelError> {
    if m < 2 {
        return Err(KernelError::Parameter(format!("the smoothing grid needs at least 2 points, got {m}")));
    }
    if values.len() != scores.len() || weights.is_some_and(|w| w.len() != scores.len()) {
        return Err(KernelError::Shape(format!(
            "scores has {} entries but values has {} (and weights {:?}); pass one of each per prediction",
            scores.len(),
            values.len(),
            weights.map(|w| w.len())
        )));
    }
    if let Some(w) = weights {
        crate::kernels::core::validate::weights(w, "weights")?;
    }
    let scale = (m - 1) as f64;
    let last = (m - 2) as i64;
    let mut gv = vec![0.0f64; m];
    let mut gm = vec![0.0f64; m];
    match weights {
        None => {
            for (&s, &v) in scores.iter().zip(values) {
                let (b, frac) = cell(s, scale, last);
                gv[b] += (1.0 - frac) * v;
                gv[b + 1] += frac * v;
                gm[b] += 1.0 - frac;
                gm[b + 1] += frac;
            }
        }
        Some(w) => {
            for ((&s, &v), &wi) in scores.iter().zip(values).zip(w) {
                let (b, frac) = cell(s, scale, last);
                gv[b] += (1.0 - frac) * v;
                gv[b + 1] += frac * v;
                gm[b] += (1.0 - frac) * wi;
                gm[b + 1] += frac * wi;
            }
        }
    }
    Ok(GridMass { values: gv, mass: gm })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mass_is_conserved_and_split_linearly() {
        let s = [0.0, 0.25, 1.0, 0.6];
        let v = [1.0, -2.0, 0.5, 3.0];
        let g = grid_mass(&s, &v, None, 5).unwrap();
        assert!((g.mass.iter().sum::<f64>() - 4.0).abs() < 1e-12);
        assert!((g.values.iter().sum::<f64>() - 2.5).abs() < 1e-12);
        // 0.25 * 4 = 1: all of it on point 1; 1.0 sits on the last point (clip to m - 2, frac 1).
        assert!((g.values[4] - 0.5).abs() < 1e-12);
        // 0.6 * 4 = 2.4: 0.6 on point 2 and 0.4 on point 3.
        assert!((g.values[2] - 3.0 * 0.6).abs() < 1e-12 && (g.values[3] - 3.0 * 0.4).abs() < 1e-12);
    }

    #[test]
    fn integer_weights_are_repeated_rows() {
        let s = [0.1, 0.7, 0.7, 0.3];
        let v = [0.1, -0.3, -0.3, 0.3];
        let a = grid_mass(&s, &v, None, 11).unwrap();
        let b = grid_mass(&[0.1, 0.7, 0.3], &[0.1, -0.6, 0.3], Some(&[1.0, 2.0, 1.0]), 11).unwrap();
        for j in 0..11 {
            assert!((a.values[j] - b.values[j]).abs() < 1e-12 && (a.mass[j] - b.mass[j]).abs() < 1e-12);
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(grid_mass(&[0.5], &[0.5], None, 1).is_err());
        assert!(grid_mass(&[0.5], &[0.5, 0.1], None, 5).is_err());
        assert!(grid_mass(&[0.5], &[0.5], Some(&[]), 5).is_err());
    }
}
