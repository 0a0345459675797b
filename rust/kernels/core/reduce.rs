//! From per-(group, bin) statistics to the metric: the norm inside each group, then the class
//! average (docs/spec.md, "Error of a group, then of the whole").

use crate::kernels::core::validate;
use crate::kernels::{BinStats, KernelError, Norm};

/// Error of group `g`: l1 sum_b w_b |gap_b|, l2 sum_b w_b gap_b^2 (weight outside the square),
/// max max_b |gap_b| over non-empty bins; w_b = n_b / n_group; 0 for an empty group.
pub fn group_error(st: &BinStats, g: usize, norm: Norm) -> f64 {
    let r = g * st.nb..(g + 1) * st.nb;
    let n: f64 = st.count[r.clone()].iter().sum();
    if n == 0.0 {
        return 0.0;
    }
    let mut e = 0.0f64;
    for i in r {
        let c = st.count[i];
        if c == 0.0 {
            continue;
        }
        let gap = st.sum_outcome[i] / c - st.sum_score[i] / c;
        let w = c / n;
        match norm {
            Norm::L1 => e += w * gap.abs(),
            Norm::L2 => e += w * gap * gap,
            Norm::Max => e = e.max(gap.abs()),
        }
    }
    e
}

/// The metric: not class-conditional, the single group's error; class-conditional, the mean
/// over all groups (empty ones count 0). For l2 one square root is taken at the end.
pub fn reduce(st: &BinStats, norm: Norm, class_conditional: bool) -> f64 {
    let total: f64 = (0..st.groups).map(|g| group_error(st, g, norm)).sum();
    let v = if class_conditional { total / st.groups as f64 } else { total };
    match norm {
        Norm::L2 => v.sqrt(),
        _ => v,
    }
}

/// Checks a table handed in from outside the kernels (`_native.reduce_table`): counts finite
/// and >= 0 with a finite total (the one weight rule, [`validate::weights`]), score and outcome
/// sums finite, and one group unless `class_conditional` (a pooled table has one group: with
/// several, [`reduce`] would add their errors).
pub fn check_table(st: &BinStats, class_conditional: bool) -> Result<(), KernelError> {
    validate::weights(&st.count, "counts")?;
    for (name, sums) in [("sum_score", &st.sum_score), ("sum_outcome", &st.sum_outcome)] {
        if let Some(i) = sums.iter().position(|x| !x.is_finite()) {
            return Err(KernelError::Parameter(format!("{name}[{i}] is {}: table sums must be finite", sums[i])));
        }
    }
    if !class_conditional && st.groups != 1 {
        return Err(KernelError::Shape(format!(
            "a pooled table (class_conditional=False) has one group, got {}",
            st.groups
        )));
    }
    Ok(())
}
