//! Glue of the weighted binning primitive ([`crate::kernels::weighted::grouped`]).

use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1};
use crate::kernels::core::validate::Checks;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::{guard, to_py, InputTypeError, InvalidParameterError, ShapeMismatchError};
use super::DETACH_ENTRIES;
use crate::kernels::weighted::grouped::{grouped_bin_stats as kernel, grouped_bin_stats_at as kernel_at, GroupedRows};
use crate::kernels::{BinStats, Binning, Score};

fn contiguous<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        ShapeMismatchError::new_err(format!(
            "{name} must be contiguous (calibkit.binned.table copies before this call)"
        ))
    })
}

/// How the bins of a call are found: by the primitive's rules, or given upper edges.
#[derive(Clone, Copy)]
enum Bins<'a> {
    Rule(Binning, usize),
    At(&'a [f64], usize),
}

#[allow(clippy::too_many_arguments)]
fn run<T: Score + numpy::Element>(
    py: Python<'_>,
    groups: Option<&[i64]>,
    scores: &PyReadonlyArray1<'_, T>,
    outcomes: &[f64],
    weights: Option<&[f64]>,
    num_groups: usize,
    bins: Bins<'_>,
) -> PyResult<BinStats> {
    let s = contiguous(scores, "scores")?;
    let rows = GroupedRows { groups, scores: s, outcomes, weights, num_groups };
    let work = || match bins {
        Bins::Rule(binning, num_bins) => kernel(&rows, binning, num_bins),
        Bins::At(upper, num_bins) => kernel_at(&rows, upper, num_bins),
    };
    let res = if s.len() >= DETACH_ENTRIES { py.detach(work) } else { work() };
    res.map_err(to_py)
}

#[allow(clippy::too_many_arguments)]
fn dispatch<'py>(
    py: Python<'py>,
    groups: Option<PyReadonlyArray1<'py, i64>>,
    scores: &Bound<'py, PyAny>,
    outcomes: PyReadonlyArray1<'py, f64>,
    weights: Option<PyReadonlyArray1<'py, f64>>,
    num_groups: usize,
    bins: Bins<'_>,
    with_units: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let g = groups.as_ref().map(|a| contiguous(a, "groups")).transpose()?;
    let w = weights.as_ref().map(|a| contiguous(a, "weights")).transpose()?;
    let o = contiguous(&outcomes, "outcomes")?;
    let st = if let Ok(s) = scores.extract::<PyReadonlyArray1<f64>>() {
        run(py, g, &s, o, w, num_groups, bins)?
    } else if let Ok(s) = scores.extract::<PyReadonlyArray1<f32>>() {
        run(py, g, &s, o, w, num_groups, bins)?
    } else {
        // A wrong dtype is a type error (a wrong number of dimensions fails the same way:
        // the Python layer converts both before this call).
        return Err(InputTypeError::new_err("scores must be a 1-D float32 or float64 NumPy array"));
    };
    table_tuple(py, st, with_units)
}

/// A table as the tuple `grouped_bin_stats` returns (module doc of its binding).
fn table_tuple<'py>(py: Python<'py>, st: BinStats, with_units: bool) -> PyResult<Bound<'py, PyTuple>> {
    let shape = [st.groups, st.nb];
    let u = if with_units { Some(super::units::units_to_py(py, &st)?.map(|a| a.into_any())) } else { None };
    let count = st.count.into_pyarray(py).reshape(shape)?;
    let ss = st.sum_score.into_pyarray(py).reshape(shape)?;
    let so = st.sum_outcome.into_pyarray(py).reshape(shape)?;
    let edges: Bound<'py, PyArray2<f64>> = st.edges.into_pyarray(py).reshape([st.groups, st.nb + 1])?;
    let mut items = vec![count.into_any(), ss.into_any(), so.into_any(), edges.into_any()];
    if let Some(u) = u {
        items.push(u.unwrap_or_else(|| py.None().into_bound(py)));
    }
    PyTuple::new(py, items)
}

/// grouped_bin_stats(groups, scores, outcomes, weights, num_groups, binning, num_bins, units=False)
/// -> (counts (G, nb), sum_score (G, nb), sum_outcome (G, nb), edges (G, nb+1)), all float64,
/// then with `units` the exact score units (int64 (G, nb, 2), None for a table without them).
#[pyfunction]
#[pyo3(signature = (groups, scores, outcomes, weights, num_groups, binning, num_bins, units=false))]
#[allow(clippy::too_many_arguments)]
pub fn grouped_bin_stats<'py>(
    py: Python<'py>,
    groups: Option<PyReadonlyArray1<'py, i64>>,
    scores: &Bound<'py, PyAny>,
    outcomes: PyReadonlyArray1<'py, f64>,
    weights: Option<PyReadonlyArray1<'py, f64>>,
    num_groups: usize,
    binning: &str,
    num_bins: usize,
    units: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(py, || {
        let binning = Binning::parse(binning).map_err(to_py)?;
        dispatch(py, groups, scores, outcomes, weights, num_groups, Bins::Rule(binning, num_bins), units)
    })
}

