//! Weighted adaptive tables of the class-conditional all-probabilities grouping (ACE, TACE and
//! their relatives with per-row weights) from a probability matrix, one class at a time.
//!
//! The table is, bit for bit, the weighted primitive's
//! ([`grouped_bin_stats`](crate::kernels::weighted::grouped::grouped_bin_stats), adaptive
//! bins) on the grouping's kept triples, each weighted by its row's weight, as
//! [`matrix`](crate::kernels::weighted::matrix) is for even bins; but the triples of every
//! class together (50M at (50k, 1000): 1.6 GB, with their sort keys and cells another 1 GB)
//! were most of a weighted ACE's 7 s, a quarter of it the kernel zeroing their fresh pages.
//! Here a block of classes is read from the matrix into each class's list of kept entries
//! (buffers reused by the thread), and each class is then finished alone:
//! - its rows of positive weight sorted by (score, row), the primitive's order
//!   ([`sort_keyed_here`]), and its edges from their weights in that order
//!   ([`sorted_edge_ranks`], the primitive's rule);
//! - its entries binned by those edges as
//!   [`bin_by_edges`](crate::kernels::core::edges::bin_by_edges) bins them (in score order a
//!   bin is a run) and summed with the units of [`sums`](crate::kernels::weighted::sums),
//!   exact in `i128`, at the primitive's scales (found as
//!   [`matrix`](crate::kernels::weighted::matrix) finds them); entries of weight 0 add
//!   nothing and are never an edge.
//!
//! Pooled groupings (one group of every entry) stay on the triples path: their one sort is the
//! cost either way.

use rayon::prelude::*;

use super::grouped::{sort_keyed_here, sorted_edge_ranks};
use super::matrix::{at_found_scales, checked, Part};
use crate::kernels::core::chunks::PerThread;
use crate::kernels::core::edges::adaptive_boundaries;
use crate::kernels::core::order::{order_key, score_of_key};
use crate::kernels::core::spec::{Binning, Grouping};
use crate::kernels::core::validate::Checks;
use crate::kernels::weighted::sums::{count_units, weighted_units, Scales};
use crate::kernels::{BinStats, Inputs, KernelError, Score};

/// A thread's buffers, reused from class block to class block.
#[derive(Default)]
struct Scratch {
    /// Per class of the block: the sort keys of its kept entries of positive weight,
    /// `(order_key(score), row)`, in row order.
    keys: Vec<Vec<u128>>,
    sort: Vec<u128>,
    weights: Vec<f64>,
}

/// What a row adds to its cell at the pass's scales, gathered so that the walk over a class's
/// entries in score order (rows in no order) reads one place per entry: the scaled weight,
/// its count units and the row's label.
#[derive(Clone, Copy)]
struct RowUnits {
    ws: f64,
    label: u64,
    count: i128,
}

/// One class's upper edges and its part of the table (its `nb` cells).
type ClassTable = (Vec<f64>, Part);

/// Classes per block of the read: the rows' stretches of a block are read at the matrix's
/// stride, a TLB miss per row and block, so wider blocks read faster (TACE at (50k, 1000):
/// 459 ms with 8, 194 ms with 128) but hold more kept entries at once, about this many bytes
/// of keys per thread at most.
const BLOCK_BYTES: usize = 1 << 25;

/// The classes of a block: as many as [`BLOCK_BYTES`] of keys allow for the kept entries
/// expected (their share in up to 256 rows spread over the input, at least 1/64), 8 (a
/// float64 cache line of a row) to 128, and few enough for four blocks per thread (at (50k,
/// 100) blocks of 40 classes made three, two of them on one of two threads). Only the speed
/// depends on it.
fn block_width<T: Score>(x: &Inputs<T>, thr: f64) -> usize {
    let for_threads = x.k.div_ceil(4 * rayon::current_num_threads()).max(1);
    let step = (x.n / 256).max(1);
    let (mut seen, mut kept) = (0usize, 0usize);
    for i in (0..x.n).step_by(step) {
        seen += x.k;
        kept += x.row(i).iter().filter(|v| v.to_f64() > thr).count();
    }
    let share = (kept as f64 / seen.max(1) as f64).max(1.0 / 64.0);
    let per_class = (x.n as f64 * share).max(1.0) * std::mem::size_of::<u128>() as f64;
    ((BLOCK_BYTES as f64 / per_class) as usize).min(for_threads).clamp(8, 128) / 8 * 8
}

