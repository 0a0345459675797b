//! The all-probabilities even-bin pass (`allprobs_even`, SCE and its relatives): its AVX2 row
//! pass is bitwise its portable one (production fallback), chunk by chunk, in both strategies,
//! with one and several tables, on rows with a tail (K not a multiple of 8), with failing
//! rows; the strategies and the number of tables sharing a pass never change a table; thread
//! counts do not either; and the tables equal a direct computation.

use super::allprobs_even::{self as ae, Layout, Mode, Part, Scratch};
use super::validate::Checks;
use super::*;

fn rng(seed: u64) -> impl FnMut() -> f64 {
    super::tests::xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
}

/// Softmax-like rows of `k` classes (sharpness varies by row, some exact zeros, some rows
/// uniform, some one-hot), and labels.
fn data(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let mut u = rng(seed);
    let mut p = vec![0.0; n * k];
    for (i, row) in p.chunks_mut(k).enumerate() {
        match i % 11 {
            3 => row.iter_mut().for_each(|v| *v = 1.0 / k as f64),
            5 => row[i % k] = 1.0,
            _ => {
                let sharp = 2.0 + 12.0 * u();
                for v in row.iter_mut() {
                    *v = if u() < 0.05 { 0.0 } else { (sharp * u()).exp() };
                }
                row[0] += 1e-300;
                let t: f64 = row.iter().sum();
                row.iter_mut().for_each(|v| *v /= t);
            }
        }
    }
    let y = (0..n).map(|_| ((u() * k as f64) as i64).min(k as i64 - 1)).collect();
    (p, y)
}

/// Every float of a part and its drained scratch tables, as bits, in order.
fn bits(p: &Part) -> Vec<u64> {
    let mut v = vec![p.rows as u64, (p.mode == Mode::Dense) as u64];
    for t in &p.tabs {
        v.extend(t.sum0.iter().chain(&t.aux).map(|x| x.to_bits()));
        v.push(u64::MAX);
        for &(slot, n, s) in &t.cells {
            v.extend([slot as u64, n.to_bits(), s.to_bits()]);
        }
        v.push(u64::MAX);
        v.extend(t.outcome.iter().map(|&o| o as u64));
        v.push(u64::MAX);
    }
    v
}

/// One chunk through `pass`: the row it stopped at and the part's bits.
fn run_chunk<T: Score>(
    x: &Inputs<T>,
    rows: std::ops::Range<usize>,
    lay: &[Layout],
    mode: Mode,
    thr: f64,
    portable: bool,
) -> (Option<usize>, Vec<u64>) {
    let mut part = Part::new(mode, rows.len(), lay);
    let mut sc: Vec<Scratch> = lay.iter().map(|l| Scratch::new(l.slots())).collect();
    let stop = if portable {
        ae::accumulate_portable(x, rows, lay, &mut part, &mut sc, thr, &Checks::ALL)
    } else {
        ae::accumulate(x, rows, lay, &mut part, &mut sc, thr, &Checks::ALL)
    };
    for (s, t) in sc.iter_mut().zip(&mut part.tabs) {
        s.drain(t);
    }
    (stop, bits(&part))
}

fn vector_equals_portable<T: Score>(x: &Inputs<T>, what: &str) {
    for thr in [0.0, 0.01, 0.3] {
        for cc in [true, false] {
            for bins in [&[15usize][..], &[1, 3, 15, 40][..], &[1000][..]] {
                let lay: Vec<Layout> = bins.iter().map(|&b| Layout::new(cc, x.k, b)).collect();
                for mode in [Mode::Dense, Mode::Counted, Mode::Sparse] {
                    let a = run_chunk(x, 0..x.n, &lay, mode, thr, false);
                    let b = run_chunk(x, 0..x.n, &lay, mode, thr, true);
                    assert!(a == b, "{what} thr={thr} cc={cc} bins={bins:?} {mode:?}: {:?} vs {:?}", a.0, b.0);
                }
            }
        }
    }
}

/// The dispatched (AVX2 on this CPU) row pass is bitwise the portable one, in both
/// strategies, with one and several tables, f32 and f64, rows of every length up to 20 and
/// long rows with and without a tail.
#[test]
fn vector_pass_equals_portable_pass() {
    let mut shapes: Vec<(usize, usize)> = (1..=20).map(|k| (60, k)).collect();
    shapes.extend([(50, 40), (30, 203), (12, 1000)]);
    for (n, k) in shapes {
        let (p, y) = data(n, k, (n * 31 + k) as u64);
        let x = Inputs::new(&p, &y, k).unwrap();
        vector_equals_portable(&x, &format!("f64 N={n} K={k}"));
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        let x = Inputs::new(&p32, &y, k).unwrap();
        vector_equals_portable(&x, &format!("f32 N={n} K={k}"));
    }
}

