//! The all-probabilities even-bin pass (`allprobs_even`, SCE and its relatives): its AVX2 row
//! pass is bitwise its portable one (production fallback; the same exact unit sums), chunk by
//! chunk, in every strategy, with one and several tables, on rows with a tail (K not a
//! multiple of 8), with failing rows, with runs folded between and within rows; the
//! strategies and the number of tables sharing a pass never change a table; thread counts do
//! not either; and the tables equal a direct computation, unit sums exactly.

use super::{self as ae, Cut, Force, Mode, Part, Pass, Scratch};
use crate::kernels::core::{edges, units};
use crate::kernels::core::validate::{self, Checks};
use crate::kernels::*;

fn rng(seed: u64) -> impl FnMut() -> f64 {
    crate::kernels::tests::xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
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

/// Every number of a part (its lane runs folded) and its drained scratch tables, as bits, in
/// order.
fn bits(p: &Part) -> Vec<u64> {
    let mut v = vec![p.rows as u64, (p.mode == Mode::Dense) as u64, p.pending as u64];
    for l in &p.lanes {
        v.extend(l.run.iter().map(|&x| x as u64));
        v.extend(l.units.iter().flat_map(|&x| [x as u64, (x >> 64) as u64]));
        v.extend(l.count.iter().map(|x| x.to_bits()));
        v.push(u64::MAX);
    }
    v.extend(p.dropped.iter().map(|x| x.to_bits()));
    v.push(u64::MAX);
    for t in &p.tabs {
        for &(slot, n, u) in &t.cells {
            v.extend([slot as u64, n.to_bits(), u as u64, (u >> 64) as u64]);
        }
        v.push(u64::MAX);
        v.extend(t.outcome.iter().chain(&t.raised).map(|&o| o as u64));
        v.push(u64::MAX);
    }
    v
}

/// One chunk through `pass`: the row it stopped at and the part's bits.
fn run_chunk<T: Score>(x: &Inputs<T>, rows: std::ops::Range<usize>, pass: &Pass, mode: Mode, portable: bool) -> (Option<usize>, Vec<u64>) {
    let mut part = Part::new(mode, rows.len(), pass);
    let mut sc = Scratch::new(pass);
    let stop = if portable {
        ae::accumulate_portable(x, rows, pass, &mut part, &mut sc, &Checks::ALL)
    } else {
        ae::accumulate(x, rows, pass, &mut part, &mut sc, &Checks::ALL)
    };
    sc.drain(pass, &mut part);
    (stop, bits(&part))
}

fn vector_equals_portable<T: Score>(x: &Inputs<T>, what: &str) {
    for thr in [0.0, 0.005, 0.01, 0.3] {
        for cc in [true, false] {
            // One table, several sharing one lane, and several lanes (bin counts from 100 on
            // have lanes of their own).
            for bins in [&[15usize][..], &[1, 3, 15, 40][..], &[1000][..], &[3, 15, 200, 1000][..]] {
                // Alone, and with the raised twins of a threshold halfway to the first edge.
                let u1 = bins.iter().map(|&b| 1.0 / b as f64).fold(1.0, f64::min);
                let mut cuts = vec![Cut::at(thr)];
                if thr < u1 {
                    cuts.push(Cut { thr, raise: (thr + u1) / 2.0 });
                }
                for (cut, shared) in cuts.into_iter().flat_map(|c| [(c, false), (c, true)]) {
                    let pass = Pass::new(cc, x.k, bins, cut);
                    let pass = if shared { pass.shared() } else { pass };
                    for mode in [Mode::Dense, Mode::Counted, Mode::Sparse] {
                        let a = run_chunk(x, 0..x.n, &pass, mode, false);
                        let b = run_chunk(x, 0..x.n, &pass, mode, true);
                        assert!(a == b, "{what} {cut:?} shared={shared} cc={cc} bins={bins:?} {mode:?}: {:?} vs {:?}", a.0, b.0);
                    }
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
                    let pass = Pass::new(true, k, &[15, 4, 400], Cut::at(thr));
                    for mode in [Mode::Dense, Mode::Counted, Mode::Sparse] {
                        let a = run_chunk(&x, 0..40, &pass, mode, false);
                        let b = run_chunk(&x, 0..40, &pass, mode, true);
                        assert_eq!(a.0, b.0, "f64 K={k} special {si} col {col} thr {thr} {mode:?}");
                        assert!(si >= 5 || a.0 == Some(17), "a bad value is found");
                        let a = run_chunk(&x32, 0..40, &pass, mode, false);
                        let b = run_chunk(&x32, 0..40, &pass, mode, true);
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
    let mut v: Vec<u64> =
        t.count.iter().chain(&t.sum_score).chain(&t.sum_outcome).chain(&t.edges).map(|v| v.to_bits()).collect();
    assert_eq!(t.units.len(), t.count.len(), "a table with units");
    v.extend(t.units.iter().flat_map(|&u| [u as u64, (u >> 64) as u64]));
    v
}

/// Every strategy, with a dense lane per first edge and with one shared lane, and as the pass
/// chooses.
fn forces() -> Vec<Force> {
    let modes = [None, Some(Mode::Dense), Some(Mode::Counted), Some(Mode::Sparse)];
    let mut out: Vec<Force> = modes.iter().flat_map(|&mode| [false, true].map(|s| Force { mode, shared: Some(s) })).collect();
    out.push(Force::NONE);
    out
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
                let check = |single: &dyn Fn(usize) -> BinStats, many: &dyn Fn(Force) -> Vec<BinStats>, what: &str| {
                    let one: Vec<Vec<u64>> = bins.iter().map(|&b| table_bits(&single(b))).collect();
                    for force in forces() {
                        let all: Vec<Vec<u64>> = many(force).iter().map(table_bits).collect();
                        assert!(all == one, "{what} N={n} K={k} thr={thr} cc={cc} {force:?}");
                    }
                };
                let x = Inputs::new(&p, &y, k).unwrap();
                check(
                    &|b| bin_stats(&x, &g, b, &Checks::ALL).unwrap(),
                    &|f| ae::stats_with(&x, &g, &bins, &Checks::ALL, f, Cut::at(g.threshold)).unwrap(),
                    "f64",
                );
                let x = Inputs::new(&p32, &y, k).unwrap();
                check(
                    &|b| bin_stats(&x, &g, b, &Checks::ALL).unwrap(),
                    &|f| ae::stats_with(&x, &g, &bins, &Checks::ALL, f, Cut::at(g.threshold)).unwrap(),
                    "f32",
                );
            }
        }
    }
}

/// A pass with raised twins gives, in every strategy, bitwise the tables of a pass at each of
/// its two thresholds alone (the twins' bins above 0 are their tables', their bin 0 gathered
/// from the scattered path, their outcomes counted apart).
#[test]
fn raised_twins_are_the_single_threshold_tables() {
    let bins = [1usize, 3, 10, 15, 25, 64];
    for (n, k) in [(500usize, 7usize), (3000, 100), (20_000, 16)] {
        let (p, y) = data(n, k, (3 * n + k) as u64);
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        for (thr, raise) in [(0.0, 0.01), (0.001, 0.0125), (0.0, 1e-9)] {
            assert!(ae::can_raise(thr, raise, &bins));
            for cc in [true, false] {
                let g = grouping(cc, thr);
                let check = |run: &dyn Fn(Force, Cut) -> Vec<BinStats>, what: &str| {
                    let low: Vec<Vec<u64>> = run(Force::NONE, Cut::at(thr)).iter().map(table_bits).collect();
                    let high: Vec<Vec<u64>> = run(Force::NONE, Cut::at(raise)).iter().map(table_bits).collect();
                    for force in forces() {
                        let both: Vec<Vec<u64>> = run(force, Cut { thr, raise }).iter().map(table_bits).collect();
                        let at = format!("{what} N={n} K={k} thr={thr} raise={raise} cc={cc} {force:?}");
                        assert!(both[..bins.len()] == low[..], "{at}: the tables");
                        assert!(both[bins.len()..] == high[..], "{at}: the twins");
                    }
                };
                let x = Inputs::new(&p, &y, k).unwrap();
                check(&|f, cut| ae::stats_with(&x, &g, &bins, &Checks::ALL, f, cut).unwrap(), "f64");
                let x = Inputs::new(&p32, &y, k).unwrap();
                check(&|f, cut| ae::stats_with(&x, &g, &bins, &Checks::ALL, f, cut).unwrap(), "f32");
            }
        }
    }
    // Thresholds that cannot be raised are refused.
    let (p, y) = data(100, 5, 1);
    let x = Inputs::new(&p, &y, 5).unwrap();
    for (thr, raise, b) in [(0.0, 0.2, 10usize), (0.01, 0.01, 10), (0.02, 0.01, 10), (0.0, f64::INFINITY, 3), (0.0, 0.01, 100)] {
        assert!(ae::stats_raised(&x, &grouping(true, thr), &[b], raise, &Checks::ALL).is_err(), "{thr} {raise} {b}");
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
/// counts, outcomes and unit sums exactly. (40000, 4): chunks of more than `units::RUN` rows,
/// so runs of the lanes and of the scattered cells are folded within a chunk.
#[test]
fn tables_equal_a_direct_computation() {
    for (n, k) in [(2000usize, 9usize), (400, 300), (40_000, 4)] {
        let (p, y) = data(n, k, 77);
        let x = Inputs::new(&p, &y, k).unwrap();
        for thr in [0.0, 0.01, 0.2] {
            for cc in [true, false] {
                for b in [1usize, 2, 15, 1000] {
                    let t = bin_stats(&x, &grouping(cc, thr), b, &Checks::ALL).unwrap();
                    assert_is_direct(&t, &p, &y, k, thr, cc, b, &format!("N={n} K={k} thr={thr} cc={cc} B={b}"));
                }
            }
        }
    }
}

/// Asserts `t` is the table of (`cc`, `thr`, `b` even bins) computed directly from `p`, `y`
/// (each kept entry binned by counting the edges <= it): counts, outcomes and unit sums
/// exactly, score sums the unit sums rounded once, within 1e-12 relative of the float sums.
#[allow(clippy::too_many_arguments)]
fn assert_is_direct(t: &BinStats, p: &[f64], y: &[i64], k: usize, thr: f64, cc: bool, b: usize, at: &str) {
    let edges: Vec<f64> = (1..=b).map(|j| if j == b { 1.0 } else { j as f64 * (1.0 / b as f64) }).collect();
    let groups = if cc { k } else { 1 };
    let cells = groups * (b + 1);
    let (mut cnt, mut sum, mut out, mut du) = (vec![0.0; cells], vec![0.0; cells], vec![0.0; cells], vec![0i128; cells]);
    for (i, row) in p.chunks(k).enumerate() {
        for (c, &s) in row.iter().enumerate() {
            if s > thr {
                let bin = edges::bin_by_edges(&edges, s);
                let cell = if cc { c } else { 0 } * (b + 1) + bin;
                cnt[cell] += 1.0;
                sum[cell] += s;
                du[cell] += units::units(s) as i128;
                out[cell] += (c as i64 == y[i]) as u8 as f64;
            }
        }
    }
    assert_eq!(t.count, cnt, "{at}");
    assert_eq!(t.sum_outcome, out, "{at}");
    assert_eq!(t.units, du, "{at}");
    for ((a, d), &u) in t.sum_score.iter().zip(&sum).zip(&du) {
        assert_eq!(a.to_bits(), units::value(u).to_bits(), "{at}");
        assert!((a - d).abs() <= 1e-12 * d.abs().max(1.0), "{at}: {a} vs {d}");
    }
}

/// Chunks of more than `units::RUN` rows, and pooled rows longer than `units::RUN` groups of
/// eight: the lanes' runs are folded between rows and within a row, in every strategy, and
/// the AVX2 pass is still the portable one.
#[test]
fn rows_longer_than_a_run() {
    let (n, k) = (3 * units::RUN + 17, 5);
    let (p, y) = data(n, k, 12);
    let x = Inputs::new(&p, &y, k).unwrap();
    for (cc, shared) in [(true, false), (true, true), (false, false), (false, true)] {
        let pass = Pass::new(cc, k, &[15, 200], Cut { thr: 0.0, raise: 0.003 });
        let pass = if shared { pass.shared() } else { pass };
        for mode in [Mode::Dense, Mode::Counted, Mode::Sparse] {
            assert!(run_chunk(&x, 0..n, &pass, mode, false) == run_chunk(&x, 0..n, &pass, mode, true), "{cc} {shared} {mode:?}");
        }
    }
    let (n, k) = (3usize, 8 * units::RUN + 1003);
    let (p, y) = data(n, k, 11);
    let x = Inputs::new(&p, &y, k).unwrap();
    for thr in [0.0, 1e-7] {
        let pass = Pass::new(false, k, &[15], Cut { thr, raise: 0.01 });
        for mode in [Mode::Dense, Mode::Counted, Mode::Sparse] {
            assert!(run_chunk(&x, 0..n, &pass, mode, false) == run_chunk(&x, 0..n, &pass, mode, true), "{thr} {mode:?}");
            let t = ae::stats_with(&x, &grouping(false, thr), &[15], &Checks::ALL, Force { mode: Some(mode), shared: None }, Cut::at(thr)).unwrap();
            assert_is_direct(&t[0], &p, &y, k, thr, false, 15, &format!("thr={thr} {mode:?}"));
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
            let e = ae::stats_with(&x, &grouping(cc, 0.0), &[15], &check, Force { mode: force, shared: None }, Cut::at(0.0)).unwrap_err();
            assert_eq!(e, KernelError::InputChanged);
        }
    }
}

/// On a CPU with AVX2 the row pass takes its AVX2 twin for class-conditional and pooled
/// tables alike, in every strategy (a test of dispatch, not of time).
#[test]
fn the_row_pass_takes_avx2_on_an_avx2_cpu() {
    use crate::kernels::core::simd::{self, Kernel};
    if !simd::avx2() {
        return;
    }
    let before = simd::taken(Kernel::SceRows);
    let (p, y) = data(2000, 30, 9);
    let x = Inputs::new(&p, &y, 30).unwrap();
    for force in [None, Some(Mode::Dense), Some(Mode::Counted), Some(Mode::Sparse)] {
        for cc in [true, false] {
            ae::stats_with(&x, &grouping(cc, 0.0), &[15], &Checks::ALL, Force { mode: force, shared: None }, Cut::at(0.0)).unwrap();
        }
    }
    let after = simd::taken(Kernel::SceRows);
    assert!(after[1] > before[1], "the row pass never took its AVX2 twin");
    assert_eq!(after[0], 0, "the row pass took its portable path on an AVX2 CPU");
}

/// Pooled tables are the class-conditional ones summed over the classes where those are small
/// enough, else a pooled pass's; either way the direct computation, and `evaluate`'s pair of
/// passes (both groupings or the pooled one alone, with raised twins) gives the same tables.
#[test]
fn pooled_tables_sum_the_class_tables_or_take_their_own_pass() {
    let (n, k) = (60usize, 2100usize);
    let (p, y) = data(n, k, 21);
    let x = Inputs::new(&p, &y, k).unwrap();
    let big = 2000; // 2100 x 2001 cells: over the limit
    assert!(ae::pooled_from_classes(k, 10) && !ae::pooled_from_classes(k, big));
    for thr in [0.0, 0.0001] {
        let pooled = ae::stats(&x, &grouping(false, thr), &[10, big], &Checks::ALL).unwrap();
        let cc = ae::stats(&x, &grouping(true, thr), &[10], &Checks::ALL).unwrap();
        assert_eq!(table_bits(&pooled[0]), table_bits(&ae::collapse(&cc[0])), "thr={thr}");
        for (t, &b) in pooled.iter().zip(&[10, big]) {
            let alone = bin_stats(&x, &grouping(false, thr), b, &Checks::ALL).unwrap();
            assert_eq!(table_bits(t), table_bits(&alone), "thr={thr} B={b}");
            assert_is_direct(t, &p, &y, k, thr, false, b, &format!("thr={thr} B={b}"));
        }
        let bits = |v: &[BinStats]| v.iter().map(table_bits).collect::<Vec<_>>();
        for (cc, pooled, groupings) in [(true, true, 4), (false, true, 2)] {
            let pair = ae::stats_pair(&x, thr, Some(0.05), &[10, 15], cc, pooled, &Checks::ALL).unwrap();
            assert_eq!(pair.len(), groupings);
            for (g, tables) in &pair {
                let one = ae::stats(&x, g, &[10, 15], &Checks::ALL).unwrap();
                assert!(bits(tables) == bits(&one), "{g:?}");
            }
        }
    }
    // A raised threshold that cannot be one is refused.
    assert!(ae::stats_pair(&x, 0.0, Some(0.2), &[10], true, true, &Checks::ALL).is_err());
}

/// The lane is shared where few kept scores lie between the first edges of the pass (a
/// many-class softmax), not where many do, nor for one first edge; one row of one class is
/// sampled without going out of bounds.
#[test]
fn shared_lane_follows_the_scores_between_the_first_edges() {
    let bins = [10usize, 20, 30, 40, 50];
    let pass = |k: usize| Pass::new(true, k, &bins, Cut::at(0.0));
    // 1000 classes, each row 0.9 on its label and the rest spread below 0.02.
    let (n, k) = (200usize, 1000usize);
    let y: Vec<i64> = (0..n as i64).map(|i| i % k as i64).collect();
    let mut p = vec![0.1 / (k - 1) as f64; n * k];
    for (i, &c) in y.iter().enumerate() {
        p[i * k + c as usize] = 0.9;
    }
    assert!(ae::shared_lane(&Inputs::new(&p, &y, k).unwrap(), &pass(k)));
    // Uniform rows of 10 classes: every score 0.1, at the widest first edge, so none between
    // (shared: it costs nothing); rows of 16 with every score in between (1/16 = 0.0625).
    let p10 = vec![0.1; n * 10];
    let y10: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
    assert!(ae::shared_lane(&Inputs::new(&p10, &y10, 10).unwrap(), &pass(10)), "nothing between");
    let p16 = vec![1.0 / 16.0; n * 16];
    assert!(!ae::shared_lane(&Inputs::new(&p16, &y10, 16).unwrap(), &pass(16)));
    // One first edge: nothing to share.
    assert!(!ae::shared_lane(&Inputs::new(&p, &y, k).unwrap(), &Pass::new(true, k, &[15], Cut::at(0.0))));
    // Tiny inputs: one row of one class, its score above every first edge, or between.
    assert!(ae::shared_lane(&Inputs::new(&[1.0], &[0], 1).unwrap(), &pass(1)));
    assert!(!ae::shared_lane(&Inputs::new(&[0.05], &[0], 1).unwrap(), &pass(1)));
}
