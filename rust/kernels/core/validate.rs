//! Input value checks: finite, in [0, 1] within [`RANGE_TOL`], rows summing to 1 within
//! [`ROW_SUM_TOL`], labels in [0, K). Row passes call [`row_ok`] on the row they already read;
//! [`scan`] is the stand-alone pass for kernels that read the data otherwise. A kernel that
//! reads blocks of columns (the transposition of `allprobs_hist`) takes each row's sum in its
//! own order and the range test ([`in_range`]) on the way, and leaves to the exact check only
//! the rows [`row_sum_surely_ok`] cannot decide. Only when a row fails do we spend time
//! finding the first offending entry, to name it in the error.

use rayon::prelude::*;

use crate::kernels::core::chunks::row_chunks;
use crate::kernels::{Inputs, KernelError, Score};

/// Probabilities may leave [0, 1] by this much (float rounding in softmax outputs).
pub const RANGE_TOL: f64 = 1e-4;
/// Rows may sum to 1 within this absolute tolerance.
pub const ROW_SUM_TOL: f64 = 1e-3;

/// Which checks to run.
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    /// Check finiteness and range of every value.
    pub values: bool,
    /// Check each row sums to 1 (off for multilabel scores).
    pub row_sums: bool,
    /// Check every label is in [0, K).
    pub labels: bool,
}

impl Checks {
    pub const ALL: Checks = Checks { values: true, row_sums: true, labels: true };
    pub const NONE: Checks = Checks { values: false, row_sums: false, labels: false };
}

/// Whether a value passes the range check: in [0, 1] within [`RANGE_TOL`] (NaN fails).
#[inline(always)]
#[allow(clippy::manual_range_contains)] // NaN is out of range
pub fn in_range(v: f64) -> bool {
    v >= -RANGE_TOL && v <= 1.0 + RANGE_TOL
}

/// All-ones in the lanes of `v` that fail [`in_range`] (NaN included), by the same comparisons.
///
/// # Safety
/// The CPU must support AVX2 (safe to call from code compiled with AVX2 enabled).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub fn out_of_range_avx2(v: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    let (lo, hi) = (_mm256_set1_pd(-RANGE_TOL), _mm256_set1_pd(1.0 + RANGE_TOL));
    // !(v >= lo) | !(v <= hi): true for NaN, as in the scalar check.
    _mm256_or_pd(_mm256_cmp_pd::<_CMP_NGE_UQ>(v, lo), _mm256_cmp_pd::<_CMP_NLE_UQ>(v, hi))
}

/// Whether a row of `k` values that all pass [`in_range`], whose sum was computed in some
/// order other than [`row_sum_and_bad`]'s as `sum`, certainly passes the row-sum check. Each
/// sum is within `(k - 1) u sum|v|` of the exact one (recursive summation, `u` half of
/// `f64::EPSILON`), so the two differ by at most twice that; `sum|v| <= 1 + ROW_SUM_TOL +
/// 2 k RANGE_TOL` for a row that passes (values are at least `-RANGE_TOL`). The margin is
/// twice that difference (`2 k EPSILON sum|v|`, covering the rounding of the test itself); a
/// row within it of the tolerance is left to the exact check. Lets a kernel that reads rows in
/// another order take the row sums on the way and run [`first_row_error`] only on the rows it
/// cannot decide. Not valid for values out of range (their magnitudes void the bound).
pub fn row_sum_surely_ok(sum: f64, k: usize) -> bool {
    let k = k as f64;
    let margin = 2.0 * k * f64::EPSILON * (1.0 + ROW_SUM_TOL + 2.0 * k * RANGE_TOL);
    (sum - 1.0).abs() <= ROW_SUM_TOL - margin
}

/// Per-row sum and a flag that some value is non-finite or out of range; vectorisable.
#[inline(always)]
pub fn row_sum_and_bad<T: Score>(row: &[T]) -> (f64, bool) {
    const L: usize = 8;
    let mut s = [0.0f64; L];
    let mut bad = [false; L];
    let mut it = row.chunks_exact(L);
    for c in &mut it {
        for l in 0..L {
            let v = c[l].to_f64();
            s[l] += v;
            bad[l] |= !in_range(v);
        }
    }
    let mut sum = 0.0;
    let mut any_bad = false;
    for l in 0..L {
        sum += s[l];
        any_bad |= bad[l];
    }
    for v in it.remainder() {
        let v = v.to_f64();
        sum += v;
        any_bad |= !in_range(v);
    }
    (sum, any_bad)
}

