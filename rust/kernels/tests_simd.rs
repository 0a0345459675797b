//! The SIMD layer: the one feature check agrees with the CPU, every vectorised kernel's
//! dispatcher takes its AVX2 twin on a CPU that has AVX2 (the test fails if one takes the
//! portable path there), and the vector row checks are bitwise the portable ones. (Each
//! kernel's twin is compared bitwise with its production portable function next to it:
//! `compact`, `toplabel_even::cells_of`, `transpose`, `allprobs_even`, `tests_scan`, and
//! `EvenEdges::bin4` in `tests`.)

use super::simd::{self, Kernel, Level};
use super::validate::{row_sum_and_bad, Checks};
use super::*;

const ALL: [Kernel; 8] = [
    Kernel::TopLabelScan,
    Kernel::Cells,
    Kernel::SceRows,
    Kernel::Compact,
    Kernel::Transpose,
    Kernel::Multiversion,
    Kernel::LongRowScan,
    Kernel::PairCells,
];

fn softmax(n: usize, k: usize, sharp: f64, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let mut s = seed | 1;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut p = vec![0.0; n * k];
    for row in p.chunks_mut(k) {
        row.iter_mut().for_each(|v| *v = (sharp * rnd()).exp());
        let t: f64 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= t);
    }
    let y = (0..n).map(|_| ((rnd() * k as f64) as i64).min(k as i64 - 1)).collect();
    (p, y)
}

#[test]
fn every_kernel_takes_its_avx2_twin_on_an_avx2_cpu() {
    #[cfg(target_arch = "x86_64")]
    let has = std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let has = false;
    assert_eq!(simd::level() == Level::Avx2, has, "the cached check disagrees with the CPU");
    if !has {
        return;
    }
    let before: Vec<[usize; 2]> = ALL.iter().map(|&k| simd::taken(k)).collect();
    let metric = |binning, max_prob, class_conditional, threshold| GceSpec {
        grouping: Grouping { binning, max_prob, class_conditional, threshold },
        norm: Norm::L1,
        num_bins: 15,
    };
    for (n, k, sharp) in [(5000usize, 5usize, 4.0), (3000, 40, 4.0), (1000, 300, 14.0)] {
        let (p, y) = softmax(n, k, sharp, (n + k) as u64);
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        for spec in [
            metric(Binning::Even, true, false, 0.0),
            metric(Binning::Adaptive, true, false, 0.0),
            metric(Binning::Even, false, true, 0.0),
            metric(Binning::Adaptive, false, true, 0.0),
            metric(Binning::Adaptive, false, true, 0.01),
            metric(Binning::Adaptive, false, false, 0.0),
        ] {
            gce(&Inputs::new(&p, &y, k).unwrap(), &spec, &Checks::ALL).unwrap();
            gce(&Inputs::new(&p32, &y, k).unwrap(), &spec, &Checks::ALL).unwrap();
        }
        // The pair kernel: (confidence, correct) pairs of the same rows.
        let conf: Vec<f64> = p.chunks(k).map(|r| r.iter().cloned().fold(f64::NEG_INFINITY, f64::max)).collect();
        let correct: Vec<u8> = vec![1; n];
        let spec = metric(Binning::Even, true, false, 0.0);
        pairs::gce(&pairs::Pairs::new(&conf, &correct, None, k).unwrap(), &spec).unwrap();
    }
    for (i, &kernel) in ALL.iter().enumerate() {
        let after = simd::taken(kernel);
        assert!(after[1] > before[i][1], "{kernel:?} never took its AVX2 path");
        // These dispatchers have no input for which the portable path is right on this CPU
        // (the top-label scan has none for rows of more than 16 classes, the SCE row pass for
        // pooled or multi-table passes: those are counted as portable legitimately).
        if matches!(
            kernel,
            Kernel::Cells | Kernel::Compact | Kernel::Transpose | Kernel::Multiversion | Kernel::LongRowScan | Kernel::PairCells
        ) {
            assert_eq!(after[0], 0, "{kernel:?} took its portable path on an AVX2 CPU");
        }
    }
}

/// A visitor that does nothing with the values, to compare the row checks alone.
#[cfg(target_arch = "x86_64")]
struct Nop;

#[cfg(target_arch = "x86_64")]
impl validate::RowVisitor for Nop {
    #[inline(always)]
    unsafe fn visit(&mut self, _: usize, _: std::arch::x86_64::__m256d, _: std::arch::x86_64::__m256d, _: usize) {}
}

/// The vector row checks (sum and bad-value flag, as the fused row passes use them) are
/// bitwise the portable ones, for every row length up to 40, with NaN, infinities, signed
/// zeros and values just outside the tolerance.
#[cfg(target_arch = "x86_64")]
#[test]
fn vector_row_checks_equal_portable() {
    if !simd::avx2() {
        return;
    }
    use validate::RANGE_TOL;
    let specials = [f64::NAN, f64::INFINITY, -0.0, 0.0, 1.0 + RANGE_TOL, 1.0 + 2.0 * RANGE_TOL, -RANGE_TOL, -2.0 * RANGE_TOL];
    let (p, _) = softmax(400, 40, 3.0, 9);
    for len in 0..=40usize {
        for (r, row) in p.chunks(40).enumerate() {
            let mut row: Vec<f64> = row[..len].to_vec();
            if r % 3 == 1 && len > 0 {
                row[r % len] = specials[r % specials.len()];
            }
            let row32: Vec<f32> = row.iter().map(|&v| v as f32).collect();
            // SAFETY: AVX2 is present (checked above).
            let (s, b) = unsafe { validate::row_sum_and_bad_avx2(&row, &mut Nop) };
            let (ps, pb) = row_sum_and_bad(&row);
            assert_eq!((s.to_bits(), b), (ps.to_bits(), pb), "f64 len={len} row={r}");
            // SAFETY: as above.
            let (s, b) = unsafe { validate::row_sum_and_bad_avx2(&row32, &mut Nop) };
            let (ps, pb) = row_sum_and_bad(&row32);
            assert_eq!((s.to_bits(), b), (ps.to_bits(), pb), "f32 len={len} row={r}");
        }
    }
}
