//! Glue of the trust layer (bootstrap and consistency resampling on fixed per-entry bins):
//! array extraction, GIL release, error mapping. No computing.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::errors::{guard, to_py, InputTypeError, ShapeMismatchError};
use super::{c_order, checks, grouping, run};
use crate::kernels::gce::rows::{score_rows as rows_of, ScoreRows};
use crate::kernels::Inputs;
use crate::kernels::weighted::adaptive::Sorted;
use crate::kernels::weighted::consistency;
use crate::kernels::weighted::resample::{self, Cells, Scheme};
use crate::kernels::{KernelError, Norm};

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| ShapeMismatchError::new_err(format!("{name} must be contiguous")))
}

/// The optional per-row base weights as a slice.
fn base_of<'a>(base: &'a Option<PyReadonlyArray1<'_, f64>>) -> PyResult<Option<&'a [f64]>> {
    base.as_ref().map(|b| slice(b, "base")).transpose()
}

/// The norm and the weighting scheme of a bootstrap entry point, by name.
fn parse_resampling(norm: &str, weights: &str) -> PyResult<(Norm, Scheme)> {
    Ok((Norm::parse(norm).map_err(to_py)?, Scheme::parse(weights).map_err(to_py)?))
}

#[allow(clippy::too_many_arguments)]
fn with_cells<R: Send>(
    py: Python<'_>,
    cell: &PyReadonlyArray2<'_, u32>,
    score: &PyReadonlyArray2<'_, f64>,
    hit: &PyReadonlyArray1<'_, u32>,
    base: &Option<PyReadonlyArray1<'_, f64>>,
    groups: usize,
    nb: usize,
    f: impl FnOnce(&Cells<'_>) -> Result<R, KernelError> + Send,
) -> PyResult<R> {
    let width = cell.shape()[1];
    let c = c_order(cell, "cell")?;
    let s = c_order(score, "score")?;
    let h = slice(hit, "hit")?;
    let b = base_of(base)?;
    let cells = Cells { cell: c, score: s, hit: h, base: b, width, groups, nb };
    py.detach(|| f(&cells)).map_err(to_py)
}

/// resample_bootstrap(cell, score, hit, base, groups, nb, norm, class_conditional, weights, seed, n_resamples) -> (R,)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn resample_bootstrap<'py>(
    py: Python<'py>,
    cell: PyReadonlyArray2<'py, u32>,
    score: PyReadonlyArray2<'py, f64>,
    hit: PyReadonlyArray1<'py, u32>,
    base: Option<PyReadonlyArray1<'py, f64>>,
    groups: usize,
    nb: usize,
    norm: &str,
    class_conditional: bool,
    weights: &str,
    seed: u64,
    n_resamples: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    guard(py, || {
        let (norm, scheme) = parse_resampling(norm, weights)?;
        let v = with_cells(py, &cell, &score, &hit, &base, groups, nb, |c| {
            resample::bootstrap(c, norm, class_conditional, scheme, seed, n_resamples)
        })?;
        Ok(v.into_pyarray(py))
    })
}

/// resample_consistency(cell, score, hit, base, groups, nb, norm, class_conditional, seed, n_resamples) -> (R,)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn resample_consistency<'py>(
    py: Python<'py>,
    cell: PyReadonlyArray2<'py, u32>,
    score: PyReadonlyArray2<'py, f64>,
    hit: PyReadonlyArray1<'py, u32>,
    base: Option<PyReadonlyArray1<'py, f64>>,
    groups: usize,
    nb: usize,
    norm: &str,
    class_conditional: bool,
    seed: u64,
    n_resamples: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    guard(py, || {
        let norm = Norm::parse(norm).map_err(to_py)?;
        let v = with_cells(py, &cell, &score, &hit, &base, groups, nb, |c| {
            consistency::consistency(c, norm, class_conditional, seed, n_resamples)
        })?;
        Ok(v.into_pyarray(py))
    })
}

/// AdaptiveBootstrap(cell, score, hit, groups, nb): the sorted order of a cell table's kept
/// entries (`trust/cells.py`'s layout), for adaptive bootstrap resampling: built once (the
/// sort, with the GIL released), then `resample` runs any block of resamples on it, so a
/// progress bar's blocks do not sort again.
#[pyclass(frozen, module = "calibkit._native")]
pub struct AdaptiveBootstrap {
    sorted: Sorted,
}