/// What a vector row pass ([`row_sum_and_bad_avx2`]) does with each group of eight values.
/// Implementations mark `visit` `#[inline(always)]`: it is then compiled inside the AVX2 pass
/// (a closure would not be, and its intrinsics would become calls).
#[cfg(target_arch = "x86_64")]
pub trait RowVisitor {
    /// Columns j..j+4 in `v0`, j+4..j+8 in `v1`, of which the first `n` are the row's (n = 8
    /// but for the last, short group, whose other lanes are 0).
    ///
    /// # Safety
    /// AVX2 must be available.
    unsafe fn visit(&mut self, j: usize, v0: std::arch::x86_64::__m256d, v1: std::arch::x86_64::__m256d, n: usize);
}

/// [`row_sum_and_bad`] for vector code: reads the row eight values at a time (float32 widened
/// exactly to f64), summing and range-checking them exactly as [`row_sum_and_bad`] does (same
/// lanes, same order, same comparisons), and hands each group to `visitor`. Returns the row's
/// (sum, bad). For row passes that do more with each value than check it.
///
/// # Safety
/// AVX2 must be available (call it from AVX2 code, where it is inlined).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn row_sum_and_bad_avx2<T: Score, V: RowVisitor>(row: &[T], visitor: &mut V) -> (f64, bool) {
    // SAFETY: AVX2 is available (the caller's contract). Loads read row[j..j+8] with j + 8 <= n8 <= row.len(), and `load_tail` reads row[n8..row.len()] only; the lane stores write the 8-value `lanes`. Offsets depend only on row.len(), which no other thread can change; `visit` gets j + n <= row.len().
    unsafe {
        use std::arch::x86_64::*;
        let n8 = row.len() / 8 * 8;
        let (mut s0, mut s1, mut bad) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
        for j in (0..n8).step_by(8) {
            // SAFETY: j + 8 <= row.len().
            let v0 = T::load4(row.as_ptr().add(j));
            let v1 = T::load4(row.as_ptr().add(j + 4));
            s0 = _mm256_add_pd(s0, v0);
            s1 = _mm256_add_pd(s1, v1);
            bad = _mm256_or_pd(bad, _mm256_or_pd(out_of_range_avx2(v0), out_of_range_avx2(v1)));
            visitor.visit(j, v0, v1, 8);
        }
        let mut lanes = [0.0f64; 8];
        _mm256_storeu_pd(lanes.as_mut_ptr(), s0);
        _mm256_storeu_pd(lanes.as_mut_ptr().add(4), s1);
        let mut sum = 0.0;
        for l in lanes {
            sum += l;
        }
        let mut any_bad = _mm256_movemask_pd(bad) != 0;
        let t = row.len() - n8;
        if t > 0 {
            let (padded, v0, v1) = T::load_tail(row.as_ptr().add(n8), t);
            for &v in &padded[..t] {
                sum += v;
                any_bad |= !in_range(v);
            }
            visitor.visit(n8, v0, v1, t);
        }
        (sum, any_bad)
    }
}

/// Whether a row passes the value and row-sum checks requested.
#[inline(always)]
#[allow(clippy::nonminimal_bool, clippy::neg_cmp_op_on_partial_ord)] // NaN sums fail
pub fn row_ok(sum: f64, bad: bool, check: &Checks) -> bool {
    !(check.values && bad) && !(check.row_sums && !((sum - 1.0).abs() <= ROW_SUM_TOL))
}

/// The precise error for row `i`, which is known to have failed a check.
pub fn row_error<T: Score>(x: &Inputs<T>, i: usize, check: &Checks) -> KernelError {
    let row = x.row(i);
    for (j, v) in row.iter().enumerate() {
        let v = v.to_f64();
        if !v.is_finite() {
            return KernelError::NonFinite { row: i, col: j, value: v };
        }
    }
    for (j, v) in row.iter().enumerate() {
        let v = v.to_f64();
        if check.values && !in_range(v) {
            return KernelError::OutOfRange { row: i, col: j, value: v };
        }
    }
    let (sum, bad) = row_sum_and_bad(row);
    if row_ok(sum, bad, check) {
        // The row failed when first read and passes now: another thread changed it.
        return KernelError::InputChanged;
    }
    let sum: f64 = row.iter().map(|v| v.to_f64()).sum();
    KernelError::RowSum { row: i, sum }
}

