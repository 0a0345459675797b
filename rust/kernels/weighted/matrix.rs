//! Weighted even tables of a probability matrix, in one pass over it: the all-probabilities
//! groupings (`max_prob = false`: SCE and its relatives) with per-row weights.
//!
//! The table is, bit for bit, the weighted primitive's
//! ([`grouped_bin_stats`](crate::kernels::weighted::grouped::grouped_bin_stats), even bins) on
//! the metric's kept `(group, score, outcome)` triples
//! ([`score_rows`](crate::kernels::gce::rows::score_rows)) with each triple
//! weighted by its row's weight, without forming the triples (at (50k, 100) float64 their
//! forming and weighting took 90 of the 225 ms of a weighted SCE, and binning 5M of them
//! another 120):
//! - the same cells: an entry kept (`score > threshold`) goes to its group (its column when
//!   class-conditional, else 0) and to the even bin [`EvenEdges::bin`] of its score;
//! - the same units per entry ([`sums`](crate::kernels::weighted::sums): count
//!   `round(w s 2^50)`, score `w s units(x)`, and the count's units as outcome at the true
//!   label), summed exactly in `i128`, so the order of the entries does not matter;
//! - the same scales ([`Scales`]): they depend on the largest weight of a row with a kept
//!   entry, on the number of kept entries and on the largest kept score, which the pass finds
//!   as it sums. It sums with the scales those would give if every entry were kept (the same
//!   whenever the largest weight is at least 1/2 and far below 2^74 over the entries); when
//!   the found ones differ, it sums again with them.
//!
//! Adaptive bins need each group's weighted order: [`super::matrix_adaptive`].

use rayon::prelude::*;

use crate::kernels::core::chunks::{row_chunks, PerThread};
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::spec::{Binning, Grouping};
use crate::kernels::core::units;
use crate::kernels::core::validate::{self, Checks};
use crate::kernels::weighted::sums::{count_units, weighted_units, weighted_units_small, Scales};
use crate::kernels::{BinStats, Inputs, KernelError, Score};

/// One chunk's (or the whole pass's) sums: per cell (count, score, outcome) units, and what
/// the scales depend on.
#[derive(Clone)]
pub(super) struct Part {
    pub(super) cells: Vec<[i128; 3]>,
    /// Kept entries.
    pub(super) kept: usize,
    /// Largest weight of a row with a kept entry, and largest kept |score|.
    pub(super) max_weight: f64,
    pub(super) max_score: f64,
}

impl Part {
    pub(super) fn zeros(ncells: usize) -> Self {
        Part { cells: vec![[0; 3]; ncells], kept: 0, max_weight: 0.0, max_score: 0.0 }
    }

    /// Adds another part of the same cells: sums and facts.
    pub(super) fn add(&mut self, o: &Part) {
        add_cells(&mut self.cells, &o.cells);
        self.add_facts(o);
    }

    /// Adds another part's kept entries and largest weight and score (not its cells: a part
    /// of other cells is appended by the caller).
    pub(super) fn add_facts(&mut self, o: &Part) {
        self.kept += o.kept;
        self.max_weight = if o.max_weight > self.max_weight { o.max_weight } else { self.max_weight };
        self.max_score = if o.max_score > self.max_score { o.max_score } else { self.max_score };
    }

    /// The scales of the weighted primitive for these kept entries (its `scales`: outcomes
    /// are 0 and 1, whose scale is 1).
    fn scales(&self) -> Scales {
        Scales {
            weight: Scales::of_weights(self.max_weight, self.kept),
            score: Scales::of_values(self.max_score),
            outcome: 1.0,
        }
    }
}

/// Adds the unit sums of cells `src` to those of `dst`, cell by cell (wrapping, as every sum
/// of units is taken).
fn add_cells(dst: &mut [[i128; 3]], src: &[[i128; 3]]) {
    for (a, b) in dst.iter_mut().zip(src) {
        for (x, y) in a.iter_mut().zip(b) {
            *x = x.wrapping_add(*y);
        }
    }
}

