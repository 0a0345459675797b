//! Glue of the selection pass of `calibkit.dask` ([`crate::kernels::gce::select`]).

use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::errors::{guard, to_py, InputTypeError, ShapeMismatchError};
use super::DETACH_ENTRIES;
use crate::kernels::gce::pairs::Pairs;
use crate::kernels::gce::select::{scan_matrix, scan_pairs, Keyed, Plan, Scanned};

/// One plan as the coordinator sends it: (threshold, regions int64 (R, 5), bounds int64, size).
type PyPlan<'py> = (f64, PyReadonlyArray2<'py, i64>, PyReadonlyArray1<'py, i64>, usize);

fn plans(num_groups: usize, given: &[PyPlan<'_>]) -> PyResult<Vec<Plan>> {
    given
        .iter()
        .map(|(threshold, regions, bounds, size)| {
            if regions.shape()[1] != 5 {
                return Err(ShapeMismatchError::new_err("selection plan: regions must have 5 columns"));
            }
            let r = regions.as_slice().map_err(|_| ShapeMismatchError::new_err("selection plan: regions must be C-contiguous"))?;
            let rows: Vec<[i64; 5]> = r.chunks_exact(5).map(|c| [c[0], c[1], c[2], c[3], c[4]]).collect();
            Plan::from_rows(*threshold, num_groups, &rows, bounds.as_array().to_vec(), *size).map_err(to_py)
        })
        .collect()
}

/// Each plan's (counts, outcome counts, score units, grid bucket counts uint32, fetched target
/// ids int64, fetched scores, fetched outcomes bool). The tables are packed to ship: int32
/// counts and outcome counts and one int64 per exact score sum (16 bytes a bucket, not 32) when
/// every bucket fits, as a chunk's mostly do (a sum needs two words past about 4096 scores);
/// else int64 counts and outcome counts and the sums as (size, 2) `[high, low]` words
/// (`calibkit.scale.select.unpack_tables` reads both).
fn scanned_to_py<'py, T: Keyed + numpy::Element>(py: Python<'py>, out: Vec<Scanned<T>>) -> PyResult<Bound<'py, PyList>> {
    let items = out
        .into_iter()
        .map(|s| {
            let n = s.cells.len();
            let small = s.cells.iter().all(|c| c.count < i32::MAX as u64 && i64::try_from(c.units).is_ok());
            let tables = if small {
                let count: Vec<i32> = s.cells.iter().map(|c| c.count as i32).collect();
                let outcome: Vec<i32> = s.cells.iter().map(|c| c.outcome as i32).collect();
                let units: Vec<i64> = s.cells.iter().map(|c| c.units as i64).collect();
                [count.into_pyarray(py).into_any(), outcome.into_pyarray(py).into_any(), units.into_pyarray(py).into_any()]
            } else {
                let count: Vec<i64> = s.cells.iter().map(|c| c.count as i64).collect();
                let outcome: Vec<i64> = s.cells.iter().map(|c| c.outcome as i64).collect();
                let words: Vec<i64> = s.cells.iter().flat_map(|c| [(c.units >> 64) as i64, c.units as u64 as i64]).collect();
                [count.into_pyarray(py).into_any(), outcome.into_pyarray(py).into_any(), words.into_pyarray(py).reshape([n, 2])?.into_any()]
            };
            let [count, outcome, units] = tables;
            let fine = s.counts.into_pyarray(py).into_any(); // uint32, not copied
            PyTuple::new(
                py,
                [
                    count,
                    outcome,
                    units,
                    fine,
                    s.fetched_id.into_pyarray(py).into_any(),
                    s.fetched_score.into_pyarray(py).into_any(),
                    s.fetched_outcome.into_pyarray(py).into_any(),
                ],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// select_scan(labels, probs, max_prob, class_conditional, plans) -> list, one tuple per plan
/// (see `scanned_to_py`): one chunk's share of a selection pass for every plan (sorted by threshold)
/// of one grouping; the chunk was validated by the first pass.
#[pyfunction]
fn select_scan<'py>(
    py: Python<'py>,
    labels: PyReadonlyArray1<'py, i64>,
    probs: &Bound<'py, PyAny>,
    max_prob: bool,
    class_conditional: bool,
    plans: Vec<PyPlan<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    guard(py, || {
        use numpy::PyReadonlyArray2 as P;
        let two_d = probs.getattr("ndim").and_then(|d| d.extract::<usize>()).is_ok_and(|d| d == 2);
        if !two_d {
            return Err(InputTypeError::new_err("probs must be a 2-D float32 or float64 NumPy array"));
        }
        let k = probs.getattr("shape")?.get_item(1)?.extract::<usize>()?;
        let groups = if class_conditional { k } else { 1 };
        let ps = self::plans(groups, &plans)?;
        if let Ok(p) = probs.extract::<P<f64>>() {
            let out = super::run(py, &labels, &p, |x| scan_matrix(x, max_prob, class_conditional, &ps))?;
            scanned_to_py(py, out)
        } else if let Ok(p) = probs.extract::<P<f32>>() {
            let out = super::run(py, &labels, &p, |x| scan_matrix(x, max_prob, class_conditional, &ps))?;
            scanned_to_py(py, out)
        } else {
            Err(InputTypeError::new_err("probs must be a 2-D float32 or float64 NumPy array"))
        }
    })
}

fn pairs_run<'py, T: Keyed + numpy::Element>(
    py: Python<'py>,
    conf: &PyReadonlyArray1<'py, T>,
    correct: &[u8],
    predicted: Option<&[i64]>,
    num_classes: usize,
    class_conditional: bool,
    ps: &[Plan],
) -> PyResult<Bound<'py, PyList>> {
    let c = conf.as_slice().map_err(|_| ShapeMismatchError::new_err("confidence must be contiguous"))?;
    let x = Pairs::new(c, correct, predicted, num_classes).map_err(to_py)?;
    let work = || scan_pairs(&x, class_conditional, ps);
    let out = if c.len() >= DETACH_ENTRIES { py.detach(work) } else { work() };
    scanned_to_py(py, out.map_err(to_py)?)
}