#[pymethods]
impl AdaptiveBootstrap {
    #[new]
    fn new(
        py: Python<'_>,
        cell: PyReadonlyArray2<'_, u32>,
        score: PyReadonlyArray2<'_, f64>,
        hit: PyReadonlyArray1<'_, u32>,
        groups: usize,
        nb: usize,
    ) -> PyResult<Self> {
        guard(py, || {
            let sorted = with_cells(py, &cell, &score, &hit, &None, groups, nb, Sorted::from_cells)?;
            Ok(AdaptiveBootstrap { sorted })
        })
    }

    /// resample(base, num_bins, norm, class_conditional, weights, seed, n_resamples, first=0) -> (R,)
    ///
    /// Resamples `first..first + n_resamples`: those of one call with `first + n_resamples`.
    #[pyo3(signature = (base, num_bins, norm, class_conditional, weights, seed, n_resamples, first=0))]
    #[allow(clippy::too_many_arguments)]
    fn resample<'py>(
        &self,
        py: Python<'py>,
        base: Option<PyReadonlyArray1<'py, f64>>,
        num_bins: usize,
        norm: &str,
        class_conditional: bool,
        weights: &str,
        seed: u64,
        n_resamples: usize,
        first: usize,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        guard(py, || {
            let (norm, scheme) = parse_resampling(norm, weights)?;
            let b = base_of(&base)?;
            let sorted = &self.sorted;
            let v = py
                .detach(|| sorted.resample(num_bins, norm, class_conditional, scheme, seed, b, first, n_resamples))
                .map_err(to_py)?;
            Ok(v.into_pyarray(py))
        })
    }
}

type RowsOut<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<i64>>);

/// score_rows(labels, probs, max_prob, class_conditional, threshold, check_row_sums=True) -> (group, score, outcome, row)
#[pyfunction]
#[pyo3(signature = (labels, probs, max_prob, class_conditional, threshold, check_row_sums=true))]
fn score_rows<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<'py, i64>,
    probs: &Bound<'py, PyAny>,
    max_prob: bool,
    class_conditional: bool,
    threshold: f64,
    check_row_sums: bool,
) -> PyResult<RowsOut<'py>> {
    guard(py, || {
        let g = grouping("even", max_prob, class_conditional, threshold).map_err(to_py)?;
        let c = checks(check_row_sums);
        let r: ScoreRows = if let Ok(p) = probs.extract::<PyReadonlyArray2<f64>>() {
            run(py, &labels, &p, |x: &Inputs<f64>| rows_of(x, &g, &c))?
        } else if let Ok(p) = probs.extract::<PyReadonlyArray2<f32>>() {
            run(py, &labels, &p, |x: &Inputs<f32>| rows_of(x, &g, &c))?
        } else {
            return Err(InputTypeError::new_err(
                "probs must be a 2-D float32 or float64 NumPy array (calibkit converts other inputs before this call)",
            ));
        };
        Ok((r.group.into_pyarray(py), r.score.into_pyarray(py), r.outcome.into_pyarray(py), r.row.into_pyarray(py)))
    })
}

/// bootstrap_weights(weights, seed, r0, count, n) -> (count, n) per-row multiplicities
#[pyfunction]
fn bootstrap_weights<'py>(
    py: Python<'py>,
    weights: &str,
    seed: u64,
    r0: usize,
    count: usize,
    n: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    guard(py, || {
        let scheme = Scheme::parse(weights).map_err(to_py)?;
        let v = py.detach(|| resample::weights_matrix(scheme, seed, r0, count, n));
        v.into_pyarray(py).reshape([count, n])
    })
}

/// consistency_draws(score, seed, r0, count) -> (count, N) int64: the labels of consistency
/// resamples `r0..r0 + count` (a class per row for an (N, K) probability matrix; 1 = correct for
/// (N, 1) top-label confidences), the draws `resample_consistency` makes.
#[pyfunction]
fn consistency_draws<'py>(
    py: Python<'py>,
    score: PyReadonlyArray2<'py, f64>,
    seed: u64,
    r0: usize,
    count: usize,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    guard(py, || {
        let (n, width) = (score.shape()[0], score.shape()[1]);
        let s = c_order(&score, "score")?;
        let v = py.detach(|| consistency::consistency_draws(s, width, seed, r0, count)).map_err(to_py)?;
        v.into_pyarray(py).reshape([count, n])
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(consistency_draws, m)?)?;
    m.add_function(wrap_pyfunction!(resample_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(resample_consistency, m)?)?;
    m.add_class::<AdaptiveBootstrap>()?;
    m.add_function(wrap_pyfunction!(score_rows, m)?)?;
    m.add_function(wrap_pyfunction!(bootstrap_weights, m)?)?;
    Ok(())
}
