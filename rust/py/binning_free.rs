//! Glue of the binning-free estimators (smooth ECE, KS error, CORP): validated top-label pairs,
//! value checks of the whole matrix, the smoothing grid, the KS scan and isotonic regression.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::errors::{guard, to_py, ShapeMismatchError};

type Pair<'py, A, B> = (Bound<'py, PyArray1<A>>, Bound<'py, PyArray1<B>>);
use super::{checks, DETACH_ENTRIES};
use crate::kernels::gce::pairs::Pairs;
use crate::kernels::binfree::{isotonic, ks, smooth};
use crate::kernels::core::validate;
use crate::kernels::gce::toplabel;
use crate::kernels::KernelError;

fn slice<'a>(a: &'a PyReadonlyArray1<'_, f64>, name: &str) -> PyResult<&'a [f64]> {
    a.as_slice()
        .map_err(|_| ShapeMismatchError::new_err(format!("{name} must be a contiguous float64 array")))
}

fn opt_slice<'a>(a: &'a Option<PyReadonlyArray1<'_, f64>>, name: &str) -> PyResult<Option<&'a [f64]>> {
    a.as_ref().map(|a| slice(a, name)).transpose()
}

fn detached<R: Send>(py: Python<'_>, n: usize, f: impl FnOnce() -> Result<R, KernelError> + Send) -> PyResult<R> {
    let r = if n >= DETACH_ENTRIES { py.detach(f) } else { f() };
    r.map_err(to_py)
}


/// toplabel_pairs(labels, probs, check_row_sums=True) -> (confidence float64 (N,), correct bool (N,))
#[pyfunction]
#[pyo3(signature = (labels, probs, check_row_sums=true))]
fn toplabel_pairs<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<i64>,
    probs: &Bound<'py, PyAny>,
    check_row_sums: bool,
) -> PyResult<Pair<'py, f64, bool>> {
    guard(py, || {
        let c = checks(check_row_sums);
        let top = dispatch!(py, labels, probs, |x| toplabel::summarise(x, &c))?;
        Ok((top.conf.into_pyarray(py), top.correct.into_pyarray(py)))
    })
}

/// check_values(labels, probs, check_row_sums=True) -> None: the value checks of `gce`.
#[pyfunction]
#[pyo3(signature = (labels, probs, check_row_sums=true))]
fn check_values(py: Python<'_>, labels: PyReadonlyArray1<i64>, probs: &Bound<'_, PyAny>, check_row_sums: bool) -> PyResult<()> {
    guard(py, || {
        let c = checks(check_row_sums);
        dispatch!(py, labels, probs, |x| validate::scan(x, &c))
    })
}

/// check_pairs(confidence, correct, predicted, num_classes) -> None: the value checks of the
/// top-label pair kernels (confidence finite within [0, 1] up to RANGE_TOL, correct 0/1,
/// predicted in [0, num_classes)).
#[pyfunction]
#[pyo3(signature = (confidence, correct, predicted, num_classes))]
fn check_pairs(
    py: Python<'_>,
    confidence: PyReadonlyArray1<f64>,
    correct: PyReadonlyArray1<u8>,
    predicted: Option<PyReadonlyArray1<i64>>,
    num_classes: usize,
) -> PyResult<()> {
    guard(py, || {
        let c = slice(&confidence, "confidence")?;
        let o = correct.as_slice().map_err(|_| ShapeMismatchError::new_err("correct must be contiguous"))?;
        let p = match &predicted {
            Some(p) => Some(p.as_slice().map_err(|_| ShapeMismatchError::new_err("predicted must be contiguous"))?),
            None => None,
        };
        detached(py, c.len(), || Pairs::new(c, o, p, num_classes)?.validate())
    })
}

/// smooth_grid(scores, values, weights, m) -> (values grid (m,), mass grid (m,))
#[pyfunction]
#[pyo3(signature = (scores, values, weights, m))]
fn smooth_grid<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray1<f64>,
    values: PyReadonlyArray1<f64>,
    weights: Option<PyReadonlyArray1<f64>>,
    m: usize,
) -> PyResult<Pair<'py, f64, f64>> {
    guard(py, || {
        let (s, v, w) = (slice(&scores, "scores")?, slice(&values, "values")?, opt_slice(&weights, "weights")?);
        let g = detached(py, s.len(), || smooth::grid_mass(s, v, w, m))?;
        Ok((g.values.into_pyarray(py), g.mass.into_pyarray(py)))
    })
}

/// ks_error(scores, outcomes, weights=None) -> float
#[pyfunction]
#[pyo3(signature = (scores, outcomes, weights=None))]
fn ks_error(
    py: Python<'_>,
    scores: PyReadonlyArray1<f64>,
    outcomes: PyReadonlyArray1<f64>,
    weights: Option<PyReadonlyArray1<f64>>,
) -> PyResult<f64> {
    guard(py, || {
        let (s, o, w) = (slice(&scores, "scores")?, slice(&outcomes, "outcomes")?, opt_slice(&weights, "weights")?);
        detached(py, s.len(), || ks::ks_error(s, o, w))
    })
}

/// isotonic_fit(x, y, weights=None) -> float64 (N,): non-decreasing least-squares fit, ties pooled
#[pyfunction]
#[pyo3(signature = (x, y, weights=None))]
fn isotonic_fit<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<f64>,
    y: PyReadonlyArray1<f64>,
    weights: Option<PyReadonlyArray1<f64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    guard(py, || {
        let (xs, ys, w) = (slice(&x, "x")?, slice(&y, "y")?, opt_slice(&weights, "weights")?);
        let fit = detached(py, xs.len(), || isotonic::isotonic_fit(xs, ys, w))?;
        Ok(fit.into_pyarray(py))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(toplabel_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(check_values, m)?)?;
    m.add_function(wrap_pyfunction!(check_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(smooth_grid, m)?)?;
    m.add_function(wrap_pyfunction!(ks_error, m)?)?;
    m.add_function(wrap_pyfunction!(isotonic_fit, m)?)?;
    Ok(())
}
