//! The SIMD layer: the one feature check agrees with the CPU, every vectorised kernel's
//! dispatcher takes its AVX2 twin on a CPU that has AVX2 (the test fails if one takes the
//! portable path there, AVX-512 CPUs included), a kernel with an AVX-512 twin takes it on a
//! CPU that has AVX-512 (none has one: see `simd`'s docs; the test fails if one takes a lesser
//! path there), every level gives bitwise the same metrics, and the vector row checks are
//! bitwise the portable ones. (Each
//! kernel's twin is compared bitwise with its production portable function next to it:
//! `compact`, `toplabel_even::cells_of`, `transpose`, `allprobs_even`, `tests_scan`, and
//! `EvenEdges::bin4` in `tests`.)

use super::core::simd::{self, Kernel, Level};
use super::core::validate::{self, row_sum_and_bad, Checks};
use super::gce::pairs;
use super::*;

const ALL: [Kernel; 10] = [
    Kernel::TopLabelScan,
    Kernel::Cells,
    Kernel::SceRows,
    Kernel::Compact,
    Kernel::Transpose,
    Kernel::Multiversion,
    Kernel::LongRowScan,
    Kernel::PairCells,
    Kernel::TermLanes,
    Kernel::HitLanes,
];

fn softmax(n: usize, k: usize, sharp: f64, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let mut rnd = crate::kernels::tests::xorshift(seed | 1);
    let mut p = vec![0.0; n * k];
    for row in p.chunks_mut(k) {
        row.iter_mut().for_each(|v| *v = (sharp * rnd()).exp());
        let t: f64 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= t);
    }
    let y = (0..n).map(|_| ((rnd() * k as f64) as i64).min(k as i64 - 1)).collect();
    (p, y)
}

/// The kernels that have an AVX-512 twin: on a CPU with AVX-512 they take it, never their AVX2
/// or portable path. None yet (measured not to pay, see docs/simd.md); every other vector
/// kernel takes its AVX2 twin on such a CPU.
const WITH_AVX512: [Kernel; 0] = [];

fn metric(binning: Binning, max_prob: bool, class_conditional: bool, threshold: f64) -> GceSpec {
    GceSpec { grouping: Grouping { binning, max_prob, class_conditional, threshold }, norm: Norm::L1, num_bins: 15 }
}

fn specs() -> [GceSpec; 6] {
    [
        metric(Binning::Even, true, false, 0.0),
        metric(Binning::Adaptive, true, false, 0.0),
        metric(Binning::Even, false, true, 0.0),
        metric(Binning::Adaptive, false, true, 0.0),
        metric(Binning::Adaptive, false, true, 0.01),
        metric(Binning::Adaptive, false, false, 0.0),
    ]
}

