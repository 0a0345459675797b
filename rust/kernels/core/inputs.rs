//! The input of the matrix paths: `n` rows of `k` scores and one label per row.

use crate::kernels::{KernelError, Score};

/// Input matrix view: `n` rows of `k` scores, row-major, plus one label per row.
#[derive(Clone, Copy)]
pub struct Inputs<'a, T: Score> {
    pub probs: &'a [T],
    pub labels: &'a [i64],
    pub n: usize,
    pub k: usize,
}

impl<'a, T: Score> Inputs<'a, T> {
    /// Checks the shapes agree (values are checked by [`crate::kernels::core::validate`]).
    pub fn new(probs: &'a [T], labels: &'a [i64], k: usize) -> Result<Self, KernelError> {
        if k == 0 {
            return Err(KernelError::Shape("probs has 0 columns; it needs at least one class".into()));
        }
        if !probs.len().is_multiple_of(k) {
            return Err(KernelError::Shape(format!(
                "probs has {} values, not a multiple of {k} columns",
                probs.len()
            )));
        }
        let n = probs.len() / k;
        if labels.len() != n {
            return Err(KernelError::Shape(format!(
                "labels has {} entries but probs has {n} rows; pass one label per row",
                labels.len()
            )));
        }
        if n == 0 {
            return Err(KernelError::Shape("probs and labels are empty; pass at least one row".into()));
        }
        Ok(Inputs { probs, labels, n, k })
    }

    #[inline]
    pub fn row(&self, i: usize) -> &'a [T] {
        &self.probs[i * self.k..(i + 1) * self.k]
    }
}
