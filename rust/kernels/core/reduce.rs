//! From per-(group, bin) statistics to the metric: the norm inside each group, then the class
//! average (docs/spec.md, "Error of a group, then of the whole").

use rayon::prelude::*;

use crate::kernels::core::validate;
use crate::kernels::{BinStats, KernelError, Norm};

/// Error of group `g`: l1 sum_b w_b |gap_b|, l2 sum_b w_b gap_b^2 (weight outside the square),
/// max max_b |gap_b| over non-empty bins; w_b = n_b / n_group; 0 for an empty group.
///
/// Counts are finite, but their total may overflow float64 (weighted tables, or tables handed
/// in by callers): then every count is first divided by the group's largest count (the
/// weights `w_b` are ratios, so they do not change), and the total of the scaled counts is at
/// most the number of bins. A total that does not overflow takes the plain form, bit for bit.
pub fn group_error(st: &BinStats, g: usize, norm: Norm) -> f64 {
    let r = g * st.nb..(g + 1) * st.nb;
    let mut n: f64 = st.count[r.clone()].iter().sum();
    if n == 0.0 {
        return 0.0;
    }
    let mut scale = 1.0f64;
    if !n.is_finite() {
        scale = st.count[r.clone()].iter().fold(0.0f64, |m, &c| m.max(c));
        n = st.count[r.clone()].iter().map(|&c| c / scale).sum();
    }
    let mut e = 0.0f64;
    for i in r {
        let c = st.count[i];
        if c == 0.0 {
            continue;
        }
        let gap = st.sum_outcome[i] / c - st.sum_score[i] / c;
        let w = if scale == 1.0 { c / n } else { (c / scale) / n };
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
    combine((0..st.groups).map(|g| group_error(st, g, norm)), st.groups, norm, class_conditional)
}

/// Tables of at least this many groups have their groups' errors taken in parallel by
/// [`reduce_par`].
const PAR_GROUPS: usize = 256;

/// [`reduce`], with the groups' errors of a table of many groups computed in parallel: they
/// are added in group order, as [`reduce`] adds them, so the value is bitwise the same. For
/// callers that hold no GIL (rayon may run).
pub fn reduce_par(st: &BinStats, norm: Norm, class_conditional: bool) -> f64 {
    if st.groups < PAR_GROUPS {
        return reduce(st, norm, class_conditional);
    }
    let errors: Vec<f64> = (0..st.groups).into_par_iter().with_min_len(64).map(|g| group_error(st, g, norm)).collect();
    combine(errors.into_iter(), st.groups, norm, class_conditional)
}

/// The metric from the groups' errors, in group order (the one place they are combined).
fn combine(errors: impl Iterator<Item = f64>, groups: usize, norm: Norm, class_conditional: bool) -> f64 {
    let total: f64 = errors.sum();
    let v = if class_conditional { total / groups as f64 } else { total };
    match norm {
        Norm::L2 => v.sqrt(),
        _ => v,
    }
}

/// Checks a table handed in from outside the kernels (`_native.reduce_table`): counts finite
/// and >= 0 ([`validate::weight_values`]; their total may overflow, [`group_error`] scales
/// then), score and outcome sums finite, and one group unless `class_conditional` (a pooled
/// table has one group: with several, [`reduce`] would add their errors).
pub fn check_table(st: &BinStats, class_conditional: bool) -> Result<(), KernelError> {
    validate::weight_values(&st.count, "counts")?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table(count: &[f64], score: &[f64], outcome: &[f64], groups: usize) -> BinStats {
        BinStats::from_sums(groups, count.len() / groups, count.to_vec(), score.to_vec(), outcome.to_vec())
    }

    /// A table whose total count overflows float64 gives the value of the same table scaled
    /// down (issue 25): the bin weights are ratios of counts.
    #[test]
    fn overflowing_total_count_gives_the_scaled_value() {
        for norm in [Norm::L1, Norm::L2, Norm::Max] {
            for (c, s, o) in [
                ([1e308, 1e308], [5e307, 5e307], [1e308, 0.0]),
                ([f64::MAX, 1e300], [0.25 * f64::MAX, 1e299], [f64::MAX, 0.0]),
                ([f64::MAX, f64::MAX], [0.5 * f64::MAX, 0.25 * f64::MAX], [0.0, f64::MAX]),
            ] {
                let big = table(&c, &s, &o, 1);
                check_table(&big, false).unwrap();
                let k = 2f64.powi(-900);
                let small = table(&c.map(|x| x * k), &s.map(|x| x * k), &o.map(|x| x * k), 1);
                let (a, b) = (reduce(&big, norm, false), reduce(&small, norm, false));
                assert!(a.is_finite() && (a - b).abs() <= 1e-15, "{norm:?} {c:?}: {a} vs {b}");
            }
        }
        let st = table(&[1e308, 1e308], &[5e307, 5e307], &[5e307, 5e307], 1);
        assert_eq!(reduce(&st, Norm::L1, false), 0.0);
        let st = table(&[1e308, 1e308], &[5e307, 5e307], &[1e308, 0.0], 1);
        assert_eq!(reduce(&st, Norm::L1, false), 0.5);
        // class-conditional: each group scaled on its own
        let st = table(&[1e308, 1e308, 1.0, 3.0], &[5e307, 5e307, 0.5, 1.5], &[1e308, 0.0, 1.0, 3.0], 2);
        assert_eq!(reduce(&st, Norm::L1, true), 0.5);
    }

    /// The parallel form adds the same errors in the same order: bitwise the same value.
    #[test]
    fn parallel_groups_give_the_same_bits() {
        let mut draw = crate::kernels::tests::xorshift(0x1234_5678_9abc_def1);
        for groups in [1usize, 255, 256, 1000] {
            let nb = 7;
            let count: Vec<f64> = (0..groups * nb).map(|_| (draw() * 20.0).floor()).collect();
            let score: Vec<f64> = count.iter().map(|&c| c * draw()).collect();
            let outcome: Vec<f64> = count.iter().map(|&c| (c * draw()).floor()).collect();
            let st = table(&count, &score, &outcome, groups);
            for norm in [Norm::L1, Norm::L2, Norm::Max] {
                for cc in [true, false] {
                    let (a, b) = (reduce(&st, norm, cc), reduce_par(&st, norm, cc));
                    assert_eq!(a.to_bits(), b.to_bits(), "groups={groups} {norm:?} cc={cc}");
                }
            }
        }
    }

    /// A total that does not overflow keeps the plain form (the bits `gce` returns).
    #[test]
    fn finite_totals_are_reduced_as_before() {
        let st = table(&[3.0, 7.0], &[0.9, 4.9], &[1.0, 5.0], 1);
        let plain = 3.0 / 10.0 * (1.0f64 / 3.0 - 0.9 / 3.0).abs() + 7.0 / 10.0 * (5.0f64 / 7.0 - 4.9 / 7.0).abs();
        assert_eq!(reduce(&st, Norm::L1, false), plain);
        assert!(check_table(&table(&[f64::INFINITY], &[0.0], &[0.0], 1), false).is_err());
        assert!(check_table(&table(&[-1.0], &[0.0], &[0.0], 1), false).is_err());
    }
}