#[test]
fn every_kernel_takes_its_best_vector_twin() {
    #[cfg(target_arch = "x86_64")]
    let has = std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let has = false;
    assert_eq!(simd::detect() >= Level::Avx2, has, "the feature check disagrees with the CPU");
    #[cfg(target_arch = "x86_64")]
    assert_eq!(
        simd::detect() == Level::Avx512,
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && has,
        "the AVX-512 check disagrees with the CPU"
    );
    // `CALIBKIT_SIMD` may cap the level of this run (to test the lesser paths on purpose).
    let level = simd::level();
    assert_eq!(level, simd::detect().min(simd::allowed()), "the cached level is not the CPU's, capped");
    if level == Level::Portable {
        return;
    }
    let before: Vec<[usize; 3]> = ALL.iter().map(|&k| simd::taken_at(k)).collect();
    for (n, k, sharp) in [(5000usize, 5usize, 4.0), (3000, 40, 4.0), (1000, 300, 14.0)] {
        let (p, y) = softmax(n, k, sharp, (n + k) as u64);
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        for spec in specs() {
            gce(&Inputs::new(&p, &y, k).unwrap(), &spec, &Checks::ALL).unwrap();
            gce(&Inputs::new(&p32, &y, k).unwrap(), &spec, &Checks::ALL).unwrap();
        }
        // The pair kernel: (confidence, correct) pairs of the same rows.
        let conf: Vec<f64> = p.chunks(k).map(|r| r.iter().cloned().fold(f64::NEG_INFINITY, f64::max)).collect();
        let correct: Vec<u8> = vec![1; n];
        let spec = metric(Binning::Even, true, false, 0.0);
        pairs::gce(&pairs::Pairs::new(&conf, &correct, None, k).unwrap(), &spec).unwrap();
        // The weighted bootstrap's lanes: every entry's even bin of 15, rows weighted.
        let cell: Vec<u32> = p.iter().map(|&v| ((v * 15.0) as u32).min(15)).collect();
        let hit: Vec<u32> = y.iter().map(|&c| c as u32).collect();
        let base: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64 / 4.0).collect();
        let cells = crate::kernels::weighted::resample::Cells { cell: &cell, score: &p, hit: &hit, base: Some(&base), width: k, groups: 1, nb: 16 };
        crate::kernels::weighted::resample::bootstrap(&cells, Norm::L1, false, crate::kernels::weighted::draws::Scheme::Poisson, 1, 4).unwrap();
        // The calibration test's lanes: the top-label confidences' bins, with and without weights.
        let top: Vec<u32> = conf.iter().map(|&v| ((v * 15.0) as u32).min(15)).collect();
        let zero = vec![0u32; n];
        for base in [None, Some(&base[..])] {
            let cells = crate::kernels::weighted::resample::Cells { cell: &top, score: &conf, hit: &zero, base, width: 1, groups: 1, nb: 16 };
            crate::kernels::weighted::consistency::consistency(&cells, Norm::L1, false, 1, 8).unwrap();
        }
    }
    for (i, &kernel) in ALL.iter().enumerate() {
        // One snapshot per kernel, before and after: other tests dispatch concurrently, so
        // the per-level counts and their totals must come from the same reading.
        let after = simd::taken_at(kernel);
        let d = |l: usize| after[l] - before[i][l];
        let (portable, vector) = (d(0), d(1) + d(2));
        assert!(vector > 0, "{kernel:?} never took its vector path");
        // These dispatchers have no input for which the portable path is right on this CPU
        // (the top-label scan has none for rows of more than 16 classes: those are counted as
        // portable legitimately).
        if matches!(
            kernel,
            Kernel::Cells
                | Kernel::Compact
                | Kernel::Transpose
                | Kernel::Multiversion
                | Kernel::LongRowScan
                | Kernel::PairCells
                | Kernel::TermLanes
                | Kernel::HitLanes
                | Kernel::SceRows
        ) {
            assert_eq!(portable, 0, "{kernel:?} took its portable path on a CPU with {level:?}");
        }
        // Every vector dispatch at the best level this kernel has on this CPU.
        let best = if WITH_AVX512.contains(&kernel) { level } else { level.min(Level::Avx2) };
        for l in [Level::Avx2, Level::Avx512] {
            let took = after[l as usize] - before[i][l as usize];
            if l == best {
                assert_eq!(took, vector, "{kernel:?} took a lesser vector path than {best:?} on a CPU with {level:?}");
            } else {
                assert_eq!(took, 0, "{kernel:?} took {l:?} where its best path is {best:?} (CPU: {level:?})");
            }
        }
    }
}

