//! Regression tests of failures found by the fuzz targets (fuzz/fuzz_targets/).

use super::core::spec;
use super::core::validate::Checks;
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

/// `resample` target: a table of (groups x bins) beyond the cell limit (or beyond usize) was
/// allocated before anything was checked (an allocation failure aborts the process, even with
/// no resample asked for); the entry count `n * width` could overflow. Both are errors now.
#[test]
fn resampling_refuses_tables_beyond_the_cell_limit() {
    use super::weighted::consistency::consistency;
    use super::weighted::resample::{bootstrap, Cells, Scheme};
    let (cell, score, hit) = ([0u32, 1], [0.5, 0.7], [0u32, 0]);
    for (groups, nb) in [(1, spec::MAX_TABLE_CELLS + 1), (usize::MAX, 2), (1 << 13, 1 << 13)] {
        let c = Cells { cell: &cell, score: &score, hit: &hit, base: None, width: 1, groups, nb };
        for r in [0, 3] {
            assert!(matches!(bootstrap(&c, Norm::L1, false, Scheme::Poisson, 1, r), Err(KernelError::Parameter(_))));
            assert!(matches!(consistency(&c, Norm::L1, false, 1, r), Err(KernelError::Parameter(_))));
        }
    }
    let c = Cells { cell: &cell, score: &score, hit: &hit, base: None, width: usize::MAX / 2 + 1, groups: 1, nb: 2 };
    assert!(matches!(bootstrap(&c, Norm::L1, false, Scheme::Poisson, 1, 2), Err(KernelError::Shape(_))));
}

/// With the fix above, tables up to the cell limit are accepted; the one-entry-per-row loops
/// keep 8 copies of the table per block, so large tables take the general loops: the same
/// numbers (each resample is the data's table under its multiplicities / redrawn outcomes).
#[test]
fn large_one_entry_tables_take_the_general_loops_with_the_same_numbers() {
    use super::core::reduce::reduce;
    use super::weighted::consistency::consistency;
    use super::weighted::resample::{bootstrap, uniform, weights_matrix, Cells, Scheme, DROPPED};
    let n = 50;
    for nb in [7, (1 << 16) + 1] {
        let cell: Vec<u32> = (0..n).map(|i| if i % 9 == 0 { DROPPED } else { ((i * 7919) % nb) as u32 }).collect();
        let score: Vec<f64> = (0..n).map(|i| (i % 10) as f64 / 10.0).collect();
        let hit: Vec<u32> = (0..n).map(|i| if i % 3 == 0 { 0 } else { DROPPED }).collect();
        let c = Cells { cell: &cell, score: &score, hit: &hit, base: None, width: 1, groups: 1, nb };
        let boot = bootstrap(&c, Norm::L2, false, Scheme::Poisson, 7, 10).unwrap();
        let cons = consistency(&c, Norm::L1, false, 7, 10).unwrap();
        let w = weights_matrix(Scheme::Poisson, 7, 0, 10, n);
        for r in 0..10 {
            let one = Cells { base: Some(&w[r * n..(r + 1) * n]), ..c };
            assert_eq!(boot[r], reduce(&one.stats(), Norm::L2, false), "nb {nb} resample {r}");
            let redrawn: Vec<u32> = (0..n).map(|i| if uniform(7, r as u64, i as u64) < score[i] { 0 } else { DROPPED }).collect();
            let one = Cells { hit: &redrawn, ..c };
            assert_eq!(cons[r], reduce(&one.stats(), Norm::L1, false), "nb {nb} resample {r}");
        }
    }
}

/// `pairs` target (reported by the fuzzing session): with `num_classes` of 2^63 or more, a
/// negative predicted class passed the check `p as u64 >= k` (its cast is >= 2^63). Python
/// never reached it (it checks `predicted` and the class count first); the kernel now refuses
/// it on its own.
#[test]
fn negative_predicted_class_is_refused_for_any_class_count() {
    use super::gce::pairs::Pairs;
    for k in [3usize, 1 << 63, (1 << 63) | 1, usize::MAX] {
        for bad in [-1i64, i64::MIN] {
            let pred = [0i64, bad];
            let p = Pairs::new(&[0.5f64, 0.7], &[1, 0], Some(&pred), k).unwrap();
            assert!(matches!(p.validate(), Err(KernelError::BadPredicted { index: 1, .. })), "k={k} p={bad}");
        }
    }
}
