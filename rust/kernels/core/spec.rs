//! What one metric is: the GCE properties of docs/spec.md.

use crate::kernels::KernelError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binning {
    Even,
    Adaptive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Norm {
    L1,
    L2,
    /// Maximum |gap| over the non-empty bins of a group.
    Max,
}

impl Binning {
    pub fn parse(s: &str) -> Result<Self, KernelError> {
        match s {
            "even" => Ok(Binning::Even),
            "adaptive" => Ok(Binning::Adaptive),
            _ => Err(KernelError::Parameter(format!(
                "binning must be 'even' or 'adaptive', got {s:?}"
            ))),
        }
    }
}

impl Norm {
    pub fn parse(s: &str) -> Result<Self, KernelError> {
        match s {
            "l1" => Ok(Norm::L1),
            "l2" => Ok(Norm::L2),
            "max" => Ok(Norm::Max),
            _ => Err(KernelError::Parameter(format!(
                "norm must be 'l1', 'l2' or 'max', got {s:?}"
            ))),
        }
    }
}

/// How scores are grouped and binned: everything but the norm and the bin count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grouping {
    pub binning: Binning,
    pub max_prob: bool,
    pub class_conditional: bool,
    /// A score is kept only if `score > threshold`.
    pub threshold: f64,
}

/// Largest accepted bin count (far beyond any meaningful calibration estimate).
pub const MAX_BINS: usize = 1_000_000;
/// Largest (groups x bins) table a metric may need (about 800 MB of statistics).
pub const MAX_TABLE_CELLS: usize = 1 << 25;

impl Grouping {
    pub fn check(&self, num_bins: usize) -> Result<(), KernelError> {
        if !(1..=MAX_BINS).contains(&num_bins) {
            return Err(KernelError::Parameter(format!(
                "num_bins must be a positive integer no larger than {MAX_BINS}, got {num_bins}"
            )));
        }
        if !(self.threshold >= 0.0 && self.threshold < 1.0) {
            return Err(KernelError::Parameter(format!(
                "threshold must be in [0, 1), got {}",
                self.threshold
            )));
        }
        Ok(())
    }

    /// Refuses a per-(group, bin) table too large to allocate, with a readable error instead of
    /// an allocation failure.
    pub fn check_table(&self, k: usize, num_bins: usize) -> Result<(), KernelError> {
        let cells = self.groups(k).saturating_mul(num_bins.saturating_add(1));
        if cells > MAX_TABLE_CELLS {
            return Err(KernelError::Parameter(format!(
                "num_bins={num_bins} with {} score groups needs a table of {cells} cells (limit \
                 {MAX_TABLE_CELLS}); use fewer bins",
                self.groups(k)
            )));
        }
        Ok(())
    }

    /// Number of score groups for `k` classes.
    pub fn groups(&self, k: usize) -> usize {
        if self.class_conditional {
            k
        } else {
            1
        }
    }
}

/// One metric of the GCE space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GceSpec {
    pub grouping: Grouping,
    pub norm: Norm,
    pub num_bins: usize,
}
