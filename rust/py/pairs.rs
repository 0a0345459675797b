//! Glue of the top-label pair kernels ([`crate::kernels::gce::pairs`]): confidence (float32/float64,
//! 1-D, contiguous), correct (uint8 0/1), optional predicted (int64), num_classes.

use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::{guard, to_py, InputTypeError, ShapeMismatchError};
use super::{grouping, stats_to_py, DETACH_ENTRIES};
use crate::kernels::gce::pairs::{self, Pairs};
use crate::kernels::{GceSpec, KernelError, Norm, Score};

/// Runs `f` on the pairs, with the GIL released when the input is large.
fn run<T, R, F>(
    py: Python<'_>,
    conf: &PyReadonlyArray1<T>,
    correct: &PyReadonlyArray1<u8>,
    predicted: &Option<PyReadonlyArray1<i64>>,
    num_classes: usize,
    f: F,
) -> PyResult<R>
where
    T: Score + numpy::Element,
    R: Send,
    F: FnOnce(&Pairs<T>) -> Result<R, KernelError> + Send,
{
    let contiguous = |name: &str| ShapeMismatchError::new_err(format!("{name} must be contiguous (calibkit copies before this call)"));
    let c = conf.as_slice().map_err(|_| contiguous("confidence"))?;
    let o = correct.as_slice().map_err(|_| contiguous("correct"))?;
    let p = match predicted {
        Some(p) => Some(p.as_slice().map_err(|_| contiguous("predicted"))?),
        None => None,
    };
    let x = Pairs::new(c, o, p, num_classes).map_err(to_py)?;
    let res = if c.len() >= DETACH_ENTRIES { py.detach(|| f(&x)) } else { f(&x) };
    res.map_err(to_py)
}

macro_rules! dispatch {
    ($py:expr, $conf:expr, $correct:expr, $pred:expr, $k:expr, |$x:ident| $body:expr) => {{
        if let Ok(c) = $conf.extract::<PyReadonlyArray1<f64>>() {
            run($py, &c, &$correct, &$pred, $k, |$x: &Pairs<f64>| $body)
        } else if let Ok(c) = $conf.extract::<PyReadonlyArray1<f32>>() {
            run($py, &c, &$correct, &$pred, $k, |$x: &Pairs<f32>| $body)
        } else {
            Err(InputTypeError::new_err(
                "confidence must be a 1-D float32 or float64 NumPy array (calibkit converts other inputs before this call)",
            ))
        }
    }};
}

/// pairs_gce(confidence, correct, predicted, num_classes, binning, class_conditional, threshold, norm, num_bins) -> float
#[pyfunction]
#[pyo3(signature = (confidence, correct, predicted, num_classes, binning, class_conditional, threshold, norm, num_bins))]
#[allow(clippy::too_many_arguments)]
fn pairs_gce(
    py: Python<'_>,
    confidence: &Bound<'_, PyAny>,
    correct: PyReadonlyArray1<u8>,
    predicted: Option<PyReadonlyArray1<i64>>,
    num_classes: usize,
    binning: &str,
    class_conditional: bool,
    threshold: f64,
    norm: &str,
    num_bins: usize,
) -> PyResult<f64> {
    guard(py, || {
        let g = grouping(binning, true, class_conditional, threshold).map_err(to_py)?;
        let spec = GceSpec { grouping: g, norm: Norm::parse(norm).map_err(to_py)?, num_bins };
        dispatch!(py, confidence, correct, predicted, num_classes, |x| pairs::gce(x, &spec))
    })
}

/// pairs_bin_stats(confidence, correct, predicted, num_classes, binning, class_conditional, threshold, num_bins)
/// -> (counts int64 (G, nb), sum_score (G, nb), sum_outcome (G, nb), edges (G, nb+1)[, units int64 (G, nb, 2)])
#[pyfunction]
#[pyo3(signature = (confidence, correct, predicted, num_classes, binning, class_conditional, threshold, num_bins, units=false))]
#[allow(clippy::too_many_arguments)]
fn pairs_bin_stats<'py>(
    py: Python<'py>,
    confidence: &Bound<'py, PyAny>,
    correct: PyReadonlyArray1<u8>,
    predicted: Option<PyReadonlyArray1<i64>>,
    num_classes: usize,
    binning: &str,
    class_conditional: bool,
    threshold: f64,
    num_bins: usize,
    units: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(py, || {
        let g = grouping(binning, true, class_conditional, threshold).map_err(to_py)?;
        let st = dispatch!(py, confidence, correct, predicted, num_classes, |x| pairs::bin_stats(x, &g, num_bins))?;
        stats_to_py(py, st, units)
    })
}

/// pairs_evaluate(confidence, correct, predicted, num_classes, specs, num_bins) -> float64 (len(specs), len(num_bins))
/// where each spec is (binning, max_prob, class_conditional, threshold, norm) with max_prob True.
#[pyfunction]
#[pyo3(signature = (confidence, correct, predicted, num_classes, specs, num_bins))]
fn pairs_evaluate<'py>(
    py: Python<'py>,
    confidence: &Bound<'py, PyAny>,
    correct: PyReadonlyArray1<u8>,
    predicted: Option<PyReadonlyArray1<i64>>,
    num_classes: usize,
    specs: Vec<(String, bool, bool, f64, String)>,
    num_bins: Vec<usize>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    guard(py, || {
        let metrics = specs
            .iter()
            .map(|(b, mp, cc, t, n)| Ok((grouping(b, *mp, *cc, *t)?, Norm::parse(n)?)))
            .collect::<Result<Vec<_>, KernelError>>()
            .map_err(to_py)?;
        let nb = num_bins.len();
        let out = dispatch!(py, confidence, correct, predicted, num_classes, |x| pairs::evaluate(x, &metrics, &num_bins))?;
        out.into_pyarray(py).reshape([metrics.len(), nb])
    })
}

/// Adds the pair functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pairs_gce, m)?)?;
    m.add_function(wrap_pyfunction!(pairs_bin_stats, m)?)?;
    m.add_function(wrap_pyfunction!(pairs_evaluate, m)?)?;
    Ok(())
}