/// Rows failing a check (NaN, infinities, values just outside the range, a wrong row sum) stop
/// both passes at the same row, wherever the bad value sits (in the vector part or the tail,
/// in or out of the bin-0 lane). (The part is then discarded, so its contents may differ.)
#[test]
fn vector_and_portable_passes_stop_at_the_same_row() {
    let tol = validate::RANGE_TOL;
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -2.0 * tol, 1.0 + 2.0 * tol, -0.5 * tol, 0.02, 0.7];
    for k in [3usize, 8, 13, 40] {
        let (p, y) = data(40, k, k as u64);
        for (si, &bad) in specials.iter().enumerate() {
            for col in [0, k / 2, k - 1] {
                let mut q = p.clone();
                q[17 * k + col] = bad;
                let x = Inputs::new(&q, &y, k).unwrap();
                let q32: Vec<f32> = q.iter().map(|&v| v as f32).collect();
                let x32 = Inputs::new(&q32, &y, k).unwrap();
                for thr in [0.0, 0.01] {
                    let lay = [Layout::new(true, k, 15), Layout::new(true, k, 4)];
                    for mode in [Mode::Dense, Mode::Counted, Mode::Sparse] {
                        let a = run_chunk(&x, 0..40, &lay, mode, thr, false);
                        let b = run_chunk(&x, 0..40, &lay, mode, thr, true);
                        assert_eq!(a.0, b.0, "f64 K={k} special {si} col {col} thr {thr} {mode:?}");
                        assert!(si >= 5 || a.0 == Some(17), "a bad value is found");
                        let a = run_chunk(&x32, 0..40, &lay, mode, thr, false);
                        let b = run_chunk(&x32, 0..40, &lay, mode, thr, true);
                        assert_eq!(a.0, b.0, "f32 K={k} special {si} col {col} thr {thr} {mode:?}");
                    }
                }
            }
        }
    }
}

fn grouping(cc: bool, thr: f64) -> Grouping {
    Grouping { binning: Binning::Even, max_prob: false, class_conditional: cc, threshold: thr }
}

fn table_bits(t: &BinStats) -> Vec<u64> {
    t.count.iter().chain(&t.sum_score).chain(&t.sum_outcome).chain(&t.edges).map(|v| v.to_bits()).collect()
}

/// Whatever the strategy, and whatever other bin counts share the pass, each table is bitwise
/// the table of `gce`'s single-bin-count pass, for inputs of one and of many chunks.
#[test]
fn strategies_and_shared_passes_give_the_single_pass_tables() {
    let bins = [1usize, 3, 10, 15, 25, 64, 1000];
    for (n, k) in [(500usize, 7usize), (3000, 100), (20_000, 16)] {
        let (p, y) = data(n, k, (n + k) as u64);
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        for thr in [0.0, 0.01] {
            for cc in [true, false] {
                let g = grouping(cc, thr);
                let check = |single: &dyn Fn(usize) -> BinStats, many: &dyn Fn(Option<Mode>) -> Vec<BinStats>, what: &str| {
                    let one: Vec<Vec<u64>> = bins.iter().map(|&b| table_bits(&single(b))).collect();
                    for force in [None, Some(Mode::Dense), Some(Mode::Counted), Some(Mode::Sparse)] {
                        let all: Vec<Vec<u64>> = many(force).iter().map(table_bits).collect();
                        assert!(all == one, "{what} N={n} K={k} thr={thr} cc={cc} {force:?}");
                    }
                };
                let x = Inputs::new(&p, &y, k).unwrap();
                check(
                    &|b| bin_stats(&x, &g, b, &Checks::ALL).unwrap(),
                    &|f| ae::stats_with(&x, &g, &bins, &Checks::ALL, f).unwrap(),
                    "f64",
                );
                let x = Inputs::new(&p32, &y, k).unwrap();
                check(
                    &|b| bin_stats(&x, &g, b, &Checks::ALL).unwrap(),
                    &|f| ae::stats_with(&x, &g, &bins, &Checks::ALL, f).unwrap(),
                    "f32",
                );
            }
        }
    }
}

