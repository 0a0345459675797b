//! What one metric is: the GCE properties of SPEC.md.

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

impl Grouping {
    pub fn check(&self, num_bins: usize) -> Result<(), KernelError> {
        if num_bins < 1 {
            return Err(KernelError::Parameter(format!(
                "num_bins must be a positive integer, got {num_bins}"
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