/// Entries of a row handled at a time: their cells and score units first, then the table.
const BLOCK: usize = 256;

/// What one block of a row keeps: kept entries, largest kept |score|, and whether an entry
/// needs [`weighted_units`]'s slow case.
type BlockFacts = (usize, f64, bool);

/// The per-entry rule of one pass: an entry of column `c` kept (`score > thr`) goes to cell
/// `bin(score) * stride + c * col_if_cc` (bin-major: `stride` is K and `col_if_cc` 1 when
/// class-conditional, 1 and 0 when pooled), one not kept to cell `drop`. Bin-major because most
/// entries of a many-class row lie in one bin: a row then sweeps one stretch of adjacent cells
/// rather than touching a cell `nb` cells apart per entry (see [`Pass::sum_all`]).
struct EntryRule {
    e: EvenEdges,
    stride: usize,
    col_if_cc: usize,
    thr: f64,
    score_scale: f64,
    drop: usize,
}

crate::kernels::core::simd::multiversion! {
    /// The cells and weighted score units of a block `xs` of one row (columns from `col`,
    /// scaled weight `ws`): a loop of register operations only (it vectorises), as
    /// [`weighted_units_small`] of [`units::units_f64`]; a product of 2^51 or more is
    /// flagged, and the caller computes that block one entry at a time.
    fn block_units<T: Score>(xs: &[T], col: usize, ws: f64, r: &EntryRule, cell: &mut [u32; BLOCK], su: &mut [i64; BLOCK]) -> BlockFacts {
        let (mut kept, mut max_s, mut slow) = (0usize, 0.0f64, false);
        // Two loops: the units (float and bit operations: they vectorise), then the cells.
        for (u, v) in su.iter_mut().zip(xs) {
            let (units, small) = weighted_units_small(ws, units::units_f64(v.to_f64() * r.score_scale));
            *u = units;
            slow |= !small;
        }
        for (j, (c, v)) in cell.iter_mut().zip(xs).enumerate() {
            let s = v.to_f64();
            let keep = s > r.thr;
            *c = if keep { (r.e.bin(s) * r.stride + (col + j) * r.col_if_cc) as u32 } else { r.drop as u32 };
            kept += keep as usize;
            let m = if keep { s.abs() } else { 0.0 };
            max_s = if m > max_s { m } else { max_s };
        }
        (kept, max_s, slow)
    }
}

/// One weighted pass's input and grouping: row weights `w`, the grouping's threshold and
/// whether it is class-conditional, and the even bins.
struct Pass<'a, T: Score> {
    x: &'a Inputs<'a, T>,
    w: &'a [f64],
    class_conditional: bool,
    thr: f64,
    e: EvenEdges,
}