/// The tables do not depend on the number of threads.
#[test]
fn tables_do_not_depend_on_threads() {
    let (p, y) = data(30_000, 50, 5);
    let x = Inputs::new(&p, &y, 50).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut v = Vec::new();
            for (cc, thr) in [(true, 0.0), (false, 0.0), (true, 0.01), (false, 0.01)] {
                for t in ae::stats(&x, &grouping(cc, thr), &[15, 4], &Checks::ALL).unwrap() {
                    v.extend(table_bits(&t));
                }
            }
            v
        })
    };
    let one = run(1);
    assert!(one == run(2) && one == run(3));
}

/// The tables equal a direct computation (each entry binned by counting the edges <= it):
/// counts and outcomes exactly, score sums to 1e-12 relative.
#[test]
fn tables_equal_a_direct_computation() {
    for (n, k) in [(2000usize, 9usize), (400, 300)] {
        let (p, y) = data(n, k, 77);
        let x = Inputs::new(&p, &y, k).unwrap();
        for thr in [0.0, 0.01, 0.2] {
            for cc in [true, false] {
                for b in [1usize, 2, 15, 1000] {
                    let edges: Vec<f64> = (1..=b).map(|j| if j == b { 1.0 } else { j as f64 * (1.0 / b as f64) }).collect();
                    let groups = if cc { k } else { 1 };
                    let (mut cnt, mut sum, mut out) = (vec![0.0; groups * (b + 1)], vec![0.0; groups * (b + 1)], vec![0.0; groups * (b + 1)]);
                    for (i, row) in p.chunks(k).enumerate() {
                        for (c, &s) in row.iter().enumerate() {
                            if s > thr {
                                let bin = edges::bin_by_edges(&edges, s);
                                let cell = if cc { c } else { 0 } * (b + 1) + bin;
                                cnt[cell] += 1.0;
                                sum[cell] += s;
                                out[cell] += (c as i64 == y[i]) as u8 as f64;
                            }
                        }
                    }
                    let t = bin_stats(&x, &grouping(cc, thr), b, &Checks::ALL).unwrap();
                    let at = format!("N={n} K={k} thr={thr} cc={cc} B={b}");
                    assert_eq!(t.count, cnt, "{at}");
                    assert_eq!(t.sum_outcome, out, "{at}");
                    for (a, d) in t.sum_score.iter().zip(&sum) {
                        assert!((a - d).abs() <= 1e-12 * d.abs().max(1.0), "{at}: {a} vs {d}");
                    }
                }
            }
        }
    }
}

/// A label out of range although labels were not checked (what another thread writing the
/// labels during a call looks like) gives an error, not a panic, in every strategy.
#[test]
fn labels_out_of_range_unchecked_are_an_error() {
    let (p, mut y) = data(300, 20, 3);
    y[123] = 20;
    let x = Inputs::new(&p, &y, 20).unwrap();
    let check = Checks { labels: false, ..Checks::ALL };
    for force in [None, Some(Mode::Dense), Some(Mode::Counted), Some(Mode::Sparse)] {
        for cc in [true, false] {
            let e = ae::stats_with(&x, &grouping(cc, 0.0), &[15], &check, force).unwrap_err();
            assert_eq!(e, KernelError::InputChanged);
        }
    }
}

/// On a CPU with AVX2 the row pass takes its AVX2 twin for class-conditional and pooled
/// tables alike, in every strategy (a test of dispatch, not of time).
#[test]
fn the_row_pass_takes_avx2_on_an_avx2_cpu() {
    use super::simd::{self, Kernel};
    if !simd::avx2() {
        return;
    }
    let before = simd::taken(Kernel::SceRows);
    let (p, y) = data(2000, 30, 9);
    let x = Inputs::new(&p, &y, 30).unwrap();
    for force in [None, Some(Mode::Dense), Some(Mode::Counted), Some(Mode::Sparse)] {
        for cc in [true, false] {
            ae::stats_with(&x, &grouping(cc, 0.0), &[15], &Checks::ALL, force).unwrap();
        }
    }
    let after = simd::taken(Kernel::SceRows);
    assert!(after[1] > before[1], "the row pass never took its AVX2 twin");
    assert_eq!(after[0], 0, "the row pass took its portable path on an AVX2 CPU");
}