/// Every level gives bitwise the same metric values (and the same errors), float32 and
/// float64, for short and long rows, every grouping: each kernel's twins and each compiled copy
/// agree (inputs small enough to stay on this thread, where the level is capped).
#[test]
fn every_level_gives_bitwise_the_same_metrics() {
    let levels: Vec<Level> = Level::ALL.into_iter().filter(|&l| l <= simd::detect()).collect();
    for (n, k, sharp) in [(700usize, 5usize, 4.0), (300, 40, 4.0), (90, 300, 14.0), (31, 1001, 30.0)] {
        let (mut p, mut y) = softmax(n, k, sharp, (n * k) as u64);
        // Ties of the maximum, a row at exactly 1, signed zeros.
        p[..k].iter_mut().for_each(|v| *v = 0.0);
        p[0] = 1.0;
        p[1] = -0.0;
        for v in &mut p[k..2 * k] {
            *v = 1.0 / k as f64;
        }
        y[2] = 0;
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        let mut bad = p.clone();
        bad[3 * k + 1] = f64::NAN;
        let mut off = p.clone();
        off[4 * k] += 0.01;
        let mut specs: Vec<GceSpec> = specs().to_vec();
        specs.push(GceSpec { norm: Norm::L2, ..metric(Binning::Even, true, false, 0.0) });
        specs.push(metric(Binning::Even, true, true, 0.0));
        specs.push(metric(Binning::Even, false, true, 0.01));
        let run = |l: Level| {
            simd::with_level(l, || {
                let mut out = Vec::new();
                for spec in &specs {
                    let v = gce(&Inputs::new(&p, &y, k).unwrap(), spec, &Checks::ALL).unwrap();
                    let v32 = gce(&Inputs::new(&p32, &y, k).unwrap(), spec, &Checks::ALL).unwrap();
                    let e = gce(&Inputs::new(&bad, &y, k).unwrap(), spec, &Checks::ALL).map_err(|e| e.to_string());
                    let o = gce(&Inputs::new(&off, &y, k).unwrap(), spec, &Checks::ALL).map_err(|e| e.to_string());
                    out.push(format!("{:x} {:x} {e:?} {:?}", v.to_bits(), v32.to_bits(), o.map(f64::to_bits)));
                }
                let many: Vec<(Grouping, Norm)> = specs.iter().map(|s| (s.grouping, s.norm)).collect();
                let ev = evaluate(&Inputs::new(&p32, &y, k).unwrap(), &many, &[1, 15, 64], &Checks::ALL).unwrap();
                out.push(format!("{:x?}", ev.iter().map(|v| v.to_bits()).collect::<Vec<_>>()));
                out
            })
        };
        let want = run(Level::Portable);
        for &l in &levels[1..] {
            assert_eq!(run(l), want, "{l:?} differs from the portable path, n={n} k={k}");
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

/// Speed of the portable and the vector paths, in one process, one thread, on thread CPU time
/// (time descheduled on a shared machine does not count), interleaved rounds, best of each
/// (not a test: `SHAPE=20000x1000 ROUNDS=31 ONLY=ece,sce cargo test --release level_speed --
/// --ignored --nocapture`). The AVX-512 decision (docs/simd.md) was measured this way.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
#[ignore]
fn level_speed() {
    use std::hint::black_box;
    /// CPU time of this thread (time descheduled does not count: the machines are shared).
    struct Instant(f64);
    impl Instant {
        fn now() -> Instant {
            #[repr(C)]
            struct Timespec {
                sec: i64,
                nsec: i64,
            }
            extern "C" {
                fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
            }
            let mut t = Timespec { sec: 0, nsec: 0 };
            // SAFETY: clock_gettime(CLOCK_THREAD_CPUTIME_ID = 3) writes one timespec (two
            // 64-bit fields on x86-64 Linux) to the pointer, which points at `t`.
            unsafe { clock_gettime(3, &mut t) };
            Instant(t.sec as f64 + t.nsec as f64 * 1e-9)
        }
        fn elapsed(&self) -> std::time::Duration {
            std::time::Duration::from_secs_f64(Instant::now().0 - self.0)
        }
    }
    let shape = std::env::var("SHAPE").unwrap_or_else(|_| "20000x1000".into());
    let (n, k) = shape.split_once('x').map(|(a, b)| (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap())).unwrap();
    let (p, y) = softmax(n, k, 14.0, 3);
    let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let names = ["ece", "cce", "sce", "ace", "tace", "rmsce"];
    let sp = [
        metric(Binning::Even, true, false, 0.0),
        metric(Binning::Even, true, true, 0.0),
        metric(Binning::Even, false, true, 0.0),
        metric(Binning::Adaptive, false, true, 0.0),
        metric(Binning::Adaptive, false, true, 0.01),
        GceSpec { norm: Norm::L2, ..metric(Binning::Adaptive, true, false, 0.0) },
    ];
    let levels: Vec<Level> = vec![Level::Portable, simd::detect()];
    let only = std::env::var("ONLY").ok();
    let rounds: usize = std::env::var("ROUNDS").map(|v| v.parse().unwrap()).unwrap_or(7);
    for dtype in ["f64", "f32"] {
        let mut best = vec![vec![f64::INFINITY; levels.len()]; names.len() + 1];
        pool.install(|| {
            for round in 0..rounds {
                let t = Instant::now();
                let s: f64 = if dtype == "f64" { p.iter().sum() } else { p32.iter().map(|&v| v as f64).sum() };
                black_box(s);
                let floor = t.elapsed().as_secs_f64();
                for (mi, spec) in sp.iter().enumerate() {
                    if only.as_ref().is_some_and(|o| !o.split(',').any(|x| x == names[mi])) {
                        continue;
                    }
                    for i in 0..levels.len() {
                        // Alternate the order of the levels from round to round.
                        let li = if round % 2 == 0 { i } else { levels.len() - 1 - i };
                        let l = levels[li];
                        best[names.len()][li] = best[names.len()][li].min(floor);
                        let t = Instant::now();
                        simd::with_level(l, || {
                            if dtype == "f64" {
                                black_box(gce(&Inputs::new(&p, &y, k).unwrap(), spec, &Checks::ALL).unwrap());
                            } else {
                                black_box(gce(&Inputs::new(&p32, &y, k).unwrap(), spec, &Checks::ALL).unwrap());
                            }
                        });
                        best[mi][li] = best[mi][li].min(t.elapsed().as_secs_f64());
                    }
                }
            }
        });
        println!("{dtype}: one plain sum {:.2} ms", best[names.len()][0] * 1e3);
        for (mi, name) in names.iter().enumerate() {
            let row: Vec<String> = levels.iter().enumerate().map(|(li, l)| format!("{l:?} {:7.2} ms", best[mi][li] * 1e3)).collect();
            let gain = best[mi][0] / best[mi][levels.len() - 1];
            println!("{dtype} ({n}, {k}) {name:6} {}  portable/vector {gain:.3}", row.join("  "));
        }
    }
}
