//! The selection pass: the grid locator is the exact search, and every plan's tables and
//! fetched scores are what a plain per-entry search gives.

use super::*;
use crate::kernels::tests::xorshift;

/// Keys of a grid like the coordinator's first-pass grid (`select.initial_bounds`): -1, 0,
/// powers of two, `uniform` steps on [0, 1], `1 - 2^-j`, 1, the float after 1, 2.
fn grid<T: Keyed>(uniform: usize, tiny: i32, near: i32, from: impl Fn(f64) -> i64) -> Vec<i64> {
    let mut v: Vec<f64> = vec![-1.0, 0.0, 1.0, 2.0];
    v.extend((1..tiny).map(|e| 2f64.powi(-e)));
    v.extend((0..=uniform).map(|i| i as f64 / uniform as f64));
    v.extend((1..near).map(|j| 1.0 - 2f64.powi(-j)));
    let mut keys: Vec<i64> = v.into_iter().map(from).collect();
    keys.push(T::key_of_wide(1.0) + 1);
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Awkward values: uniform, tiny, next to 1, negative, on and next to the bounds.
fn awkward(bounds_values: &[f64]) -> Vec<f64> {
    let mut r = xorshift(7);
    let mut v: Vec<f64> = (0..20_000).map(|_| r()).collect();
    v.extend((0..5000).map(|_| r().powi(20)));
    v.extend((0..5000).map(|_| 1.0 - r().powi(8)));
    v.extend((0..100).map(|_| -r() * 1e-7));
    for &b in bounds_values {
        v.extend([b, b * (1.0 + 1e-7), b * (1.0 - 1e-7), b + 1e-300]);
    }
    v.extend([0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 1e-300, 5e-324, 1e-45]);
    v
}

fn check_locator<T: Keyed>(uniform: usize, narrow: impl Fn(f64) -> T, from_key: impl Fn(i64) -> f64, tiny: i32, near: i32) {
    let bounds = grid::<T>(uniform, tiny, near, |x| narrow(x).key());
    let loc = GridLocator::<T>::new(&bounds);
    let on: Vec<f64> = bounds.iter().map(|&k| from_key(k)).collect();
    for x in awkward(&on) {
        let key = narrow(x).key();
        assert_eq!(loc.locate(key), search(&bounds, key), "{x:e}");
    }
}

#[test]
fn grid_locator_is_the_exact_search() {
    let (f32_value, f64_value) = (f32::value_of_key, f64::value_of_key);
    for uniform in [64, 10485, 65536] {
        check_locator::<f32>(uniform, |x| x as f32, f32_value, 150, 25);
        check_locator::<f64>(uniform, |x| x, f64_value, 1075, 54);
    }
}

#[test]
fn keys_sort_as_values() {
    let xs = [-1.0f64, -1e-5, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 0.25, 1.0, 1.5];
    for w in xs.windows(2) {
        assert!(w[0].key() <= w[1].key() && (w[0] < w[1]) == (w[0].key() < w[1].key()), "{w:?}");
        let (a, b) = (w[0] as f32, w[1] as f32);
        assert!((a < b) == (a.key() < b.key()) && (a == b) == (a.key() == b.key()), "{w:?}");
    }
    for x in xs {
        assert_eq!(f64::value_of_key(x.key()), x + 0.0);
        assert_eq!(f32::value_of_key((x as f32).key()), (x as f32) as f64 + 0.0);
    }
    assert_eq!((-0.0f64).key(), 0);
    assert_eq!((-0.0f32).key(), 0);
}

/// A plan of three regions of group 0 (buckets, fetch, buckets) and a grid of group 1 of `kind`
/// (0: cut by the grid locator; 3: the same, tabled per super-bucket; 1: cut by a search behind
/// the later passes' filter).
fn plan(threshold: f64, grid_bounds: &[i64], kind: i64) -> Plan {
    let k = |x: f64| x.key();
    let mut bounds: Vec<i64> = vec![k(0.1), k(0.2), k(0.25), k(0.3)];
    bounds.extend([k(0.5), k(0.6)]);
    bounds.extend([k(0.7), k(0.7) + 1, k(0.9)]);
    let g0 = bounds.len();
    bounds.extend_from_slice(grid_bounds);
    let rows = [[0, 1, 0, 4, 0], [0, 2, 4, 2, 17], [0, 1, 6, 3, 3], [1, kind, g0 as i64, grid_bounds.len() as i64, 5]];
    Plan::from_rows(threshold, 2, &rows, bounds, 5 + grid_bounds.len() - 1).unwrap()
}

/// The plain rule: each kept entry's region by a linear scan, its bucket by a search.
fn naive(plan: &Plan, entries: &[(usize, f64, bool)]) -> Scanned<f64> {
    let mut out = Scanned { cells: vec![Cell::default(); plan.size], counts: vec![0; plan.counts_size], ..Default::default() };
    for &(g, s, o) in entries {
        if s.partial_cmp(&plan.threshold) != Some(std::cmp::Ordering::Greater) {
            continue;
        }
        let key = s.key();
        for r in plan.groups[g].iter().filter(|r| r.lo <= key && key < r.hi) {
            if r.kind == Kind::Fetch {
                out.fetched_id.push(r.slot as i64);
                out.fetched_score.push(s);
                out.fetched_outcome.push(o);
            } else if let Some(b) = search(&plan.bounds[r.bounds.clone()], key) {
                let slot = if r.kind == Kind::GridSuper {
                    out.counts[SUPER * r.slot + b] += 1;
                    r.slot + b / SUPER
                } else {
                    r.slot + b
                };
                let c = &mut out.cells[slot];
                c.count += 1;
                c.outcome += o as u64;
                c.units += units::units(s) as i128;
            }
        }
    }
    out
}

#[test]
fn matrix_scan_is_the_plain_rule_for_every_plan_and_threshold() {
    let mut r = xorshift(11);
    let (n, k) = (3000, 2);
    let mut probs = Vec::with_capacity(n * k);
    for i in 0..n {
        // ties and exact bounds included
        let a = match i % 7 {
            0 => 0.3,
            1 => 0.7,
            2 => 0.0,
            _ => r(),
        };
        probs.extend([a, 1.0 - a]);
    }
    let labels: Vec<i64> = (0..n).map(|i| (i % 3 == 0) as i64).collect();
    let x = Inputs::new(&probs, &labels, k).unwrap();
    let gb = grid::<f64>(64, 40, 20, |x| x.key());
    for (mp, cc, kind) in [(false, true, 3), (true, true, 3), (false, false, 3), (true, false, 0), (false, true, 0), (false, true, 1), (true, true, 1)] {
        let plans = [plan(0.0, &gb, kind), plan(0.0, &gb, kind), plan(0.25, &gb, kind)];
        let mut entries = Vec::new();
        for (i, &label) in labels.iter().enumerate() {
            let row = x.row(i);
            if mp {
                let p = if row[1] > row[0] { 1 } else { 0 };
                entries.push((if cc { p } else { 0 }, row[p], label == p as i64));
            } else {
                for (c, &s) in row.iter().enumerate() {
                    entries.push((if cc { c } else { 0 }, s, label == c as i64));
                }
            }
        }
        let ps: Vec<Plan> = plans.iter().map(|p| {
            let mut q = Plan { threshold: p.threshold, groups: p.groups.clone(), bounds: p.bounds.clone(), size: p.size, counts_size: p.counts_size };
            if !cc {
                q.groups.truncate(1);
            }
            q
        }).collect();
        let got = scan_matrix(&x, mp, cc, &ps).unwrap();
        for (p, g) in ps.iter().zip(&got) {
            let want = naive(p, &entries);
            assert_eq!(g.cells, want.cells, "max_prob {mp}, class-conditional {cc}, threshold {}", p.threshold);
            assert_eq!(g.counts, want.counts, "max_prob {mp}, class-conditional {cc}, threshold {}", p.threshold);
            // fetched entries in any order
            let sorted = |s: &Scanned<f64>| {
                let mut v: Vec<(i64, u64, bool)> = (0..s.fetched_id.len()).map(|i| (s.fetched_id[i], s.fetched_score[i].to_bits(), s.fetched_outcome[i])).collect();
                v.sort_unstable();
                v
            };
            assert_eq!(sorted(g), sorted(&want));
        }
        assert!(got[0].cells.iter().map(|c| c.count).sum::<u64>() > 0 && !got[0].fetched_id.is_empty());
    }
}

#[test]
fn pairs_scan_keeps_every_pair_below_minus_infinity() {
    let conf = [0.0f32, -1e-5, 0.35, 0.55, 0.95, 0.55];
    let correct = [1u8, 0, 1, 1, 0, 1];
    let pred = [0i64, 1, 1, 0, 1, 0];
    let pairs = Pairs::new(&conf, &correct, Some(&pred), 2).unwrap();
    let bounds = vec![(-1.0f32).key(), 0.5f32.key(), 2.0f32.key()];
    let rows = [[0, 3, 0, 3, 0], [1, 1, 0, 3, 2]];
    let all = Plan::from_rows(f64::NEG_INFINITY, 2, &rows, bounds.clone(), 4).unwrap();
    let kept = Plan::from_rows(0.0, 2, &rows, bounds, 4).unwrap();
    let got = scan_pairs(&pairs, true, &[all, kept]).unwrap();
    // group 0: a grid (its bucket counts, one super-bucket's table in slot 0; slot 1 unused)
    let counts = |s: &Scanned<f32>| s.cells.iter().map(|c| c.count).collect::<Vec<_>>();
    assert_eq!(counts(&got[0]), vec![3, 0, 2, 1]);
    assert_eq!(counts(&got[1]), vec![2, 0, 1, 1]);
    assert_eq!((got[0].counts.clone(), got[1].counts.clone()), (vec![1, 2], vec![0, 2]));
    assert_eq!(got[0].cells[0].outcome, 3);
    assert_eq!(got[0].cells[2].units, units::units(-1e-5f32 as f64) as i128 + units::units(0.35f32 as f64) as i128);
    assert!(scan_pairs(&pairs, true, &[Plan::from_rows(0.0, 1, &[], vec![], 0).unwrap()]).is_err());
}

#[test]
fn grid_counts_keep_their_wraps() {
    let bounds: Vec<i64> = (0..40).collect();
    let plan = Plan::from_rows(f64::NEG_INFINITY, 1, &[[0, 3, 0, 40, 0]], bounds, 3).unwrap();
    let mut sc = Scanner::<f64>::new(&plan, false);
    for _ in 0..3 * 65536 + 5 {
        sc.add(Hit::Grid(1, 20), 0.5, 0.5, true);
    }
    sc.add(Hit::Grid(0, 3), 0.1, 0.1, false);
    let out = sc.finish(None).unwrap();
    assert_eq!((out.counts[20], out.counts[3], out.counts.len()), (3 * 65536 + 5, 1, 39));
    assert_eq!((out.cells[1].count, out.cells[1].outcome, out.cells[0].count), (3 * 65536 + 5, 3 * 65536 + 5, 1));
    // a bucket past u32 (2^32 scores in one chunk) is an error, not a wrapped count
    let mut sc = Scanner::<f64>::new(&plan, false);
    sc.add(Hit::Grid(1, 20), 0.5, 0.5, true);
    sc.wraps.insert(20, 1 << 16);
    let err = sc.finish(None).unwrap_err().to_string();
    assert!(err.contains("smaller chunks"), "{err}");
}

#[test]
fn uniform_runs_locate_by_arithmetic_exactly() {
    // a run of 400 buckets of width 2^-10 between irregular bounds, and one that is not on
    // multiples of its step (0.3 + i/1024: not taken)
    let mut values = vec![-1.0, 0.0, 1e-3, 0.1];
    values.extend((120..520).map(|k| k as f64 / 1024.0));
    values.extend([0.6, 0.75, 0.9, 1.0, 2.0]);
    fn check<T: Keyed>(values: &[f64], narrow: impl Fn(f64) -> T, want_first: Option<usize>) {
        let bounds: Vec<i64> = values.iter().map(|&v| narrow(v).key()).collect();
        let loc = GridLocator::<T>::new(&bounds);
        assert_eq!(loc.uniform.as_ref().map(|u| u.first), want_first);
        for x in awkward(values) {
            let key = narrow(x).key();
            assert_eq!(loc.locate(key), search(&bounds, key), "{x:e}");
        }
    }
    check::<f32>(&values, |x| x as f32, Some(4));
    check::<f64>(&values, |x| x, Some(4));
    let shifted: Vec<f64> = (0..200).map(|k| 0.3 + k as f64 / 1024.0).collect();
    check::<f64>(&shifted, |x| x, None);
    let short: Vec<f64> = (0..40).map(|k| k as f64 / 64.0).collect();
    check::<f32>(&short, |x| x as f32, None);
}

#[test]
fn bad_plans_are_refused() {
    let b = vec![1i64, 2, 3];
    assert!(Plan::from_rows(0.0, 1, &[[1, 1, 0, 3, 0]], b.clone(), 2).is_err()); // group
    assert!(Plan::from_rows(0.0, 1, &[[0, 4, 0, 3, 0]], b.clone(), 2).is_err()); // kind
    assert!(Plan::from_rows(0.0, 1, &[[0, 1, 1, 3, 0]], b.clone(), 2).is_err()); // bounds
    assert!(Plan::from_rows(0.0, 1, &[[0, 1, 0, 3, 1]], b.clone(), 2).is_err()); // slots
    assert!(Plan::from_rows(0.0, 1, &[[0, 1, 0, 3, 0], [0, 2, 1, 2, 0]], b.clone(), 2).is_err()); // overlap
    assert!(Plan::from_rows(0.0, 1, &[[0, 1, 0, 3, 0]], vec![1, 1, 3], 2).is_err()); // order
    let g: Vec<i64> = (0..40).collect();
    assert!(Plan::from_rows(0.0, 2, &[[0, 3, 0, 40, 0], [1, 3, 0, 40, 2]], g.clone(), 6).is_err()); // counts
    assert!(Plan::from_rows(0.0, 2, &[[0, 3, 0, 40, 0], [1, 3, 0, 40, 3]], g.clone(), 5).is_err()); // slots
    assert!(Plan::from_rows(0.0, 2, &[[0, 3, 0, 40, 0], [1, 3, 0, 40, 3]], g, 6).is_ok());
    let plans = [Plan::from_rows(0.5, 1, &[], vec![], 0).unwrap(), Plan::from_rows(0.0, 1, &[], vec![], 0).unwrap()];
    let x = Inputs::new(&[0.5f64, 0.5], &[0], 2).unwrap();
    assert!(scan_matrix(&x, false, false, &plans).is_err()); // not sorted by threshold
}

#[test]
fn first_key_above_is_the_threshold_s_successor() {
    fn check<T: Keyed>() {
        for t in [f64::NEG_INFINITY, -1.0, -0.0, 0.0, 1e-300, 0.01, 0.5, 1.0, 3.0, f64::MAX, f64::INFINITY] {
            let k = grid::first_key_above::<T>(t);
            if t == f64::INFINITY {
                assert_eq!(k, T::key_of_wide(f64::INFINITY) + 1);
                continue;
            }
            assert!(T::value_of_key(k) > t && T::value_of_key(k - 1) <= t, "{t:e}: {k} {} {}", T::value_of_key(k), T::value_of_key(k - 1));
        }
    }
    check::<f32>();
    check::<f64>();
}

/// First-pass plans of `k` groups over one grid at each threshold.
fn first_pass_plans(gb: &[i64], fine: usize, k: usize, thresholds: &[f64]) -> Vec<Plan> {
    thresholds.iter().map(|&t| Plan::first_pass(t, k, gb.to_vec(), fine).unwrap()).collect()
}

#[test]
fn first_pass_fast_path_equals_the_general_path_and_the_plain_rule() {
    fn run<T: Keyed + PartialEq + std::fmt::Debug>(narrow: impl Fn(f64) -> T, check_naive: bool) {
        let gb = grid::<T>(4096, 60, 30, |x| narrow(x).key());
        let fine = gb.partition_point(|&b| b < narrow(1.0 / 16.0).key());
        let on: Vec<f64> = gb.iter().map(|&b| T::value_of_key(b)).collect();
        let k = 3;
        // awkward values (on and next to the bounds and the thresholds), clipped to [0, 1]
        let mut vals: Vec<f64> = awkward(&on).into_iter().filter(|v| (0.0..=1.0).contains(v)).collect();
        vals.extend([0.01, 0.25, 0.0100001, 0.2499999]);
        let n = vals.len() / k;
        let probs: Vec<T> = vals[..n * k].iter().map(|&v| narrow(v)).collect();
        let labels: Vec<i64> = (0..n).map(|i| (i % k) as i64).collect();
        let x = Inputs::new(&probs, &labels, k).unwrap();
        let plans = first_pass_plans(&gb, fine, k, &[f64::NEG_INFINITY, 0.0, 0.01, 0.25]);
        let scanners: Vec<Scanner<T>> = plans.iter().enumerate().map(|(i, p)| Scanner::new(p, i > 0 && p.same_regions(&plans[i - 1]))).collect();
        assert!(grid::GridPass::of(&scanners).is_some(), "the first pass's shape takes the fast path");
        for mp in [false, true] {
            let fast = scan_matrix(&x, mp, true, &plans).unwrap();
            GENERAL_ONLY.with(|g| g.set(true));
            let general = scan_matrix(&x, mp, true, &plans).unwrap();
            GENERAL_ONLY.with(|g| g.set(false));
            assert_eq!(fast, general, "max_prob {mp}");
            if check_naive && !mp {
                let entries: Vec<(usize, f64, bool)> = (0..n * k).map(|i| (i % k, probs[i].to_f64(), labels[i / k] == (i % k) as i64)).collect();
                for (p, got) in plans.iter().zip(&fast) {
                    let want = naive(p, &entries);
                    assert_eq!((&got.cells, &got.counts), (&want.cells, &want.counts), "threshold {}", p.threshold);
                }
            }
        }
    }
    run::<f64>(|x| x, true);
    run::<f32>(|x| x as f32, false);
}

#[test]
fn groups_split_differently_take_the_general_path() {
    // two groups over one grid, split at different buckets: no fast path, tables as the rule
    let gb = grid::<f64>(64, 20, 10, |x| x.key());
    let (f0, f1) = (30usize, 40usize);
    let s0 = (gb.len() - 1 - f0).div_ceil(SUPER);
    let s1 = (gb.len() - 1 - f1).div_ceil(SUPER);
    let rows = [
        [0, 3, f0 as i64, (gb.len() - f0) as i64, 0],
        [0, 0, 0, f0 as i64 + 1, s0 as i64],
        [1, 3, f1 as i64, (gb.len() - f1) as i64, (s0 + f0) as i64],
        [1, 0, 0, f1 as i64 + 1, (s0 + f0 + s1) as i64],
    ];
    let plan = Plan::from_rows(0.0, 2, &rows, gb.clone(), s0 + f0 + s1 + f1).unwrap();
    let scanners = [Scanner::<f64>::new(&plan, false)];
    assert!(grid::GridPass::of(&scanners).is_none());
    let mut r = xorshift(3);
    let probs: Vec<f64> = (0..1000).flat_map(|_| { let a = r(); [a, 1.0 - a] }).collect();
    let labels: Vec<i64> = (0..1000).map(|i| i % 2).collect();
    let x = Inputs::new(&probs, &labels, 2).unwrap();
    let got = scan_matrix(&x, false, true, std::slice::from_ref(&plan)).unwrap();
    let entries: Vec<(usize, f64, bool)> = (0..2000).map(|i| (i % 2, probs[i], labels[i / 2] == (i % 2) as i64)).collect();
    let want = naive(&plan, &entries);
    assert_eq!((&got[0].cells, &got[0].counts), (&want.cells, &want.counts));
}
