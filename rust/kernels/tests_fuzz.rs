//! Regression tests of failures found by the fuzz targets (fuzz/fuzz_targets/).

use super::validate::Checks;
use super::*;

/// `validation` target: with a threshold that drops most entries (the compacting path of the
/// all-probabilities kernel), an out-of-range label on the last row was used as an index
/// before the labels were checked: an index-out-of-bounds panic instead of an error.
#[test]
fn out_of_range_label_on_the_compacting_path_is_an_error() {
    let probs: Vec<f64> = (0..8).flat_map(|_| [0.4, 0.3, 0.3]).collect();
    let mut labels = vec![0i64; 8];
    for bad in [7, 3, -1, i64::MAX, i64::MIN] {
        labels[7] = bad;
        let x = Inputs::new(&probs, &labels, 3).unwrap();
        for binning in [Binning::Even, Binning::Adaptive] {
            for class_conditional in [true, false] {
                let g = Grouping { binning, max_prob: false, class_conditional, threshold: 0.5 };
                let spec = GceSpec { grouping: g, norm: Norm::L1, num_bins: 4 };
                let err = gce(&x, &spec, &Checks::ALL).unwrap_err();
                assert!(matches!(err, KernelError::LabelOutOfRange { index: 7, .. }), "{err:?}");
                let err = evaluate(&x, &[(g, Norm::L2)], &[3, 5], &Checks::ALL).unwrap_err();
                assert!(matches!(err, KernelError::LabelOutOfRange { index: 7, .. }), "{err:?}");
            }
        }
    }
}
