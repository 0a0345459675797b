//! Weighted adaptive tables of the all-probabilities groupings (ACE, TACE and their pooled
//! relatives with per-row weights) from a probability matrix, each group sorted once for every
//! requested bin count.
//!
//! A table is, bit for bit, the weighted primitive's
//! ([`grouped_bin_stats`](crate::kernels::weighted::grouped::grouped_bin_stats), adaptive
//! bins) on the grouping's kept triples, each weighted by its row's weight, as
//! [`matrix`](crate::kernels::weighted::matrix) is for even bins; but the triples of every
//! class together (50M at (50k, 1000): 1.6 GB, with their sort keys and cells another 1 GB)
//! were most of a weighted ACE's 7 s, a quarter of it the kernel zeroing their fresh pages,
//! and the primitive sorts them again for every bin count.
//! Class-conditional: a block of classes is read from the matrix into each class's list of
//! kept entries (buffers reused by the thread), and each class is then finished alone.
//! Pooled: every kept entry goes to one list (ids `row << 32 | column`, ascending as the
//! triples are), sorted over the threads. Each group then:
//! - has its entries of positive weight sorted by (score, id), the primitive's order
//!   ([`sort_keyed_here`]), and its edges at each bin count from their weights in that order
//!   ([`sorted_edge_ranks_many`], the primitive's rule);
//! - is binned by those edges as [`bin_by_edges`](crate::kernels::core::edges::bin_by_edges)
//!   bins it (in score order a bin is a run; one walk over the entries serves every bin
//!   count) and summed with the units of [`sums`](crate::kernels::weighted::sums), exact in
//!   `i128`, at the primitive's scales (found as [`matrix`](crate::kernels::weighted::matrix)
//!   finds them); entries of weight 0 add nothing and are never an edge.

use rayon::prelude::*;

use super::grouped::{sort_keyed, sort_keyed_here, sorted_edge_ranks_many, PARALLEL_ROWS};
use super::matrix::{at_found_scales, checked, Part};
use crate::kernels::core::chunks::{row_chunks, PerThread};
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

/// One group's upper edges and its part of the table (its `nb` cells), at one bin count.
type GroupTable = (Vec<f64>, Part);

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

/// A walk over one group's entries in score order for one bin count: in score order a bin is
/// a run ([`bin_by_edges`](crate::kernels::core::edges::bin_by_edges) of each score, by a walk
/// over the edges).
struct Walk<'a> {
    edges: &'a [f64],
    bin: usize,
    run: [i128; 3],
    part: Part,
}

impl<'a> Walk<'a> {
    fn new(edges: &'a [f64], b: usize) -> Self {
        Walk { edges, bin: 0, run: [0; 3], part: Part::zeros(b) }
    }

    /// The next entry (score `v`, at least the previous one's) adds `add` to its bin.
    #[inline(always)]
    fn step(&mut self, v: f64, add: &[i128; 3]) {
        if self.bin < self.edges.len() && self.edges[self.bin] <= v {
            self.part.cells[self.bin] = self.run;
            self.run = [0; 3];
            while self.bin < self.edges.len() && self.edges[self.bin] <= v {
                self.bin += 1;
            }
        }
        for (a, b) in self.run.iter_mut().zip(add) {
            *a = a.wrapping_add(*b);
        }
    }

    fn finish(mut self) -> Part {
        if let Some(cell) = self.part.cells.get_mut(self.bin) {
            *cell = self.run;
        }
        self.part
    }
}

/// One group's tables at every bin count of `bins`, from its entries of positive weight as
/// sort keys `(order_key(score), id)` (sorted here into the primitive's order, by score then
/// id: ids ascend as the triples do); `locate(id)` is the entry's row, its index in
/// `x.probs` and whether it is the row's true label. Its edges come from the weights in that
/// order ([`sorted_edge_ranks_many`], the primitive's rule), for every bin count in one walk;
/// its entries' units once for all of them. `kept` (entries above the threshold, of any
/// weight) goes with every table.
#[allow(clippy::too_many_arguments)]
fn group_tables<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    rows: &[RowUnits],
    sc: &Scales,
    bins: &[usize],
    keys: &mut [u128],
    locate: impl Fn(u64) -> (usize, usize, bool),
    kept: usize,
    s: &mut Scratch,
) -> Vec<GroupTable> {
    if keys.len() < PARALLEL_ROWS {
        sort_keyed_here(keys, &mut s.sort);
    } else {
        // One group of every entry (pooled): spread over the threads.
        sort_keyed(keys, &mut s.sort);
    }
    s.weights.clear();
    s.weights.extend(keys.iter().map(|&k| w[locate(k as u64).0]));
    let edges: Vec<Vec<f64>> = sorted_edge_ranks_many(&s.weights, bins)
        .into_iter()
        .map(|ranks| ranks.into_iter().map(|p| x.probs[locate(keys[p] as u64).1].to_f64()).collect())
        .collect();
    let mut walks: Vec<Walk> = edges.iter().zip(bins).map(|(e, &b)| Walk::new(e, b)).collect();
    for &key in keys.iter() {
        let v = score_of_key((key >> 64) as u64);
        let (row, _, positive) = locate(key as u64);
        let r = rows[row];
        let add = [r.count, weighted_units(r.ws, sc.score_units(v)), if positive { r.count } else { 0 }];
        for walk in walks.iter_mut() {
            walk.step(v, &add);
        }
    }
    let parts: Vec<Part> = walks.into_iter().map(Walk::finish).collect();
    edges
        .into_iter()
        .zip(parts)
        .map(|(e, mut part)| {
            part.kept = kept;
            (e, part)
        })
        .collect()
}

