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
        KernelError::InputChanged => "InputChangedError",
    }
}

pub fn to_py(py: Python<'_>, e: KernelError) -> PyErr {
    let msg = e.to_string();
    let cls = py
        .import("calibkit.errors")
        .and_then(|m| m.getattr(class_name(&e)));
    match cls {
        Ok(c) => PyErr::from_value(c.call1((msg,)).unwrap_or_else(|err| err.into_value(py).into_bound(py).into_any())),
        Err(_) => pyo3::exceptions::PyValueError::new_err(msg),
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
fn internal_error(py: Python<'_>, detail: &str) -> PyErr {
    let msg = format!(
        "internal error in calibkit's native code ({detail}); this is a bug, please report it \
         with the call that raised it"
    );
    match py.import("calibkit.errors").and_then(|m| m.getattr("InternalError")) {
        Ok(c) => match c.call1((msg.clone(),)) {
            Ok(v) => PyErr::from_value(v),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(msg),
        },
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(msg),
    }
}

/// The last-resort guard around every `#[pyfunction]` body: a Rust panic (which the kernels
/// are written never to raise: they return [`KernelError`]s) becomes
/// `calibkit.errors.InternalError` instead of PyO3's `PanicException` (a `BaseException` that
/// `except Exception` misses). Nothing is printed: [`install_quiet_panic_hook`] silences the
/// default hook. Panics on rayon threads are resumed on the calling thread by rayon (and by
/// `share::map_fold_here`), so they are caught here too. `py.detach` restores the GIL state on
/// unwinding, so the panic may come from inside it.
pub fn guard<R>(py: Python<'_>, f: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(internal_error(py, &panic_message(payload.as_ref()))),
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