impl<T: Score> Pass<'_, T> {
    fn ncells(&self) -> usize {
        if self.class_conditional { self.x.k * self.e.num_bins() } else { self.e.num_bins() }
    }

    /// Adds the (count, score, outcome) units of rows `rows` at scales `sc` to `part` (a
    /// table with the drop cell).
    fn sum_rows(&self, sc: &Scales, rows: std::ops::Range<usize>, part: &mut Part) -> Result<(), KernelError> {
        let (x, w, thr) = (self.x, self.w, self.thr);
        let ncells = part.cells.len() - 1;
        // Entries not kept add to the last cell, which is dropped: no branch on the threshold.
        let (stride, col_if_cc) = if self.class_conditional { (x.k, 1) } else { (1, 0) };
        let rule = EntryRule { e: self.e.clone(), stride, col_if_cc, thr, score_scale: sc.score, drop: ncells };
        let (cells, mut kept, mut max_w, mut max_s) = (&mut part.cells, part.kept, part.max_weight, part.max_score);
        let (mut cell, mut su) = ([0u32; BLOCK], [0i64; BLOCK]);
        for i in rows {
            let ws = w[i] * sc.weight;
            let cu = count_units(ws);
            let row = x.row(i);
            let before = kept;
            for (b, xs) in row.chunks(BLOCK).enumerate() {
                let (kb, mb, slow) = block_units(xs, b * BLOCK, ws, &rule, &mut cell, &mut su);
                (kept, max_s) = (kept + kb, if mb > max_s { mb } else { max_s });
                if slow {
                    // Products of 2^51 or more (large weights): the whole block by the rule.
                    for (&c, v) in cell.iter().zip(xs) {
                        let a = &mut cells[c as usize];
                        a[0] = a[0].wrapping_add(cu);
                        a[1] = a[1].wrapping_add(weighted_units(ws, sc.score_units(v.to_f64())));
                    }
                    continue;
                }
                for (&c, &u) in cell.iter().zip(&su).take(xs.len()) {
                    let a = &mut cells[c as usize];
                    a[0] = a[0].wrapping_add(cu);
                    a[1] = a[1].wrapping_add(u as i128);
                }
            }
            if kept > before {
                max_w = if w[i] > max_w { w[i] } else { max_w };
            }
            // The outcome: the count's units at the true label's cell, if that entry is kept.
            let label = x.labels[i] as u64 as usize;
            let s = row.get(label).ok_or(KernelError::InputChanged)?.to_f64();
            if s > thr {
                let a = &mut cells[self.e.bin(s) * stride + label * col_if_cc];
                a[2] = a[2].wrapping_add(cu);
            }
        }
        (part.kept, part.max_weight, part.max_score) = (kept, max_w, max_s);
        Ok(())
    }

    /// The whole pass at scales `sc`: its cells group-major (a group's bins together), as the
    /// tables are. The rows are summed into bin-major cells ([`EntryRule`]): at (50k, 1000)
    /// float64 a weighted SCE took 280 ms with the table group-major, where a row's 1000
    /// entries, most in bin 0, touched cells 16 bins (768 bytes) apart.
    fn sum_all(&self, sc: &Scales) -> Result<Part, KernelError> {
        let mut part = self.sum_bin_major(sc)?;
        if self.class_conditional {
            let (k, nb) = (self.x.k, self.e.num_bins());
            let mut cells = vec![[0i128; 3]; k * nb];
            for (b, row) in part.cells.chunks(k).enumerate() {
                for (c, a) in row.iter().enumerate() {
                    cells[c * nb + b] = *a;
                }
            }
            part.cells = cells;
        }
        Ok(part)
    }

    /// The whole pass at scales `sc`, its cells bin-major.
    fn sum_bin_major(&self, sc: &Scales) -> Result<Part, KernelError> {
        let ncells = self.ncells();
        // One table per thread, added to over its chunks and then to the others': the sums
        // are integers, so the table does not depend on which thread summed which chunk (a
        // table per chunk cost a table's zeroing, page faults and adding per chunk, most of
        // the call at K = 1000).
        let chunks = row_chunks(self.x.n, self.x.k);
        let mut total = Part::zeros(ncells + 1);
        if chunks.len() == 1 {
            // On the calling thread (a short input: its GIL may be held, see `rust/py`).
            self.sum_rows(sc, 0..self.x.n, &mut total)?;
            total.cells.truncate(ncells);
            return Ok(total);
        }
        let tables = PerThread::<Option<Part>>::new();
        chunks.par_iter().try_for_each(|r| {
            tables.with(|t| self.sum_rows(sc, r.clone(), t.get_or_insert_with(|| Part::zeros(ncells + 1))))
        })?;
        for part in tables.into_values().flatten() {
            total.add(&part);
        }
        total.cells.truncate(ncells);
        Ok(total)
    }
}

