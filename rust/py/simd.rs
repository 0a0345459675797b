//! Glue of the SIMD layer: which instruction set the kernels dispatch on (for the tests and
//! benchmarks that compare the paths; `CALIBKIT_SIMD` caps it, see `kernels::core::simd`).

use pyo3::prelude::*;

use super::errors::guard;

/// simd_level() -> str: "portable", "avx2" or "avx512", the level the kernels dispatch on (this
/// CPU's, capped by the environment variable CALIBKIT_SIMD, read once per process).
#[pyfunction]
fn simd_level(py: Python<'_>) -> PyResult<&'static str> {
    guard(py, || Ok(crate::kernels::core::simd::level().name()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    Ok(())
}