/// The tables of classes `cols` at every bin count of `bins`, at scales `sc`. Entries of
/// weight 0 add nothing to any sum and are never an edge: only their number counts (for the
/// scales). The block's largest weight and score go with its first class.
#[allow(clippy::too_many_arguments)]
fn class_block<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    rows: &[RowUnits],
    thr: f64,
    bins: &[usize],
    sc: &Scales,
    cols: std::ops::Range<usize>,
    s: &mut Scratch,
) -> Result<Vec<Vec<GroupTable>>, KernelError> {
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
    let mut keys = std::mem::take(&mut s.keys);
    for (j, c) in cols.enumerate() {
        // A class's ids are its rows.
        let locate = |id: u64| (id as usize, id as usize * x.k + c, rows[id as usize].label == c as u64);
        out.push(group_tables(x, w, rows, sc, bins, &mut keys[j], locate, kept[j], s));
    }
    s.keys = keys;
    if let Some(first) = out.first_mut() {
        for (_, part) in first.iter_mut() {
            (part.max_weight, part.max_score) = (max_w, max_s);
        }
    }
    Ok(out)
}

/// The pooled group's tables (one group of every kept entry) at every bin count of `bins`, at
/// scales `sc`: its entries of positive weight with ids `row << 32 | column` (ascending as the
/// triples do; no division to find the row), placed by chunks of rows in parallel (a counting
/// read, then each chunk fills its own stretch: the keys are allocated once) and sorted once
/// for every bin count.
fn pooled<T: Score>(x: &Inputs<T>, w: &[f64], rows: &[RowUnits], thr: f64, bins: &[usize], sc: &Scales) -> Result<Vec<GroupTable>, KernelError> {
    if x.n > u32::MAX as usize || x.k > u32::MAX as usize {
        return Err(KernelError::Shape(format!(
            "a ({}, {}) matrix exceeds the 2^32 rows or columns of the weighted pooled adaptive \
             kernel; compute it by chunks with calibkit.Accumulator or calibkit.dask",
            x.n, x.k
        )));
    }
    let chunks = row_chunks(x.n, x.k);
    let serial = chunks.len() == 1; // on the calling thread (its GIL may be held, see `rust/py`)
    // Per chunk: the entries of positive weight it places, and its facts (kept entries,
    // largest kept |score|, largest weight of a row with a kept entry).
    let count = |r: &std::ops::Range<usize>| {
        let (mut placed, mut facts) = (0usize, Part::zeros(0));
        for i in r.clone() {
            let mut n = 0usize;
            for v in x.row(i) {
                let v = v.to_f64();
                if v > thr {
                    n += 1;
                    facts.max_score = if v.abs() > facts.max_score { v.abs() } else { facts.max_score };
                }
            }
            facts.kept += n;
            if w[i] > 0.0 {
                placed += n;
            }
            if n > 0 {
                facts.max_weight = if w[i] > facts.max_weight { w[i] } else { facts.max_weight };
            }
        }
        (placed, facts)
    };
    let counts: Vec<(usize, Part)> = if serial { chunks.iter().map(count).collect() } else { chunks.par_iter().map(count).collect() };
    let mut facts = Part::zeros(0);
    for (_, f) in &counts {
        facts.add_facts(f);
    }
    let mut keys = vec![0u128; counts.iter().map(|c| c.0).sum()];
    let mut stretches: Vec<(std::ops::Range<usize>, &mut [u128])> = Vec::with_capacity(chunks.len());
    let mut rest = &mut keys[..];
    for (r, c) in chunks.iter().zip(&counts) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(c.0);
        stretches.push((r.clone(), head));
        rest = tail;
    }
    let fill = |(r, out): &mut (std::ops::Range<usize>, &mut [u128])| -> Result<(), KernelError> {
        let mut p = 0usize;
        for i in r.clone() {
            if w[i] > 0.0 {
                for (j, v) in x.row(i).iter().enumerate() {
                    let v = v.to_f64();
                    if v > thr {
                        // More kept entries than counted: another thread changed the input.
                        *out.get_mut(p).ok_or(KernelError::InputChanged)? = ((order_key(v) as u128) << 64) | ((i as u128) << 32) | j as u128;
                        p += 1;
                    }
                }
            }
        }
        if p == out.len() { Ok(()) } else { Err(KernelError::InputChanged) }
    };
    if serial {
        stretches.iter_mut().try_for_each(fill)?;
    } else {
        stretches.par_iter_mut().try_for_each(fill)?;
    }
    let locate = |id: u64| {
        let (row, col) = ((id >> 32) as usize, id & 0xffff_ffff);
        (row, row * x.k + col as usize, rows[row].label == col)
    };
    let mut tables = group_tables(x, w, rows, sc, bins, &mut keys, locate, facts.kept, &mut Scratch::default());
    for (_, part) in tables.iter_mut() {
        (part.max_weight, part.max_score) = (facts.max_weight, facts.max_score);
    }
    Ok(tables)
}