/// The checks of every weighted matrix pass, before it: each grouping's bin counts and table
/// sizes, one finite weight `>= 0` per row, and the input as `check` asks (once, whatever the
/// number of groupings).
pub(super) fn checked<T: Score>(x: &Inputs<T>, w: &[f64], groupings: &[Grouping], bins: &[usize], check: &Checks) -> Result<(), KernelError> {
    for g in groupings {
        for &b in bins {
            g.check(b)?;
            g.check_table(x.k, b)?;
        }
    }
    if w.len() != x.n {
        return Err(KernelError::Shape(format!(
            "sample_weight has {} entries but probs has {} rows; pass one weight per row",
            w.len(),
            x.n
        )));
    }
    validate::weights(w, "sample_weight")?;
    validate::scan(x, check)
}

/// The sums of `pass` at the scales of the entries it keeps (the weighted primitive's): first
/// at those of every entry kept, with scores within (-2, 2) (validated ones are), and again
/// at the found ones when they differ.
pub(super) fn at_found_scales<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    mut pass: impl FnMut(&Scales) -> Result<Part, KernelError>,
) -> Result<(Scales, Part), KernelError> {
    let max_w = w.iter().fold(0.0f64, |m, &v| if v > m { v } else { m });
    let guess = Scales { weight: Scales::of_weights(max_w, x.n * x.k), score: 1.0, outcome: 1.0 };
    let part = pass(&guess)?;
    let sc = part.scales();
    if sc == guess {
        return Ok((sc, part));
    }
    let part = pass(&sc)?;
    // The kept entries are the same (unless another thread changed the input).
    if part.scales() != sc {
        return Err(KernelError::InputChanged);
    }
    Ok((sc, part))
}

/// The even table of one pass's sums at scales `sc` (`groups` groups of `e`'s bins).
fn even_table(sc: &Scales, part: &Part, groups: usize, e: &EvenEdges) -> BinStats {
    let mut st = sc.table(groups, e.num_bins());
    for (i, a) in part.cells.iter().enumerate() {
        sc.write(&mut st, i, a[0], a[1], a[2]);
    }
    let one = e.boundaries();
    st.edges = (0..groups).flat_map(|_| one.iter().copied()).collect();
    st
}

/// The even tables of the all-probabilities grouping at threshold `thr` of `x` with row
/// weights `w`, for each `class_conditional` of `groupings` (outer) and each bin count of
/// `bins` (inner): the weighted primitive's tables of the grouping's kept triples (module
/// doc), one pass over the matrix per grouping and bin count, except that when both
/// groupings are asked for, the pooled table is the class-conditional one's cells added over
/// the classes (the same entries in the same bins, at the same scales: they depend on the
/// kept entries alone; the unit sums are exact, so this is the pooled pass's table bit for
/// bit). Validates the input as `check` asks, and `w` (one finite weight `>= 0` per row),
/// once.
pub fn even_stats<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    groupings: &[bool],
    thr: f64,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<Vec<BinStats>>, KernelError> {
    let gs: Vec<Grouping> = groupings
        .iter()
        .map(|&class_conditional| Grouping { binning: Binning::Even, max_prob: false, class_conditional, threshold: thr })
        .collect();
    checked(x, w, &gs, bins, check)?;
    let both = groupings.contains(&true) && groupings.contains(&false);
    // Per bin count: the class-conditional pass's scales and sums, when it is asked for.
    let mut by_class: Vec<Option<(Scales, Part)>> = vec![None; bins.len()];
    let mut out = Vec::with_capacity(groupings.len());
    for &class_conditional in groupings {
        let groups = if class_conditional { x.k } else { 1 };
        let mut tables = Vec::with_capacity(bins.len());
        for (bi, &b) in bins.iter().enumerate() {
            let e = EvenEdges::new(b);
            let nb = e.num_bins();
            let pass = |cc: bool| at_found_scales(x, w, |sc| Pass { x, w, class_conditional: cc, thr, e: e.clone() }.sum_all(sc));
            let st = if class_conditional || both {
                if by_class[bi].is_none() {
                    by_class[bi] = Some(pass(true)?);
                }
                let (sc, part) = by_class[bi].as_ref().expect("computed above");
                if class_conditional {
                    even_table(sc, part, groups, &e)
                } else {
                    // The pooled cells: the class-conditional ones added over the classes.
                    let mut pooled = Part::zeros(nb);
                    for class in part.cells.chunks(nb) {
                        add_cells(&mut pooled.cells, class);
                    }
                    even_table(sc, &pooled, 1, &e)
                }
            } else {
                let (sc, part) = pass(false)?;
                even_table(&sc, &part, 1, &e)
            };
            tables.push(st);
        }
        out.push(tables);
    }
    Ok(out)
}

