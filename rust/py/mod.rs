//! Thin PyO3 glue: array extraction, dtype dispatch, GIL release, error mapping. No computing.
//! Every `#[pyfunction]` body runs under [`errors::guard`] (new glue files must do the same),
//! which turns a Rust panic into `calibkit.errors.InternalError`.

/// Runs a kernel closure on `probs` as float64 or float32 (the glue's one dtype dispatch; used
/// by the topic files below, so defined before them).
macro_rules! dispatch {
    ($py:expr, $labels:expr, $probs:expr, |$x:ident| $body:expr) => {{
        if let Ok(p) = $probs.extract::<numpy::PyReadonlyArray2<f64>>() {
            $crate::py::run($py, &$labels, &p, |$x: &$crate::kernels::Inputs<f64>| $body)
        } else if let Ok(p) = $probs.extract::<numpy::PyReadonlyArray2<f32>>() {
            $crate::py::run($py, &$labels, &p, |$x: &$crate::kernels::Inputs<f32>| $body)
        } else {
            Err($crate::py::errors::InputTypeError::new_err(
                "probs must be a 2-D float32 or float64 NumPy array (calibkit converts other inputs before this call)",
            ))
        }
    }};
}

mod binning_free;
mod cells;
pub(crate) mod errors;
mod grouped;
mod pairs;
mod select;
mod simd;
mod trust;
mod units;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::kernels::core::reduce;
use crate::kernels::core::validate::Checks;
use crate::kernels::{self, BinStats, Binning, GceSpec, Grouping, Inputs, KernelError, Norm, Score};
use errors::{guard, to_py, InputTypeError, ShapeMismatchError};

/// Below this many entries the work is too short to be worth releasing the GIL or threading.
/// (No kernel splits an input this small over threads: rayon runs only with the GIL released.)
const DETACH_ENTRIES: usize = 1 << 15;

fn grouping(binning: &str, max_prob: bool, class_conditional: bool, threshold: f64) -> Result<Grouping, KernelError> {
    Ok(Grouping { binning: Binning::parse(binning)?, max_prob, class_conditional, threshold })
}

fn checks(check_row_sums: bool) -> Checks {
    Checks { values: true, row_sums: check_row_sums, labels: true }
}

/// Runs `f` on the validated inputs, with the GIL released when the input is large.
fn run<T, R, F>(py: Python<'_>, labels: &PyReadonlyArray1<i64>, probs: &PyReadonlyArray2<T>, f: F) -> PyResult<R>
where
    T: Score + numpy::Element,
    R: Send,
    F: FnOnce(&Inputs<T>) -> Result<R, KernelError> + Send,
{
    let k = probs.shape()[1];
    let p = c_order(probs, "probs (calibkit validates and copies before this call)")?;
    let l = labels.as_slice().map_err(|_| ShapeMismatchError::new_err("labels must be contiguous"))?;
    let x = Inputs::new(p, l, k).map_err(to_py)?;
    let res = if p.len() >= DETACH_ENTRIES { py.detach(|| f(&x)) } else { f(&x) };
    res.map_err(to_py)
}


/// gce(labels, probs, binning, max_prob, class_conditional, threshold, norm, num_bins, check_row_sums=True) -> float
#[pyfunction]
#[pyo3(signature = (labels, probs, binning, max_prob, class_conditional, threshold, norm, num_bins, check_row_sums=true))]
#[allow(clippy::too_many_arguments)]
fn gce(
    py: Python<'_>,
    labels: PyReadonlyArray1<i64>,
    probs: &Bound<'_, PyAny>,
    binning: &str,
    max_prob: bool,
    class_conditional: bool,
    threshold: f64,
    norm: &str,
    num_bins: usize,
    check_row_sums: bool,
) -> PyResult<f64> {
    guard(py, || {
        let g = grouping(binning, max_prob, class_conditional, threshold).map_err(to_py)?;
        let spec = GceSpec { grouping: g, norm: Norm::parse(norm).map_err(to_py)?, num_bins };
        let c = checks(check_row_sums);
        dispatch!(py, labels, probs, |x| kernels::gce(x, &spec, &c))
    })
}

/// A table as the tuple `(counts, sum_score, sum_outcome, edges)`, with the exact score units
/// ([`units::units_to_py`], None for a table without them) appended when `with_units`.
pub(crate) fn stats_to_py<'py>(py: Python<'py>, st: BinStats, with_units: bool) -> PyResult<Bound<'py, PyTuple>> {
    let shape = [st.groups, st.nb];
    let u = if with_units { Some(units::units_to_py(py, &st)?.map(|a| a.into_any())) } else { None };
    let count: Vec<i64> = st.count.iter().map(|&c| c as i64).collect();
    let count = PyArray1::from_vec(py, count).reshape(shape)?;
    let ss = st.sum_score.into_pyarray(py).reshape(shape)?;
    let so = st.sum_outcome.into_pyarray(py).reshape(shape)?;
    let edges: Bound<'py, PyArray2<f64>> = st.edges.into_pyarray(py).reshape([st.groups, st.nb + 1])?;
    let mut items = vec![count.into_any(), ss.into_any(), so.into_any(), edges.into_any()];
    if let Some(u) = u {
        items.push(u.unwrap_or_else(|| py.None().into_bound(py)));
    }
    PyTuple::new(py, items)
}

