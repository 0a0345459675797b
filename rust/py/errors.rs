//! Kernel errors -> the Python exception classes of `calibkit.errors` (each a subclass of the
//! built-in class a caller expects: `ValueError`, `TypeError`, `RuntimeError`), so users can
//! catch one specific class and read one readable message.
//!
//! The classes are defined in Python (`python/calibkit/errors.py`: they inherit from
//! `CalibkitError` and a built-in class at once, which `create_exception!` cannot express), and
//! imported here as typed Rust exceptions with `import_exception!`: PyO3 imports
//! `calibkit.errors` once, the first time one of them is raised.

use pyo3::prelude::*;

use crate::kernels::KernelError;

pyo3::import_exception!(calibkit.errors, InvalidProbabilitiesError);
pyo3::import_exception!(calibkit.errors, InvalidLabelsError);
pyo3::import_exception!(calibkit.errors, ShapeMismatchError);
pyo3::import_exception!(calibkit.errors, InvalidParameterError);
pyo3::import_exception!(calibkit.errors, InputTypeError);
pyo3::import_exception!(calibkit.errors, InputChangedError);
pyo3::import_exception!(calibkit.errors, InternalError);
pyo3::import_exception!(calibkit.errors, MemoryBudgetError);

/// Imports `calibkit.errors` and looks up each class above once (module init): a failure is
/// an `ImportError` of `calibkit._native` then, never a failed lookup (which PyO3 cannot
/// report as an exception) while a kernel error is being raised.
pub fn import_classes(py: Python<'_>) -> PyResult<()> {
    use pyo3::type_object::PyTypeInfo;
    let module = py.import("calibkit.errors")?;
    for name in [
        "InvalidProbabilitiesError",
        "InvalidLabelsError",
        "ShapeMismatchError",
        "InvalidParameterError",
        "InputTypeError",
        "InputChangedError",
        "InternalError",
        "MemoryBudgetError",
    ] {
        module.getattr(name)?; // present, so the typed lookups below cannot fail
    }
    InvalidProbabilitiesError::type_object(py);
    InvalidLabelsError::type_object(py);
    ShapeMismatchError::type_object(py);
    InvalidParameterError::type_object(py);
    InputTypeError::type_object(py);
    InputChangedError::type_object(py);
    InternalError::type_object(py);
    MemoryBudgetError::type_object(py);
    Ok(())
}

/// The message: the kernel's own, except that the value checks state the exact interval that is
/// accepted (both ends inclusive, compared in float64) and print the offending value with enough
/// digits to see that it lies outside: a row of float64 values "summing to 0.999" sums to
/// 0.99899999999999999911..., just outside [0.999, 1.001], and is refused.
pub fn message(e: &KernelError) -> String {
    use crate::kernels::core::validate::{RANGE_TOL, ROW_SUM_TOL};
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

/// The `calibkit.errors` exception of a kernel error, with its [`message`].
pub fn to_py(e: KernelError) -> PyErr {
    let msg = message(&e);
    match e {
        KernelError::NonFinite { .. }
        | KernelError::OutOfRange { .. }
        | KernelError::RowSum { .. }
        | KernelError::BadConfidence { .. } => InvalidProbabilitiesError::new_err(msg),
        KernelError::LabelOutOfRange { .. } | KernelError::BadCorrect { .. } | KernelError::BadPredicted { .. } => {
            InvalidLabelsError::new_err(msg)
        }
        KernelError::Shape(_) => ShapeMismatchError::new_err(msg),
        KernelError::Parameter(_) => InvalidParameterError::new_err(msg),
        KernelError::InputChanged => InputChangedError::new_err(msg),
        KernelError::Memory(_) => MemoryBudgetError::new_err(msg),
    }
}

/// The message of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// `calibkit.errors.InternalError` carrying `detail`.
fn internal_error(detail: &str) -> PyErr {
    InternalError::new_err(format!(
        "internal error in calibkit's native code ({detail}); this is a bug, please report it \
         with the call that raised it"
    ))
}

/// The last-resort guard around every `#[pyfunction]` body: a Rust panic (which the kernels
/// are written never to raise: they return [`KernelError`]s) becomes
/// `calibkit.errors.InternalError` instead of PyO3's `PanicException` (a `BaseException` that
/// `except Exception` misses). Nothing is printed: [`install_quiet_panic_hook`] silences the
/// default hook. Panics on rayon threads are resumed on the calling thread by rayon (and by
/// `share::map_fold_here`), so they are caught here too. `py.detach` restores the GIL state on
/// unwinding, so the panic may come from inside it.
pub fn guard<R>(_py: Python<'_>, f: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(internal_error(&panic_message(payload.as_ref()))),
    }
}

/// Replaces the default panic hook (which prints the message, and a backtrace with
/// `RUST_BACKTRACE`, on stderr) by a silent one, once. The hook is process-wide for the copy of
/// `std` linked into this extension module only: other Rust extensions keep their own.
/// `CALIBKIT_PANIC_TRACE=1` keeps the default hook, for debugging.
pub fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("CALIBKIT_PANIC_TRACE").is_none_or(|v| v != "1") {
            std::panic::set_hook(Box::new(|_| {}));
        }
    });
}