/// The edges and sums of classes `cols` at scales `sc`. Entries of weight 0 add nothing to
/// any sum and are never an edge: only their number counts (for the scales).
#[allow(clippy::too_many_arguments)]
fn class_block<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    rows: &[RowUnits],
    thr: f64,
    b: usize,
    sc: &Scales,
    cols: std::ops::Range<usize>,
    s: &mut Scratch,
) -> Result<Vec<ClassTable>, KernelError> {
    let width = cols.len();
    s.keys.resize_with(width.max(s.keys.len()), Vec::new);
    s.keys.iter_mut().for_each(Vec::clear);
    let mut kept = vec![0usize; width];
    // One read of the block's columns, row by row.
    let (mut max_w, mut max_s) = (0.0f64, 0.0f64);
    for (i, &wi) in w.iter().enumerate().take(x.n) {
        let row = &x.row(i)[cols.clone()];
        let mut any = false;
        for ((list, n), v) in s.keys.iter_mut().zip(kept.iter_mut()).zip(row) {
            let v = v.to_f64();
            if v > thr {
                *n += 1;
                any = true;
                max_s = if v.abs() > max_s { v.abs() } else { max_s };
                if wi > 0.0 {
                    list.push(((order_key(v) as u128) << 64) | i as u128);
                }
            }
        }
        if any {
            max_w = if wi > max_w { wi } else { max_w };
        }
    }
    let mut out = Vec::with_capacity(width);
    for (j, c) in cols.enumerate() {
        // The primitive's order: rows of positive weight by (score, row).
        let keys = &mut s.keys[j];
        sort_keyed_here(keys, &mut s.sort);
        let row_of = |key: u128| key as u64 as usize;
        s.weights.clear();
        s.weights.extend(keys.iter().map(|&k| w[row_of(k)]));
        let edges: Vec<f64> =
            sorted_edge_ranks(&s.weights, b).into_iter().map(|p| x.probs[row_of(keys[p]) * x.k + c].to_f64()).collect();
        // In score order a bin is a run: bin_by_edges of each score, by a walk over the edges.
        let mut part = Part::zeros(b);
        let mut bin = 0usize;
        let mut run = [0i128; 3];
        for &key in keys.iter() {
            let v = score_of_key((key >> 64) as u64);
            if bin < edges.len() && edges[bin] <= v {
                part.cells[bin] = run;
                run = [0; 3];
                while bin < edges.len() && edges[bin] <= v {
                    bin += 1;
                }
            }
            let r = rows[row_of(key)];
            run[0] = run[0].wrapping_add(r.count);
            run[1] = run[1].wrapping_add(weighted_units(r.ws, sc.score_units(v)));
            if r.label == c as u64 {
                run[2] = run[2].wrapping_add(r.count);
            }
        }
        if let Some(cell) = part.cells.get_mut(bin) {
            *cell = run;
        }
        part.kept = kept[j];
        out.push((edges, part));
    }
    // The block's facts go with its first class (they are added over all classes).
    if let Some((_, first)) = out.first_mut() {
        (first.max_weight, first.max_score) = (max_w, max_s);
    }
    Ok(out)
}