/// bin_stats(labels, probs, binning, max_prob, class_conditional, threshold, num_bins, check_row_sums=True, units=False)
/// -> (counts int64 (G, nb), sum_score (G, nb), sum_outcome (G, nb), edges (G, nb+1)[, units int64 (G, nb, 2)])
#[pyfunction]
#[pyo3(signature = (labels, probs, binning, max_prob, class_conditional, threshold, num_bins, check_row_sums=true, units=false))]
#[allow(clippy::too_many_arguments)]
fn bin_stats<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<i64>,
    probs: &Bound<'py, PyAny>,
    binning: &str,
    max_prob: bool,
    class_conditional: bool,
    threshold: f64,
    num_bins: usize,
    check_row_sums: bool,
    units: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    guard(py, || {
        let g = grouping(binning, max_prob, class_conditional, threshold).map_err(to_py)?;
        let c = checks(check_row_sums);
        let st = dispatch!(py, labels, probs, |x| kernels::bin_stats(x, &g, num_bins, &c))?;
        stats_to_py(py, st, units)
    })
}

/// The elements of a 2-D array in row-major order: the array must be C-contiguous (a
/// Fortran-ordered one is contiguous too, but its elements are not in row order).
pub(crate) fn c_order<'a, T: numpy::Element>(a: &'a PyReadonlyArray2<'_, T>, name: &str) -> PyResult<&'a [T]> {
    if !a.is_c_contiguous() {
        return Err(ShapeMismatchError::new_err(format!("{name} must be C-contiguous")));
    }
    a.as_slice().map_err(|_| ShapeMismatchError::new_err(format!("{name} must be C-contiguous")))
}

/// One (G, nb) float64 array of `reduce_table`: a NumPy array of float64 (else
/// `InputTypeError`), two-dimensional (else `ShapeMismatchError`).
fn table<'py>(a: &Bound<'py, PyAny>, name: &str) -> PyResult<PyReadonlyArray2<'py, f64>> {
    use numpy::{PyArrayDescrMethods, PyUntypedArray};
    let py = a.py();
    let arr = a.cast::<PyUntypedArray>().map_err(|_| {
        InputTypeError::new_err(format!("{name} must be a NumPy array of float64, got {}", type_name(a)))
    })?;
    if arr.ndim() != 2 {
        return Err(ShapeMismatchError::new_err(format!(
            "{name} must be 2-D (groups, bins), got {} dimensions",
            arr.ndim()
        )));
    }
    if !arr.dtype().is_equiv_to(&numpy::dtype::<f64>(py)) {
        return Err(InputTypeError::new_err(format!("{name} must have dtype float64, got {}", arr.dtype())));
    }
    a.extract::<PyReadonlyArray2<'py, f64>>().map_err(Into::into)
}