/// The weighted tables of the all-probabilities grouping at threshold `thr` from the matrix,
/// for each `class_conditional` of `groupings` (outer) and each bin count of `bins` (inner):
/// even bins ([`even_stats`]: pooled tables from the class-conditional sums when both are
/// asked for) or adaptive bins ([`super::matrix_adaptive::adaptive_stats`], each group sorted
/// once for every bin count). The input is validated once.
pub fn stats<T: Score>(
    x: &Inputs<T>,
    w: &[f64],
    binning: Binning,
    groupings: &[bool],
    thr: f64,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<Vec<BinStats>>, KernelError> {
    match binning {
        Binning::Even => even_stats(x, w, groupings, thr, bins, check),
        Binning::Adaptive => {
            let gs: Vec<Grouping> = groupings
                .iter()
                .map(|&class_conditional| Grouping { binning, max_prob: false, class_conditional, threshold: thr })
                .collect();
            checked(x, w, &gs, bins, check)?;
            groupings
                .iter()
                .map(|&cc| super::matrix_adaptive::adaptive_stats(x, w, cc, thr, bins, &Checks::NONE))
                .collect()
        }
    }
}

/// What every table of this module and [`super::matrix_adaptive`] equals bit for bit, the
/// slow way: the weighted primitive on the grouping's kept triples
/// ([`score_rows`](crate::kernels::gce::rows::score_rows)), each weighted by its row's weight.
/// The oracle of the tests and of the `weighted_matrix` fuzz target; not exported to Python.
pub fn triples_table<T: Score>(x: &Inputs<T>, w: &[f64], g: &Grouping, num_bins: usize) -> Result<BinStats, KernelError> {
    use crate::kernels::weighted::grouped::{grouped_bin_stats, GroupedRows};
    let r = crate::kernels::gce::rows::score_rows(x, g, &Checks::ALL)?;
    let tw: Vec<f64> = r.row.iter().map(|&i| w[i as usize]).collect();
    let rows = GroupedRows {
        groups: Some(&r.group),
        scores: &r.score,
        outcomes: &r.outcome,
        weights: Some(&tw),
        num_groups: if g.class_conditional { x.k } else { 1 },
    };
    grouped_bin_stats(&rows, g.binning, num_bins)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// [`triples_table`] of a valid input.
    pub(in crate::kernels::weighted) fn by_triples<T: Score>(x: &Inputs<T>, w: &[f64], binning: Binning, cc: bool, thr: f64, b: usize) -> BinStats {
        let g = Grouping { binning, max_prob: false, class_conditional: cc, threshold: thr };
        triples_table(x, w, &g, b).unwrap()
    }

    pub(in crate::kernels::weighted) fn same(a: &BinStats, b: &BinStats, what: &str) {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.count), bits(&b.count), "counts, {what}");
        assert_eq!(bits(&a.sum_score), bits(&b.sum_score), "score sums, {what}");
        assert_eq!(bits(&a.sum_outcome), bits(&b.sum_outcome), "outcome sums, {what}");
        assert_eq!(a.units, b.units, "units, {what}");
        assert_eq!(bits(&a.edges), bits(&b.edges), "edges, {what}");
        assert_eq!((a.groups, a.nb), (b.groups, b.nb), "shape, {what}");
    }

    /// Softmax-like rows (some exact zeros and ones), labels, and weights of every kind the
    /// scales treat apart.
    fn data(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
        let mut draw = crate::kernels::tests::xorshift(seed);
        let mut p = vec![0.0f64; n * k];
        let mut y = vec![0i64; n];
        for i in 0..n {
            let raw: Vec<f64> = (0..k).map(|_| if draw() < 0.1 { 0.0 } else { draw().powi(6) }).collect();
            let t: f64 = raw.iter().sum();
            for (j, (v, r)) in p[i * k..(i + 1) * k].iter_mut().zip(&raw).enumerate() {
                *v = if t > 0.0 { r / t } else if j == 0 { 1.0 } else { 0.0 };
            }
            y[i] = ((draw() * k as f64) as usize).min(k - 1) as i64;
        }
        (p, y)
    }

    /// Weights of every kind the edges and scales treat apart.
    pub(in crate::kernels::weighted) fn weight_kinds(n: usize, seed: u64) -> Vec<(&'static str, Vec<f64>)> {
        let mut draw = crate::kernels::tests::xorshift(seed);
        let mut v = vec![
            ("ones", vec![1.0; n]),
            ("whole, with zeros", (0..n).map(|i| if i == 0 { 2.0 } else { (draw() * 5.0).floor() }).collect()),
            ("fractional", (0..n).map(|_| 0.01 + 2.0 * draw()).collect()),
            ("small (lifted)", (0..n).map(|_| 1e-3 * draw()).collect()),
            ("huge (lowered)", (0..n).map(|_| 1e21 * (0.5 + draw())).collect()),
            ("one positive", (0..n).map(|i| if i == n / 2 { 0.7 } else { 0.0 }).collect()),
        ];
        // The largest weight on row 0, which keeps nothing above a high threshold (callers
        // make it so).
        let mut w = vec![0.25; n];
        w[0] = 0.75;
        v.push(("largest weight on a dropped row", w));
        v
    }

    #[test]
    fn tables_are_the_primitive_tables_of_the_triples() {
        for (n, k, seed) in [(300usize, 7usize, 1u64), (2500, 40, 2), (40, 1, 3)] {
            let (mut p, y) = data(n, k, seed);
            if k > 1 {
                // row 0 keeps nothing above 0.5 (its largest weight is then not the kept one)
                p[..k].fill(1.0 / k as f64);
            }
            let x = Inputs::new(&p, &y, k).unwrap();
            for (name, w) in weight_kinds(n, seed + 10) {
                // each grouping alone (its own pass) and both at once (pooled from the
                // class-conditional sums), several bin counts in one call
                for groupings in [&[false][..], &[true], &[true, false], &[false, true]] {
                    for thr in [0.0, 0.01, 0.5] {
                        let bins = [1usize, 10, 15];
                        let got = even_stats(&x, &w, groupings, thr, &bins, &Checks::ALL).unwrap();
                        assert_eq!(got.len(), groupings.len());
                        for (tables, &cc) in got.iter().zip(groupings) {
                            assert_eq!(tables.len(), bins.len());
                            for (st, &b) in tables.iter().zip(&bins) {
                                let what = format!("n {n} k {k} {name} {groupings:?} cc {cc} thr {thr} b {b}");
                                same(st, &by_triples(&x, &w, Binning::Even, cc, thr, b), &what);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every pass (even or adaptive bins, by class or pooled): float32 input and one thread
    /// give the primitive's tables too.
    #[test]
    fn float32_and_any_thread_count_give_the_same_tables() {
        let (n, k) = (3000usize, 30usize);
        let (p, y) = data(n, k, 7);
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        let x = Inputs::new(&p32, &y, k).unwrap();
        let w: Vec<f64> = (0..n).map(|i| 0.3 + (i % 7) as f64 * 0.37).collect();
        for (binning, cc) in [(Binning::Even, false), (Binning::Even, true), (Binning::Adaptive, true), (Binning::Adaptive, false)] {
            let want = by_triples(&x, &w, binning, cc, 0.0, 15);
            same(&stats(&x, &w, binning, &[cc], 0.0, &[15], &Checks::ALL).unwrap()[0][0], &want, "f32");
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let one = pool.install(|| stats(&x, &w, binning, &[!cc, cc], 0.0, &[15], &Checks::ALL).unwrap());
            same(&one[1][0], &want, "one thread");
        }
    }

    /// The vectorised block loop (AVX2 where the CPU has it) and the portable one give the
    /// same tables, the primitive's, with rows longer than a block (K > 256).
    #[test]
    fn every_instruction_set_gives_the_same_tables() {
        use crate::kernels::core::simd::{with_level, Level};
        let (n, k) = (40usize, 300usize);
        let (p, y) = data(n, k, 11);
        let x = Inputs::new(&p, &y, k).unwrap();
        for (name, w) in weight_kinds(n, 12) {
            for cc in [false, true] {
                let want = by_triples(&x, &w, Binning::Even, cc, 0.001, 10);
                for l in [Level::Portable, Level::Avx2] {
                    let got = with_level(l, || even_stats(&x, &w, &[cc], 0.001, &[10], &Checks::ALL).unwrap());
                    same(&got[0][0], &want, &format!("{name} cc {cc} level {l:?}"));
                }
            }
        }
    }

    #[test]
    fn bad_input_is_an_error_naming_it() {
        let p = [0.6f64, 0.4, 0.3, 0.7];
        let y = [0i64, 1];
        let x = Inputs::new(&p, &y, 2).unwrap();
        let msg = |r: Result<Vec<Vec<BinStats>>, KernelError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        for (binning, cc) in [(Binning::Even, false), (Binning::Even, true), (Binning::Adaptive, true), (Binning::Adaptive, false)] {
            let run = |x: &Inputs<f64>, w: &[f64], b: usize| stats(x, w, binning, &[cc, !cc], 0.0, &[10, b], &Checks::ALL);
            assert!(msg(run(&x, &[1.0], 10)).contains("one weight per row"));
            assert!(msg(run(&x, &[1.0, -1.0], 10)).contains("sample_weight"));
            assert!(msg(run(&x, &[1.0, f64::NAN], 10)).contains("sample_weight"));
            assert!(msg(run(&x, &[1.0, 1.0], 0)).contains("num_bins"));
            let bad = [0.6f64, 0.5, 0.3, 0.7];
            assert!(msg(run(&Inputs::new(&bad, &y, 2).unwrap(), &[1.0, 1.0], 10)).contains("sum"));
            let yb = [0i64, 2];
            assert!(msg(run(&Inputs::new(&p, &yb, 2).unwrap(), &[1.0, 1.0], 10)).contains("label"));
            assert!(msg(stats(&x, &[1.0, 1.0], binning, &[cc], 1.5, &[10], &Checks::ALL)).contains("threshold"));
            assert!(stats(&x, &[1.0, 1.0], binning, &[cc], 0.0, &[], &Checks::ALL).unwrap()[0].is_empty());
            assert!(stats(&x, &[1.0, 1.0], binning, &[], 0.0, &[10], &Checks::ALL).unwrap().is_empty());
            // with no grouping asked for, the weights and the input are still checked
            assert!(msg(stats(&x, &[1.0], binning, &[], 0.0, &[10], &Checks::ALL)).contains("one weight per row"));
            assert!(msg(stats(&Inputs::new(&bad, &y, 2).unwrap(), &[1.0, 1.0], binning, &[], 0.0, &[10], &Checks::ALL)).contains("sum"));
        }
    }
}
