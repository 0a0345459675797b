//! Glue of the exact cell sums ([`crate::kernels::core::units`]): a table's score sums as whole
//! grid units, handed to Python as int64 pairs so that tables built apart (`Accumulator`
//! batches, `calibkit.dask` chunks) add exactly, and rounded once by the same rule as the
//! kernels.

use numpy::{IntoPyArray, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::errors::{guard, ShapeMismatchError};
use crate::kernels::core::units;
use crate::kernels::BinStats;

/// A table's units as an int64 array of shape (G, nb, 2): `[high, low]` words of each i128
/// (the low word's bit pattern), or None for a table without units.
pub(crate) fn units_to_py<'py>(py: Python<'py>, st: &BinStats) -> PyResult<Option<Bound<'py, PyArray3<i64>>>> {
    if st.units.len() != st.count.len() {
        return Ok(None);
    }
    let words: Vec<i64> = st.units.iter().flat_map(|&u| [(u >> 64) as i64, u as u64 as i64]).collect();
    Ok(Some(words.into_pyarray(py).reshape([st.groups, st.nb, 2])?))
}

fn read(a: &PyReadonlyArray3<'_, i64>, name: &str) -> PyResult<Vec<i128>> {
    if a.shape()[2] != 2 {
        return Err(ShapeMismatchError::new_err(format!("{name} must have shape (G, nb, 2), got last axis {}", a.shape()[2])));
    }
    let s = a.as_slice().map_err(|_| ShapeMismatchError::new_err(format!("{name} must be C-contiguous")))?;
    Ok(s.chunks_exact(2).map(|w| ((w[0] as i128) << 64) | (w[1] as u64 as i128)).collect())
}

/// units_add(a, b) -> int64 (G, nb, 2): the exact sum of two tables' units.
#[pyfunction]
fn units_add<'py>(py: Python<'py>, a: PyReadonlyArray3<'py, i64>, b: PyReadonlyArray3<'py, i64>) -> PyResult<Bound<'py, PyArray3<i64>>> {
    guard(py, || {
        if a.shape() != b.shape() {
            return Err(ShapeMismatchError::new_err(format!("unit tables of shapes {:?} and {:?} cannot be added", a.shape(), b.shape())));
        }
        let (x, y) = (read(&a, "a")?, read(&b, "b")?);
        let st = BinStats { units: x.iter().zip(&y).map(|(p, q)| p.wrapping_add(*q)).collect(), ..BinStats::zeros(a.shape()[0], a.shape()[1]) };
        Ok(units_to_py(py, &st)?.expect("a table with units"))
    })
}

/// units_value(u) -> float64 (G, nb): each cell's exact sum rounded once, as the kernels report
/// `sum_score`.
#[pyfunction]
fn units_value<'py>(py: Python<'py>, u: PyReadonlyArray3<'py, i64>) -> PyResult<Bound<'py, PyArray2<f64>>> {
    guard(py, || {
        let v: Vec<f64> = read(&u, "u")?.into_iter().map(units::value).collect();
        v.into_pyarray(py).reshape([u.shape()[0], u.shape()[1]])
    })
}

/// units_sum_at(words int64 (M, 2), cells int64 (M,), num_cells) -> int64 (num_cells, 2): the
/// exact sums of the units by cell ([`units::sum_at`]; `calibkit.dask` gathers bucket sums
/// into bins).
#[pyfunction]
fn units_sum_at<'py>(py: Python<'py>, words: numpy::PyReadonlyArray2<'py, i64>, cells: numpy::PyReadonlyArray1<'py, i64>, num_cells: usize) -> PyResult<Bound<'py, PyArray3<i64>>> {
    guard(py, || {
        if words.shape()[1] != 2 {
            return Err(ShapeMismatchError::new_err(format!("words must have shape (M, 2), got last axis {}", words.shape()[1])));
        }
        let w = words.as_slice().map_err(|_| ShapeMismatchError::new_err("words must be C-contiguous"))?;
        let c = cells.as_slice().map_err(|_| ShapeMismatchError::new_err("cells must be contiguous"))?;
        let values: Vec<i128> = w.chunks_exact(2).map(|w| ((w[0] as i128) << 64) | (w[1] as u64 as i128)).collect();
        let sums = units::sum_at(&values, c, num_cells).map_err(super::errors::to_py)?;
        let st = BinStats { units: sums, ..BinStats::zeros(1, num_cells) };
        Ok(units_to_py(py, &st)?.expect("a table with units"))
    })
}

/// units_sum_parts(parts) -> int64 (n, 2): the exact sum of several tables' unit sums, each
/// given as int64 (n,) (a sum that fits one word) or (n, 2) `[high, low]` words
/// (`calibkit.dask` adds its chunks' packed bucket tables).
#[pyfunction]
fn units_sum_parts<'py>(py: Python<'py>, parts: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyArray2<i64>>> {
    guard(py, || {
        let mut total: Option<Vec<i128>> = None;
        for part in &parts {
            let values: Vec<i128> = if let Ok(a) = part.extract::<numpy::PyReadonlyArray1<i64>>() {
                a.as_array().iter().map(|&v| v as i128).collect()
            } else if let Ok(a) = part.extract::<PyReadonlyArray3<i64>>() {
                read(&a, "part")?
            } else {
                let a = part.extract::<numpy::PyReadonlyArray2<i64>>()?;
                if a.shape()[1] != 2 {
                    return Err(ShapeMismatchError::new_err(format!("a part must have shape (n,) or (n, 2), got last axis {}", a.shape()[1])));
                }
                let s = a.as_slice().map_err(|_| ShapeMismatchError::new_err("parts must be C-contiguous"))?;
                s.chunks_exact(2).map(|w| ((w[0] as i128) << 64) | (w[1] as u64 as i128)).collect()
            };
            match &mut total {
                None => total = Some(values),
                Some(t) if t.len() == values.len() => t.iter_mut().zip(&values).for_each(|(a, b)| *a = a.wrapping_add(*b)),
                Some(t) => return Err(ShapeMismatchError::new_err(format!("unit sums of {} and {} cells cannot be added", t.len(), values.len()))),
            }
        }
        let total = total.unwrap_or_default();
        let words: Vec<i64> = total.iter().flat_map(|&u| [(u >> 64) as i64, u as u64 as i64]).collect();
        words.into_pyarray(py).reshape([total.len(), 2])
    })
}

/// weight_scale(max_weight) -> float: the power of two weights are lifted by
/// ([`units::weight_scale`]: 1 when the largest weight is at least 1/2), for the sums and for
/// the adaptive edges' whole units of weight; Python code that walks weights itself (the ECE
/// sweep) takes it from here.
#[pyfunction]
fn weight_scale(py: Python<'_>, max_weight: f64) -> PyResult<f64> {
    guard(py, || Ok(units::weight_scale(max_weight)))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(weight_scale, m)?)?;
    m.add_function(wrap_pyfunction!(units_add, m)?)?;
    m.add_function(wrap_pyfunction!(units_value, m)?)?;
    m.add_function(wrap_pyfunction!(units_sum_at, m)?)?;
    m.add_function(wrap_pyfunction!(units_sum_parts, m)?)?;
    m.add("UNIT", units::GRID)?;
    Ok(())
}
