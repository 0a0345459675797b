#![deny(unsafe_op_in_unsafe_fn)]
//! calibkit: kernels for the General Calibration Error (Nixon et al., "Measuring Calibration in
//! Deep Learning") over its whole parameter space.
//!
//! `kernels` is pure Rust (no PyO3 types) and is what `cargo test` exercises; `py` is the thin
//! PyO3 glue, compiled only with the `python` feature that maturin enables.

pub mod kernels;

#[cfg(feature = "python")]
mod py;