/// The error of the first row of `rows` failing a check, after an earlier read of those rows
/// found one: [`KernelError::InputChanged`] if none fails any more (another thread changed
/// the data in between).
pub fn failed_row_error<T: Score>(x: &Inputs<T>, rows: std::ops::Range<usize>, check: &Checks) -> KernelError {
    first_row_error(x, rows, check).unwrap_or(KernelError::InputChanged)
}

/// First row in `rows` that fails a check, as an error.
pub fn first_row_error<T: Score>(
    x: &Inputs<T>,
    rows: std::ops::Range<usize>,
    check: &Checks,
) -> Option<KernelError> {
    rows.into_iter().find_map(|i| {
        let (s, b) = row_sum_and_bad(x.row(i));
        (!row_ok(s, b, check)).then(|| row_error(x, i, check))
    })
}

/// Checks every label is in [0, K).
pub fn labels(x: &Inputs<impl Score>) -> Result<(), KernelError> {
    let k = x.k as i64;
    let ok = x.labels.iter().fold(true, |acc, &l| acc & (l >= 0) & (l < k));
    if ok {
        return Ok(());
    }
    // Found by the fold above unless another thread changed the labels in between.
    match x.labels.iter().enumerate().find(|(_, &l)| l < 0 || l >= k) {
        Some((index, &label)) => Err(KernelError::LabelOutOfRange { index, label, num_classes: x.k }),
        None => Err(KernelError::InputChanged),
    }
}

crate::kernels::core::simd::multiversion! {
    pub fn first_failing_row<T: Score>(x: &Inputs<T>, rows: std::ops::Range<usize>, check: &Checks) -> Option<usize> {
        rows.into_iter().find(|&i| {
            let (s, b) = row_sum_and_bad(x.row(i));
            !row_ok(s, b, check)
        })
    }
}

/// A stand-alone parallel pass running all requested checks; the error names the first bad
/// row (lowest index), whatever the number of threads.
pub fn scan<T: Score>(x: &Inputs<T>, check: &Checks) -> Result<(), KernelError> {
    if check.labels {
        labels(x)?;
    }
    if !check.values && !check.row_sums {
        return Ok(());
    }
    let chunks = row_chunks(x.n, x.k);
    let first_bad = chunks
        .par_iter()
        .map(|r| first_failing_row(x, r.clone(), check))
        .collect::<Vec<_>>();
    match first_bad.into_iter().flatten().next() {
        Some(i) => Err(row_error(x, i, check)),
        None => Ok(()),
    }
}

/// What to report when a kernel that checks the input on its way (or after) failed first with
/// `e`: the input's own first error if it has one, as [`scan`] names it, else `e`. Invalid input
/// is reported as such, never as an error it caused further on.
pub fn input_error_first<T: Score>(x: &Inputs<T>, check: &Checks, e: KernelError) -> KernelError {
    match scan(x, check) {
        Err(own) => own,
        Ok(()) => e,
    }
}

/// The per-value half of [`weights`]: each weight finite and >= 0 (a table's counts, whose
/// reduction does not need a finite total).
pub fn weight_values(w: &[f64], name: &str) -> Result<(), KernelError> {
    if let Some(i) = w.iter().position(|&x| !(x.is_finite() && x >= 0.0)) {
        return Err(KernelError::Parameter(format!("{name}[{i}] is {}: weights must be finite and >= 0", w[i])));
    }
    Ok(())
}

