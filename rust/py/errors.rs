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