/// weighted_matrix_stats(labels, probs, weights, binning, class_conditional, threshold, num_bins)
/// -> for each bool of the list `class_conditional`, a list with one tuple per bin count of the
/// list `num_bins`, each as grouped_bin_stats(..., units=True) on the kept (group, score,
/// outcome) triples of that all-probabilities grouping at `threshold` of the validated matrix,
/// each weighted by its row's weight, bit for bit, by passes over the matrix
/// ([`crate::kernels::weighted::matrix`]: even bins, pooled from the class-conditional sums when
/// both are asked for; or adaptive bins with each group sorted once for every bin count).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn weighted_matrix_stats<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<'py, i64>,
    probs: &Bound<'py, PyAny>,
    weights: PyReadonlyArray1<'py, f64>,
    binning: &str,
    class_conditional: Vec<bool>,
    threshold: f64,
    num_bins: Vec<usize>,
) -> PyResult<Vec<Vec<Bound<'py, PyTuple>>>> {
    guard(py, || {
        let binning = Binning::parse(binning).map_err(to_py)?;
        let w = contiguous(&weights, "weights")?;
        let tables = dispatch!(py, labels, probs, |x| crate::kernels::weighted::matrix::stats(
            x,
            w,
            binning,
            &class_conditional,
            threshold,
            &num_bins,
            &Checks::ALL
        ))?;
        tables.into_iter().map(|g| g.into_iter().map(|st| table_tuple(py, st, true)).collect()).collect()
    })
}

/// grouped_bin_stats_at(groups, scores, outcomes, weights, num_groups, edges, units=False)
/// -> as grouped_bin_stats, binned against given upper edges (G, B - 1): nb = B.
#[pyfunction]
#[pyo3(signature = (groups, scores, outcomes, weights, num_groups, edges, units=false))]
#[allow(clippy::too_many_arguments)]
pub fn grouped_bin_stats_at<'py>(
    py: Python<'py>,
    groups: Option<PyReadonlyArray1<'py, i64>>,
    scores: &Bound<'py, PyAny>,
    outcomes: PyReadonlyArray1<'py, f64>,
    weights: Option<PyReadonlyArray1<'py, f64>>,
    num_groups: usize,
    edges: numpy::PyReadonlyArray2<'py, f64>,
    units: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(py, || {
        use numpy::PyUntypedArrayMethods;
        let num_bins = edges.shape()[1] + 1;
        let upper = edges.as_slice().map_err(|_| ShapeMismatchError::new_err("edges must be C-contiguous"))?;
        dispatch(py, groups, scores, outcomes, weights, num_groups, Bins::At(upper, num_bins), units)
    })
}

/// The bin-count rule of adaptive binning (the kernel's own check).
fn check_adaptive_bins(num_bins: usize) -> PyResult<()> {
    let limits = crate::kernels::core::spec::Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: false, threshold: 0.0 };
    limits.check(num_bins).map_err(to_py)
}

/// adaptive_positions(n, num_bins) -> int64 (num_bins - 1,): SPEC's 0-based ranks of the
/// adaptive upper edges in a sorted group of `n` scores ([`crate::kernels::core::edges::adaptive_positions`]),
/// for callers that select order statistics themselves (`calibkit.dask`).
#[pyfunction]
pub fn adaptive_positions<'py>(py: Python<'py>, n: usize, num_bins: usize) -> PyResult<Bound<'py, numpy::PyArray1<i64>>> {
    guard(py, || {
        check_adaptive_bins(num_bins)?;
        let pos: Vec<i64> = crate::kernels::core::edges::adaptive_positions(n, num_bins).into_iter().map(|p| p as i64).collect();
        Ok(pos.into_pyarray(py))
    })
}

/// adaptive_positions_of(sizes, num_bins) -> int64 (len(sizes), num_bins - 1): row i holds
/// [`adaptive_positions`] of `sizes[i]` (a row of zeros for an empty group), for callers that
/// bin many groups of different sizes at once (`calibkit.torch.tables`).
#[pyfunction]
pub fn adaptive_positions_of<'py>(py: Python<'py>, sizes: PyReadonlyArray1<'py, i64>, num_bins: usize) -> PyResult<Bound<'py, PyArray2<i64>>> {
    guard(py, || {
        check_adaptive_bins(num_bins)?;
        let sizes = sizes.as_array();
        let w = num_bins - 1;
        if sizes.len().checked_mul(w).is_none_or(|c| c > crate::kernels::core::spec::MAX_TABLE_CELLS) {
            return Err(InvalidParameterError::new_err(format!(
                "adaptive_positions_of: {} groups of {num_bins} bins are more than {} edges; pass fewer groups or bins",
                sizes.len(),
                crate::kernels::core::spec::MAX_TABLE_CELLS
            )));
        }
        let mut out = numpy::ndarray::Array2::<i64>::zeros((sizes.len(), w));
        for (mut row, &n) in out.rows_mut().into_iter().zip(sizes.iter()) {
            let n = usize::try_from(n).map_err(|_| {
                InvalidParameterError::new_err(format!("adaptive_positions_of: every group size must be >= 0, got {n}"))
            })?;
            for (o, p) in row.iter_mut().zip(crate::kernels::core::edges::adaptive_positions(n, num_bins)) {
                *o = p as i64;
            }
        }
        Ok(out.into_pyarray(py))
    })
}