/// The weight rule of every weighted kernel (the Python layer applies the same rule first,
/// `calibkit._params.check_weights`): each weight finite and >= 0, and their sum finite (an
/// overflowing sum would make every weighted mean NaN). Returns that sum. Whether an all-zero
/// total is an error is the caller's (some kernels give empty groups then).
pub fn weights(w: &[f64], name: &str) -> Result<f64, KernelError> {
    weight_values(w, name)?;
    let total: f64 = w.iter().sum();
    if !total.is_finite() {
        return Err(KernelError::Parameter(format!(
            "the sum of {name} exceeds the largest float64 (about 1.8e308); scale the weights down"
        )));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one weight rule: each weight finite and >= 0, the sum finite; and every weighted
    /// kernel applies it (a NaN, negative or overflowing weight is an error that names the
    /// weights, never a NaN result): KS, smoothing, isotonic, the grouped bin tables and both
    /// bootstraps' base weights.
    #[test]
    fn weights_are_checked_by_one_rule_in_every_weighted_kernel() {
        use crate::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
        use crate::kernels::weighted::resample::{bootstrap, bootstrap_grouped, Cells, Scheme, Triples};
        use crate::kernels::binfree::{isotonic, ks, smooth};
        use crate::kernels::{Binning, Norm};
        assert_eq!(weights(&[0.0, 2.5, 1.0], "w").ok(), Some(3.5));
        assert_eq!(weights(&[], "w").ok(), Some(0.0));
        for (w, says) in [
            (vec![1.0, f64::NAN], "w[1] is NaN: weights must be finite and >= 0"),
            (vec![-1.0, 1.0], "w[0] is -1: weights must be finite and >= 0"),
            (vec![1.0, f64::INFINITY], "w[1] is inf"),
            (vec![f64::MAX, f64::MAX], "the sum of w exceeds the largest float64"),
        ] {
            match weights(&w, "w") {
                Err(KernelError::Parameter(m)) => assert!(m.starts_with(says), "{m}"),
                other => panic!("{w:?}: {other:?}"),
            }
        }
        let (s, o) = ([0.2, 0.7], [0.0, 1.0]);
        for w in [[1.0, f64::NAN], [-1.0, 1.0], [f64::MAX, f64::MAX]] {
            let named = |e: KernelError| {
                matches!(&e, KernelError::Parameter(m) if m.starts_with("weights[") || m.starts_with("the sum of weights exceeds"))
            };
            assert!(ks::ks_error(&s, &o, Some(&w)).is_err_and(named), "ks {w:?}");
            assert!(smooth::grid_mass(&s, &o, Some(&w), 8).is_err_and(named), "smooth {w:?}");
            assert!(isotonic::isotonic_fit(&s, &o, Some(&w)).is_err_and(named), "isotonic {w:?}");
            let rows = GroupedRows { groups: None, scores: &s[..], outcomes: &o, weights: Some(&w), num_groups: 1 };
            assert!(grouped_bin_stats(&rows, Binning::Adaptive, 2).is_err_and(named), "grouped {w:?}");
            let base = |e: KernelError| {
                matches!(&e, KernelError::Parameter(m) if m.starts_with("base weights[") || m.starts_with("the sum of base weights exceeds"))
            };
            let cells = Cells { cell: &[0, 1], score: &s, hit: &[0, 0], base: Some(&w), width: 1, groups: 1, nb: 2 };
            assert!(bootstrap(&cells, Norm::L1, false, Scheme::Poisson, 0, 4).is_err_and(base), "bootstrap {w:?}");
            let t = Triples { groups: &[0, 0], scores: &s, outcomes: &o, rows: &[0, 1], base: Some(&w), n_rows: 2, num_groups: 1 };
            let grouped = bootstrap_grouped(&t, Binning::Adaptive, 2, Norm::L1, false, Scheme::Poisson, 0, 4);
            assert!(grouped.is_err_and(base), "bootstrap_grouped {w:?}");
        }
        // All-zero weights: the kernels that need a positive total say so.
        let zero = [0.0, 0.0];
        assert!(ks::ks_error(&s, &o, Some(&zero)).is_err());
        assert!(isotonic::isotonic_fit(&s, &o, Some(&zero)).is_err());
    }

    /// A kernel's error on input that fails a check is replaced by the check's error, naming
    /// the first bad row (or label); on valid input the kernel's error stands.
    #[test]
    fn invalid_input_is_named_before_the_error_it_caused() {
        let mut p = vec![0.25f64, 0.75, 0.5, 0.5, 0.1, 0.9, 0.3, 0.7];
        let y = [0i64, 1, 0, 1];
        let x = Inputs::new(&p, &y, 2).unwrap();
        assert_eq!(input_error_first(&x, &Checks::ALL, KernelError::InputChanged), KernelError::InputChanged);
        p[5] = f64::NAN;
        p[7] = 2.0;
        let x = Inputs::new(&p, &y, 2).unwrap();
        let e = input_error_first(&x, &Checks::ALL, KernelError::InputChanged);
        assert!(matches!(e, KernelError::NonFinite { row: 2, .. }), "{e:?}");
        // Only the checks asked for: with values unchecked, the kernel's error stands.
        let unchecked = Checks::NONE;
        assert_eq!(input_error_first(&x, &unchecked, KernelError::InputChanged), KernelError::InputChanged);
        let z = [0i64, 1, 0, 2];
        let x = Inputs::new(&p[..], &z, 2).unwrap();
        let e = input_error_first(&x, &Checks::ALL, KernelError::InputChanged);
        assert!(matches!(e, KernelError::LabelOutOfRange { index: 3, .. }), "{e:?}");
    }

    /// A row or label that failed when first read and passes when read again (another thread
    /// changed it) is named as InputChanged, not as a made-up error or a panic.
    #[test]
    fn rows_and_labels_that_pass_on_the_second_read_are_input_changed() {
        let p = [0.25f64, 0.75, 0.5, 0.5];
        let y = [0i64, 1];
        let x = Inputs::new(&p, &y, 2).unwrap();
        assert_eq!(row_error(&x, 1, &Checks::ALL), KernelError::InputChanged);
        assert_eq!(failed_row_error(&x, 0..2, &Checks::ALL), KernelError::InputChanged);
        let bad = [0.25f64, 0.75, 0.5, 0.7];
        let x = Inputs::new(&bad, &y, 2).unwrap();
        assert!(matches!(failed_row_error(&x, 0..2, &Checks::ALL), KernelError::RowSum { row: 1, .. }));
    }

    /// `row_sum_surely_ok` passes clear rows, leaves those at the tolerance to the exact check,
    /// refuses NaN, and never passes a row (its sequential sum) that `row_sum_and_bad` fails:
    /// rows of many sizes scaled to sums within 2e-15 of the tolerance.
    #[test]
    fn row_sum_surely_ok_is_conservative() {
        assert!(row_sum_surely_ok(1.0, 1000));
        assert!(row_sum_surely_ok(1.0 + 0.9 * ROW_SUM_TOL, 1000));
        assert!(row_sum_surely_ok(1.0 - 0.9 * ROW_SUM_TOL, 1000));
        assert!(!row_sum_surely_ok(1.0 + ROW_SUM_TOL, 1000));
        assert!(!row_sum_surely_ok(1.0 - ROW_SUM_TOL, 1000));
        assert!(!row_sum_surely_ok(f64::NAN, 10));
        // So many values that no order's sum can be trusted near the tolerance.
        assert!(!row_sum_surely_ok(1.0 + 0.5 * ROW_SUM_TOL, 1 << 30));
        let mut draw = crate::kernels::tests::xorshift(3);
        let (mut decided, mut total) = (0, 0);
        for k in [2usize, 9, 100, 1000, 10_000] {
            for target in [1.0 + ROW_SUM_TOL, 1.0 - ROW_SUM_TOL] {
                for _ in 0..200 {
                    let mut row: Vec<f64> = (0..k).map(|_| draw()).collect();
                    let s: f64 = row.iter().sum();
                    let scale = target * (1.0 + (draw() - 0.5) * 4e-15) / s;
                    row.iter_mut().for_each(|v| *v *= scale);
                    let sequential = row.iter().fold(0.0, |a, v| a + v);
                    let (sum, bad) = row_sum_and_bad(&row);
                    total += 1;
                    if row_sum_surely_ok(sequential, k) {
                        decided += 1;
                        assert!(row_ok(sum, bad, &Checks::ALL), "k={k} sums {sequential} {sum}");
                    }
                }
            }
        }
        // Both sides were exercised: rows decided on the way, and rows left to the exact check.
        assert!(decided > 0 && decided < total, "{decided} of {total}");
    }
}