/// A shape as Python writes it: `(3, 2)`.
fn shown(shape: &[usize]) -> String {
    format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

fn type_name(a: &Bound<'_, PyAny>) -> String {
    a.get_type().name().map_or_else(|_| "an unknown type".to_string(), |n| n.to_string())
}

/// reduce_table(counts, sum_score, sum_outcome, norm, class_conditional) -> float: the metric of
/// one per-(group, bin) table (the float64 arrays `bin_stats` returns, counts as float64), by
/// the one reduction every path ends with: bitwise what `gce` gives for the table it bins.
#[pyfunction]
#[pyo3(signature = (counts, sum_score, sum_outcome, norm, class_conditional))]
fn reduce_table(
    py: Python<'_>,
    counts: &Bound<'_, PyAny>,
    sum_score: &Bound<'_, PyAny>,
    sum_outcome: &Bound<'_, PyAny>,
    norm: &str,
    class_conditional: bool,
) -> PyResult<f64> {
    guard(py, || {
        let norm = Norm::parse(norm).map_err(to_py)?;
        let (c, s, o) = (table(counts, "counts")?, table(sum_score, "sum_score")?, table(sum_outcome, "sum_outcome")?);
        let shape = c.shape();
        for (name, a) in [("sum_score", &s), ("sum_outcome", &o)] {
            if a.shape() != shape {
                return Err(ShapeMismatchError::new_err(format!(
                    "{name} has shape {} but counts has shape {}; pass the three arrays of one table",
                    shown(a.shape()),
                    shown(shape)
                )));
            }
        }
        let (groups, nb) = (shape[0], shape[1]);
        if groups == 0 || nb == 0 {
            return Err(ShapeMismatchError::new_err(format!(
                "the table has shape {}; it needs at least one group and one bin",
                shown(shape)
            )));
        }
        let st = BinStats::from_sums(
            groups,
            nb,
            c_order(&c, "counts")?.to_vec(),
            c_order(&s, "sum_score")?.to_vec(),
            c_order(&o, "sum_outcome")?.to_vec(),
        );
        reduce::check_table(&st, class_conditional).map_err(to_py)?;
        Ok(reduce::reduce(&st, norm, class_conditional))
    })
}

/// evaluate(labels, probs, specs, num_bins, check_row_sums=True) -> float64 (len(specs), len(num_bins))
/// where each spec is (binning, max_prob, class_conditional, threshold, norm).
#[pyfunction]
#[pyo3(signature = (labels, probs, specs, num_bins, check_row_sums=true))]
fn evaluate<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<i64>,
    probs: &Bound<'py, PyAny>,
    specs: Vec<(String, bool, bool, f64, String)>,
    num_bins: Vec<usize>,
    check_row_sums: bool,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    guard(py, || {
        let metrics = specs
            .iter()
            .map(|(b, mp, cc, t, n)| Ok((grouping(b, *mp, *cc, *t)?, Norm::parse(n)?)))
            .collect::<Result<Vec<_>, KernelError>>()
            .map_err(to_py)?;
        let c = checks(check_row_sums);
        let nb = num_bins.len();
        let out = dispatch!(py, labels, probs, |x| kernels::evaluate(x, &metrics, &num_bins, &c))?;
        out.into_pyarray(py).reshape([metrics.len(), nb])
    })
}

/// Panics inside [`errors::guard`], for the test that no panic reaches Python (private).
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    guard(py, || panic!("deliberate panic, raised to test the guard"))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // No Rust panic reaches Python (every body runs under `errors::guard`), and none prints.
    errors::install_quiet_panic_hook();
    // The error classes are looked up now, so that a broken `calibkit.errors` is an import
    // error here rather than a failed lookup (an abort) when a kernel error is raised.
    errors::import_classes(m.py())?;
    m.add_function(wrap_pyfunction!(gce, m)?)?;
    m.add_function(wrap_pyfunction!(bin_stats, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(reduce_table, m)?)?;
    binning_free::register(m)?;
    pairs::register(m)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::grouped_bin_stats, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::grouped_bin_stats_at, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::weighted_matrix_stats, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::adaptive_positions, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::adaptive_positions_of, m)?)?;
    trust::register(m)?;
    cells::register(m)?;
    simd::register(m)?;
    units::register(m)?;
    select::register(m)?;
    m.add("RANGE_TOL", kernels::core::validate::RANGE_TOL)?;
    m.add("ROW_SUM_TOL", kernels::core::validate::ROW_SUM_TOL)?;
    m.add("MAX_BINS", kernels::core::spec::MAX_BINS)?;
    m.add("MAX_TABLE_CELLS", kernels::core::spec::MAX_TABLE_CELLS)?;
    Ok(())
}
