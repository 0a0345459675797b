//! Glue of the per-entry cells ([`crate::kernels::weighted::cells`]): array extraction, GIL release,
//! error mapping. No computing.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::errors::{guard, to_py, ShapeMismatchError};
use super::DETACH_ENTRIES;
use crate::kernels::weighted::cells::{table_cells as kernel, Groups, TableBins};
use crate::kernels::KernelError;

/// table_cells(scores, groups, num_groups, num_bins, edges=None, threshold=None, by_column=False) -> uint32 (N,)
///
/// The cell `group * nb + bin` of each score in a table: even bins of `num_bins` when `edges`
/// is None (nb = num_bins + 1), else the bins at `edges` (num_groups, num_bins + 1) (nb =
/// num_bins); `2**32 - 1` where `score <= threshold`. Groups: `groups[i]`, or every score in
/// group 0 when `groups` is None, or with `by_column=True` (and `groups` None) the column of
/// `scores` read as a row-major (N / num_groups, num_groups) matrix.
#[pyfunction]
#[pyo3(signature = (scores, groups, num_groups, num_bins, edges=None, threshold=None, by_column=false))]
#[allow(clippy::too_many_arguments)]
fn table_cells<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray1<'py, f64>,
    groups: Option<PyReadonlyArray1<'py, i64>>,
    num_groups: usize,
    num_bins: usize,
    edges: Option<PyReadonlyArray2<'py, f64>>,
    threshold: Option<f64>,
    by_column: bool,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    guard(py, || {
        let slice = |name: &str| {
            ShapeMismatchError::new_err(format!("{name} must be contiguous (calibkit copies before this call)"))
        };
        let s = scores.as_slice().map_err(|_| slice("scores"))?;
        let g = match (&groups, by_column) {
            (Some(_), true) => {
                let msg = "groups must be None with by_column=True (the columns are the groups)";
                return Err(to_py(KernelError::Parameter(msg.into())));
            }
            (Some(a), false) => Groups::Ids(a.as_slice().map_err(|_| slice("groups"))?),
            (None, true) => Groups::Columns,
            (None, false) => Groups::One,
        };
        let bins = match &edges {
            Some(e) => TableBins::Edges { num_bins, edges: e.as_slice().map_err(|_| slice("edges"))? },
            None => TableBins::Even(num_bins),
        };
        let work = || kernel(s, g, num_groups, &bins, threshold);
        let res = if s.len() >= DETACH_ENTRIES { py.detach(work) } else { work() };
        Ok(res.map_err(to_py)?.into_pyarray(py))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(table_cells, m)?)?;
    Ok(())
}