/// The adaptive table (`num_bins` bins per class) of the class-conditional all-probabilities
/// grouping at threshold `thr` of `x` with row weights `w`: the weighted primitive's table of
/// the grouping's kept triples (module doc). Validates as [`super::matrix::even_stats`] does.
pub fn adaptive_stats<T: Score>(x: &Inputs<T>, w: &[f64], thr: f64, num_bins: usize, check: &Checks) -> Result<BinStats, KernelError> {
    let g = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional: true, threshold: thr };
    checked(x, w, &g, num_bins, check)?;
    let width = block_width(x, thr);
    let blocks: Vec<std::ops::Range<usize>> = (0..x.k).step_by(width).map(|c| c..(c + width).min(x.k)).collect();
    let scratch = PerThread::<Scratch>::new();
    let mut edges: Vec<Vec<f64>> = Vec::new();
    let (sc, part) = at_found_scales(x, w, |sc| {
        let rows: Vec<RowUnits> = (0..x.n)
            .map(|i| {
                let ws = w[i] * sc.weight;
                RowUnits { ws, label: x.labels[i] as u64, count: count_units(ws) }
            })
            .collect();
        let per_block: Vec<Vec<ClassTable>> = if blocks.len() == 1 {
            // On the calling thread (a short input: its GIL may be held, see `rust/py`).
            vec![class_block(x, w, &rows, thr, num_bins, sc, blocks[0].clone(), &mut Scratch::default())?]
        } else {
            // (`class_block` runs no rayon jobs: its sorts are serial.)
            blocks
                .par_iter()
                .map(|cols| scratch.with(|s| class_block(x, w, &rows, thr, num_bins, sc, cols.clone(), s)))
                .collect::<Result<_, _>>()?
        };
        let mut total = Part::zeros(0);
        edges.clear();
        for (e, p) in per_block.into_iter().flatten() {
            // Each class's cells follow the previous class's.
            total.cells.extend_from_slice(&p.cells);
            total.add_facts(&p);
            edges.push(e);
        }
        Ok(total)
    })?;
    let mut st = sc.table(x.k, num_bins);
    for (i, a) in part.cells.iter().enumerate() {
        sc.write(&mut st, i, a[0], a[1], a[2]);
    }
    st.edges = edges.iter().flat_map(|e| adaptive_boundaries(e, num_bins, 0.0)).collect();
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::weighted::matrix::tests::{by_triples, same, weight_kinds};

    /// Rows with ties (scores on a grid of 1/20), exact zeros and ones, labels, and weights of
    /// every kind the edges and scales treat apart.
    fn data(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
        let mut draw = crate::kernels::tests::xorshift(seed);
        let mut p = vec![0.0f64; n * k];
        let mut y = vec![0i64; n];
        for i in 0..n {
            let raw: Vec<f64> = (0..k).map(|_| if draw() < 0.3 { (draw() * 20.0).floor() } else { draw().powi(3) * 20.0 }).collect();
            let t: f64 = raw.iter().sum();
            for (j, (v, r)) in p[i * k..(i + 1) * k].iter_mut().zip(&raw).enumerate() {
                *v = if t > 0.0 { r / t } else if j == 0 { 1.0 } else { 0.0 };
            }
            y[i] = ((draw() * k as f64) as usize).min(k - 1) as i64;
        }
        (p, y)
    }

    #[test]
    fn tables_are_the_primitive_tables_of_the_triples() {
        // (200, 300): blocks of at most 128 classes, three of them
        for (n, k, seed) in [(500usize, 3usize, 1u64), (3000, 21, 2), (60, 1, 3), (5000, 9, 4), (200, 300, 5)] {
            let (mut p, y) = data(n, k, seed);
            if k > 1 {
                // row 0 keeps nothing above 0.5 (its largest weight is then not the kept one)
                p[..k].fill(1.0 / k as f64);
            }
            let x = Inputs::new(&p, &y, k).unwrap();
            for (name, w) in weight_kinds(n, seed + 10) {
                for thr in [0.0, 0.01, 0.5] {
                    for b in [1usize, 2, 10, 15] {
                        let what = format!("n {n} k {k} {name} thr {thr} b {b}");
                        let got = adaptive_stats(&x, &w, thr, b, &Checks::ALL).unwrap();
                        same(&got, &by_triples(&x, &w, Binning::Adaptive, true, thr, b), &what);
                    }
                }
            }
        }
    }
}
