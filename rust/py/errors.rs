//! Kernel errors -> the Python exception classes of `calibkit.errors` (ValueError subclasses),
//! so users can catch one specific class and read one readable message.

use pyo3::prelude::*;

use crate::kernels::KernelError;

fn class_name(e: &KernelError) -> &'static str {
    match e {
        KernelError::NonFinite { .. } | KernelError::OutOfRange { .. } | KernelError::RowSum { .. } => {
            "InvalidProbabilitiesError"
        }
        KernelError::LabelOutOfRange { .. } => "InvalidLabelsError",
        KernelError::BadConfidence { .. } => "InvalidProbabilitiesError",
        KernelError::BadCorrect { .. } | KernelError::BadPredicted { .. } => "InvalidLabelsError",
        KernelError::Shape(_) => "ShapeMismatchError",
        KernelError::Parameter(_) => "InvalidParameterError",
    }
}

/// The message: the kernel's own, except that the value checks state the exact interval that is
/// accepted (both ends inclusive, compared in float64) and print the offending value with enough
/// digits to see that it lies outside: a row of float64 values "summing to 0.999" sums to
/// 0.99899999999999999911..., just outside [0.999, 1.001], and is refused.
pub fn message(e: &KernelError) -> String {
    use crate::kernels::validate::{RANGE_TOL, ROW_SUM_TOL};
    match *e {
        KernelError::RowSum { row, sum } => {
            let dev = (sum - 1.0).abs();
            // Near the edge, print the float64 values exactly (shortest round-trip form), so the
            // reader sees why a row "summing to 0.999" is refused.
            let (s, d) = if (dev - ROW_SUM_TOL).abs() < 1e-9 {
                (format!("{sum:?}"), format!("{dev:?}"))
            } else {
                (format!("{sum:.6}"), format!("{dev:.6}"))
            };
            format!(
                "row {row} of probs sums to {s}, not 1: rows are accepted when |sum - 1| <= \
                 {ROW_SUM_TOL:e}, i.e. sum in [1 - {ROW_SUM_TOL:e}, 1 + {ROW_SUM_TOL:e}], both ends \
                 inclusive, with sum and difference computed in float64 (here |sum - 1| = {d}); \
                 pass normalised probabilities (calibkit.softmax(logits) for logits), or a 0/1 \
                 label matrix for multilabel data"
            )
        }
        KernelError::OutOfRange { row, col, value } => format!(
            "probs[{row}, {col}] is {value:?}, outside [0, 1]: values are accepted in \
             [-{RANGE_TOL:e}, 1 + {RANGE_TOL:e}], both ends inclusive, compared in float64; these \
             look like logits or unnormalised scores: convert them with calibkit.softmax(logits) \
             first"
        ),
        _ => e.to_string(),
    }
}

pub fn to_py(py: Python<'_>, e: KernelError) -> PyErr {
    let msg = message(&e);
    let cls = py
        .import("calibkit.errors")
        .and_then(|m| m.getattr(class_name(&e)));
    match cls {
        Ok(c) => PyErr::from_value(c.call1((msg,)).unwrap_or_else(|err| err.into_value(py).into_bound(py).into_any())),
        Err(_) => pyo3::exceptions::PyValueError::new_err(msg),
    }
}
