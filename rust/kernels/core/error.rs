//! Typed kernel errors; the glue maps each variant to a specific Python exception class.

use thiserror::Error;

use crate::kernels::core::validate::{RANGE_TOL, ROW_SUM_TOL};

#[derive(Debug, Error, Clone, PartialEq)]
pub enum KernelError {
    #[error("probs[{row}, {col}] is {value}: probabilities must be finite; remove or replace NaN/inf rows before measuring calibration")]
    NonFinite { row: usize, col: usize, value: f64 },
    #[error("probs[{row}, {col}] is {value}, outside [0, 1] (tolerance {RANGE_TOL:e}); these look like logits or unnormalised scores: convert them with calibkit.softmax(logits) first")]
    OutOfRange { row: usize, col: usize, value: f64 },
    #[error("row {row} of probs sums to {sum:.6}, not 1 (tolerance {ROW_SUM_TOL:e}); pass normalised probabilities (calibkit.softmax(logits) for logits), or a 0/1 label matrix for multilabel data")]
    RowSum { row: usize, sum: f64 },
    #[error("labels[{index}] is {label}, outside [0, {num_classes}): labels must be class indices of the {num_classes} columns of probs")]
    LabelOutOfRange { index: usize, label: i64, num_classes: usize },
    #[error("confidence[{index}] is {value}: confidences must be finite and within [0, 1] (tolerance {RANGE_TOL:e}); pass each prediction's top-label probability, not a logit or a score")]
    BadConfidence { index: usize, value: f64 },
    #[error("correct[{index}] is {value}: correct must be boolean or 0/1 (1 = the prediction was right)")]
    BadCorrect { index: usize, value: u8 },
    #[error("predicted[{index}] is {value}, outside [0, {num_classes}): predicted must hold class indices below num_classes")]
    BadPredicted { index: usize, value: i64, num_classes: usize },
    #[error("{0}")]
    Shape(String),
    #[error("{0}")]
    Parameter(String),
    /// An output the caller asked for (say, one value per resample) that memory cannot hold:
    /// reserved fallibly, so the call fails instead of aborting the process.
    #[error("{0}")]
    Memory(String),
    /// Two reads of the input disagreed: another thread wrote to the array during the call
    /// (large inputs are read with the GIL released). Kernels that trust a count or a check
    /// from an earlier pass verify it in the later pass and return this instead of reading or
    /// writing out of bounds.
    #[error("the input arrays changed while calibkit was reading them (another thread wrote to them during the call); do not modify probs or labels while a calibkit call runs, or pass a copy")]
    InputChanged,
}