/// The adaptive tables (`b` bins per group for each `b` of `bins`) of the all-probabilities
/// grouping (`class_conditional`, threshold `thr`) of `x` with row weights `w`: the weighted
/// primitive's tables of the grouping's kept triples (module doc), each group sorted once for
/// every bin count. Validates as [`super::matrix::even_stats`] does.
pub fn adaptive_stats<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    class_conditional: bool,
    thr: f64,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<BinStats>, KernelError> {
    let g = Grouping { binning: Binning::Adaptive, max_prob: false, class_conditional, threshold: thr };
    checked(x, w, &[g], bins, check)?;
    if bins.is_empty() {
        return Ok(Vec::new());
    }
    let groups = if class_conditional { x.k } else { 1 };
    let width = block_width(x, thr);
    let blocks: Vec<std::ops::Range<usize>> = (0..x.k).step_by(width).map(|c| c..(c + width).min(x.k)).collect();
    let scratch = PerThread::<Scratch>::new();
    // Per group, its tables at each bin count.
    let mut tables: Vec<Vec<GroupTable>> = Vec::new();
    let (sc, _) = at_found_scales(x, w, |sc| {
        let rows: Vec<RowUnits> = (0..x.n)
            .map(|i| {
                let ws = w[i] * sc.weight;
                RowUnits { ws, label: x.labels[i] as u64, count: count_units(ws) }
            })
            .collect();
        tables = if !class_conditional {
            vec![pooled(x, w, &rows, thr, bins, sc)?]
        } else if blocks.len() == 1 {
            // On the calling thread (a short input's GIL may be held, see `rust/py`; a class
            // reaches the pool's sort only from PARALLEL_ROWS kept entries, long after the
            // glue has let the GIL go).
            class_block(x, w, &rows, thr, bins, sc, blocks[0].clone(), &mut Scratch::default())?
        } else {
            // (`class_block` sorts a class on its thread, or over the pool from PARALLEL_ROWS
            // kept entries up, a nested rayon job: the order is the same either way.)
            let per_block: Vec<Vec<Vec<GroupTable>>> = blocks
                .par_iter()
                .map(|cols| scratch.with(|s| class_block(x, w, &rows, thr, bins, sc, cols.clone(), s)))
                .collect::<Result<_, _>>()?;
            per_block.into_iter().flatten().collect()
        };
        // What the scales depend on, over every group (the same at every bin count).
        let mut facts = Part::zeros(0);
        for t in &tables {
            facts.add_facts(&t[0].1);
        }
        Ok(facts)
    })?;
    Ok(bins
        .iter()
        .enumerate()
        .map(|(bi, &b)| {
            let mut st = sc.table(groups, b);
            for (gi, t) in tables.iter().enumerate() {
                for (j, a) in t[bi].1.cells.iter().enumerate() {
                    sc.write(&mut st, gi * b + j, a[0], a[1], a[2]);
                }
            }
            st.edges = tables.iter().flat_map(|t| adaptive_boundaries(&t[bi].0, b, 0.0)).collect();
            st
        })
        .collect())
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
                for cc in [true, false] {
                    for thr in [0.0, 0.01, 0.5] {
                        // every bin count from one sort of each group
                        let bins = [1usize, 2, 10, 15];
                        let got = adaptive_stats(&x, &w, cc, thr, &bins, &Checks::ALL).unwrap();
                        assert_eq!(got.len(), bins.len());
                        for (st, &b) in got.iter().zip(&bins) {
                            let what = format!("n {n} k {k} {name} cc {cc} thr {thr} b {b}");
                            same(st, &by_triples(&x, &w, Binning::Adaptive, cc, thr, b), &what);
                        }
                    }
                }
            }
        }
    }

    /// A pooled group large enough for the parallel sort and several chunks of rows gives the
    /// primitive's tables (which sort it the same way).
    #[test]
    fn a_large_pooled_group_is_the_primitive_table() {
        let (n, k) = (30_000usize, 12usize);
        let (p, y) = data(n, k, 21);
        let x = Inputs::new(&p, &y, k).unwrap();
        let w: Vec<f64> = (0..n).map(|i| (i % 5) as f64 * 0.5).collect();
        let got = adaptive_stats(&x, &w, false, 0.0, &[7, 30], &Checks::ALL).unwrap();
        for (st, b) in got.iter().zip([7usize, 30]) {
            same(st, &by_triples(&x, &w, Binning::Adaptive, false, 0.0, b), &format!("pooled b {b}"));
        }
    }
}