/// select_scan_pairs(confidence, correct, predicted, num_classes, class_conditional, plans)
/// -> as `select_scan`, for one chunk of top-label pairs (groups: the predicted classes when
/// class-conditional; a plan's threshold -inf keeps every pair).
#[pyfunction]
fn select_scan_pairs<'py>(
    py: Python<'py>,
    confidence: &Bound<'py, PyAny>,
    correct: PyReadonlyArray1<'py, u8>,
    predicted: Option<PyReadonlyArray1<'py, i64>>,
    num_classes: usize,
    class_conditional: bool,
    plans: Vec<PyPlan<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    guard(py, || {
        let contiguous = |name: &str| ShapeMismatchError::new_err(format!("{name} must be contiguous"));
        let o = correct.as_slice().map_err(|_| contiguous("correct"))?;
        let p = match &predicted {
            Some(p) => Some(p.as_slice().map_err(|_| contiguous("predicted"))?),
            None => None,
        };
        let ps = self::plans(if class_conditional { num_classes } else { 1 }, &plans)?;
        if let Ok(c) = confidence.extract::<PyReadonlyArray1<f64>>() {
            pairs_run(py, &c, o, p, num_classes, class_conditional, &ps)
        } else if let Ok(c) = confidence.extract::<PyReadonlyArray1<f32>>() {
            pairs_run(py, &c, o, p, num_classes, class_conditional, &ps)
        } else {
            Err(InputTypeError::new_err("confidence must be a 1-D float32 or float64 NumPy array"))
        }
    })
}

/// select_keys(scores) -> int64: the selection's order-preserving key of each float32 or
/// float64 score ([`Keyed::key`]).
#[pyfunction]
fn select_keys<'py>(py: Python<'py>, scores: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<i64>>> {
    guard(py, || {
        let keys: Vec<i64> = if let Ok(s) = scores.extract::<PyReadonlyArray1<f64>>() {
            s.as_array().iter().map(|&x| x.key()).collect()
        } else if let Ok(s) = scores.extract::<PyReadonlyArray1<f32>>() {
            s.as_array().iter().map(|&x| x.key()).collect()
        } else {
            return Err(InputTypeError::new_err("scores must be a 1-D float32 or float64 NumPy array"));
        };
        Ok(keys.into_pyarray(py))
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(select_scan, m)?)?;
    m.add_function(wrap_pyfunction!(select_scan_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(select_keys, m)?)?;
    Ok(())
}
