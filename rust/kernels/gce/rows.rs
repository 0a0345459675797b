//! The kept scores of one metric as `(group, score, outcome, row)` rows: the input of the
//! weighted primitive ([`crate::kernels::weighted::grouped`]) for sample weights and for the bootstrap
//! of bins that move with the weights.
//!
//! Validation is that of every other entry point ([`toplabel::summarise`] for top-label
//! groupings, [`validate::scan`] otherwise). Groups follow docs/spec.md: top-label, the row's
//! prediction (first argmax) when class-conditional, else 0, with outcome "prediction correct";
//! all probabilities, column k when class-conditional, else 0, with outcome "label == k". A score
//! is kept when `score > threshold` (compared in float64). Scores are widened exactly to f64.

use crate::kernels::core::validate::{self, Checks};
use crate::kernels::gce::toplabel;
use crate::kernels::{Grouping, Inputs, KernelError, Score};

/// Kept scores with their group, outcome and row, in row order (then column order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreRows {
    pub group: Vec<i64>,
    pub score: Vec<f64>,
    pub outcome: Vec<f64>,
    pub row: Vec<i64>,
}

impl ScoreRows {
    fn push(&mut self, g: usize, s: f64, o: bool, r: usize) {
        self.group.push(g as i64);
        self.score.push(s);
        self.outcome.push(if o { 1.0 } else { 0.0 });
        self.row.push(r as i64);
    }
}

/// The validated kept scores of grouping `g` (binning is ignored: it is the primitive's job).
pub fn score_rows<T: Score>(x: &Inputs<T>, g: &Grouping, check: &Checks) -> Result<ScoreRows, KernelError> {
    let thr = g.threshold;
    let mut out = ScoreRows::default();
    if g.max_prob {
        let top = toplabel::summarise(x, check)?;
        for i in 0..x.n {
            let s = top.conf[i];
            if s > thr {
                let grp = if g.class_conditional { top.pred[i] as usize } else { 0 };
                out.push(grp, s, top.correct[i], i);
            }
        }
    } else {
        validate::scan(x, check)?;
        for i in 0..x.n {
            let label = x.labels[i];
            for (k, v) in x.row(i).iter().enumerate() {
                let s = v.to_f64();
                if s > thr {
                    let grp = if g.class_conditional { k } else { 0 };
                    out.push(grp, s, label == k as i64, i);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Binning;

    fn grouping(max_prob: bool, cc: bool, threshold: f64) -> Grouping {
        Grouping { binning: Binning::Even, max_prob, class_conditional: cc, threshold }
    }

    #[test]
    fn spec_groups_and_threshold() {
        let probs = [0.6f64, 0.4, 0.3, 0.7, 0.0, 1.0];
        let labels = [0i64, 0, 1];
        let x = Inputs::new(&probs, &labels, 2).unwrap();
        let c = Checks { values: true, row_sums: true, labels: true };
        let top = score_rows(&x, &grouping(true, true, 0.0), &c).unwrap();
        assert_eq!(top.group, vec![0, 1, 1]);
        assert_eq!(top.score, vec![0.6, 0.7, 1.0]);
        assert_eq!(top.outcome, vec![1.0, 0.0, 1.0]);
        let all = score_rows(&x, &grouping(false, false, 0.35), &c).unwrap();
        // 0.0 and 0.3 dropped (strict threshold), pooled group
        assert_eq!(all.score, vec![0.6, 0.4, 0.7, 1.0]);
        assert_eq!(all.row, vec![0, 0, 1, 2]);
        assert_eq!(all.outcome, vec![1.0, 0.0, 0.0, 1.0]);
        assert_eq!(all.group, vec![0, 0, 0, 0]);
    }

    #[test]
    fn invalid_input_is_an_error() {
        let probs = [0.6f64, 0.5];
        let labels = [0i64];
        let x = Inputs::new(&probs, &labels, 2).unwrap();
        let c = Checks { values: true, row_sums: true, labels: true };
        assert!(score_rows(&x, &grouping(true, false, 0.0), &c).is_err());
        assert!(score_rows(&x, &grouping(false, true, 0.0), &c).is_err());
    }
}
