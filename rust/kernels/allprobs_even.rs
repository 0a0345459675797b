//! All-probabilities metrics with even bins (SCE and its relatives): every entry of the matrix
//! goes into a (group, bin) cell. Per entry only the count and the score sum are updated,
//! without data-dependent branches; the outcome is 1 only at the true label, so it is added
//! once per row. Rows are validated in the same read (class-conditional with AVX2: one read of
//! each row does everything, `x86::accumulate_rows`).

use crate::kernels::chunks::{map_fold, row_chunks_min};
use crate::kernels::edges::EvenEdges;
use crate::kernels::simd;
use crate::kernels::validate::{failed_row_error, labels as check_labels, row_sum_and_bad, row_ok, Checks};
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};


/// Per-chunk partial table. Count and score sum of a cell share a cache line, and cells are
/// laid out bin-major (`bin * groups + group`): in a row, most classes' scores fall in the same
/// few bins, so consecutive classes touch consecutive cells and the hot part of the table
/// stays in L1 even for 1000 classes. Outcomes are rare (one per row) and kept group-major.
///
/// Bin 0 gets a fast lane: in a many-class softmax almost every score is below the first edge,
/// so those scores are counted in dense per-class (or, pooled, per-lane) arrays by a loop that
/// compiles to SIMD, and only the few larger scores take the scattered path.
struct Part {
    groups: usize,
    nb: usize,
    cells: Vec<[f64; 2]>,
    outcome: Vec<f64>,
    low_cnt: Vec<f64>,
    low_sum: Vec<f64>,
}

/// Lanes of the pooled bin-0 fast lane.
const LANES: usize = 8;

impl Part {
    fn zeros(groups: usize, nb: usize, class_conditional: bool) -> Self {
        let low = if class_conditional { groups } else { LANES };
        Part {
            groups,
            nb,
            cells: vec![[0.0; 2]; groups * nb],
            outcome: vec![0.0; groups * nb],
            low_cnt: vec![0.0; low],
            low_sum: vec![0.0; low],
        }
    }

    fn add(&mut self, o: &Part) {
        for (a, b) in self.cells.iter_mut().zip(&o.cells) {
            a[0] += b[0];
            a[1] += b[1];
        }
        for (a, b) in self.outcome.iter_mut().zip(&o.outcome) {
            *a += b;
        }
        for (a, b) in self.low_cnt.iter_mut().zip(&o.low_cnt) {
            *a += b;
        }
        for (a, b) in self.low_sum.iter_mut().zip(&o.low_sum) {
            *a += b;
        }
    }

    fn into_stats(mut self, bounds: &[f64]) -> BinStats {
        // Bin 0 holds exactly the fast lane's scores (the scattered path never sees them).
        if self.low_cnt.len() == self.groups {
            for g in 0..self.groups {
                self.cells[g] = [self.low_cnt[g], self.low_sum[g]];
            }
        } else {
            self.cells[0] = [self.low_cnt.iter().sum(), self.low_sum.iter().sum()];
        }
        let mut st = BinStats::zeros(self.groups, self.nb);
        for g in 0..self.groups {
            for b in 0..self.nb {
                let c = self.cells[b * self.groups + g];
                st.count[g * self.nb + b] = c[0];
                st.sum_score[g * self.nb + b] = c[1];
            }
        }
        st.sum_outcome = self.outcome;
        st.edges = (0..self.groups).flat_map(|_| bounds.iter().copied()).collect();
        st
    }
}

/// Statistics for each bin count in `bins`, from one pass over the data.
pub fn stats<T: Score>(
    x: &Inputs<T>,
    g: &Grouping,
    bins: &[usize],
    check: &Checks,
) -> Result<Vec<BinStats>, KernelError> {
    if check.labels {
        check_labels(x)?;
    }
    let groups = g.groups(x.k);
    let edges: Vec<EvenEdges> = bins.iter().map(|&b| EvenEdges::new(b)).collect();
    let cc = g.class_conditional;
    let empty = || -> Vec<Part> { edges.iter().map(|e| Part::zeros(groups, e.num_bins(), cc)).collect() };
    let mut total = empty();
    // Each chunk's partial tables are folded into the total: keep chunks at least 64 times
    // larger than the tables.
    let cells: usize = edges.iter().map(|e| groups * e.num_bins()).sum();
    let chunks = row_chunks_min(x.n, x.k, 64 * cells);
    map_fold(
        &chunks,
        |rows| {
            let mut part = empty();
            match accumulate(x, rows.clone(), &edges, &mut part, g, check) {
                None => Ok(part),
                // A row failing a check, or a label out of range although labels were
                // checked (then no row fails: another thread wrote to the input).
                Some(i) => Err(failed_row_error(x, rows.start..i + 1, check)),
            }
        },
        |part| {
            for (t, p) in total.iter_mut().zip(&part) {
                t.add(p);
            }
        },
    )?;
    Ok(total.into_iter().zip(&edges).map(|(t, e)| t.into_stats(&e.boundaries())).collect())
}

crate::kernels::simd::multiversion! {
    /// Accumulates `rows` into `part`; the index of the first row failing a check (or whose
    /// label is not a column: labels are checked beforehand, so only if another thread changed
    /// it since), if any.
    fn accumulate_rows<T: Score>(
        x: &Inputs<T>,
        rows: std::ops::Range<usize>,
        edges: &[EvenEdges],
        part: &mut [Part],
        g: &Grouping,
        check: &Checks,
    ) -> Option<usize> {
        for i in rows {
            let row = x.row(i);
            let (sum, bad) = row_sum_and_bad(row);
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, bad, check) || label >= row.len() {
                return Some(i);
            }
            for (e, p) in edges.iter().zip(part.iter_mut()) {
                accumulate_row(row, label, e, p, g);
            }
        }
        None
    }
}

/// [`accumulate_rows`], with AVX2 for one class-conditional table (SCE) when available.
fn accumulate<T: Score>(
    x: &Inputs<T>,
    rows: std::ops::Range<usize>,
    edges: &[EvenEdges],
    part: &mut [Part],
    g: &Grouping,
    check: &Checks,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if g.class_conditional && edges.len() == 1 && simd::avx2() {
        simd::record(simd::Kernel::SceRows, simd::Level::Avx2);
        // SAFETY: the CPU has AVX2, the only feature `x86::accumulate_rows` is compiled for
        // (it asserts the part's shape itself).
        return unsafe { x86::accumulate_rows(x, rows, &edges[0], &mut part[0], g.threshold, check) };
    }
    simd::record(simd::Kernel::SceRows, simd::Level::Portable);
    accumulate_rows(x, rows, edges, part, g, check)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Part;
    use crate::kernels::edges::EvenEdges;
    use crate::kernels::validate::{row_ok, row_sum_and_bad_avx2, Checks, RowVisitor};
    use crate::kernels::{Inputs, Score};

    /// One row's updates of the class-conditional tables.
    struct Sce<'a, T> {
        row: &'a [T],
        e: &'a EvenEdges,
        p: &'a mut Part,
        thr: __m256d,
        first: __m256d,
    }

    impl<T: Score> RowVisitor for Sce<'_, T> {
        #[inline(always)]
        unsafe fn visit(&mut self, j: usize, v0: __m256d, v1: __m256d, n: usize) {
            // SAFETY: AVX2 is available (the caller's contract: `visit` is inlined into AVX2 code). The vector loads and stores of the per-class arrays touch entries c..c+4 only when c + 4 <= k = their length; every other access is bounds-checked indexing (`cells` by a bin clamped to 0..=B, so always inside the table, whatever the value read).
            unsafe {
                let one = _mm256_set1_pd(1.0);
                let k = self.p.low_cnt.len();
                for (h, v) in [v0, v1].into_iter().enumerate() {
                    let c = j + 4 * h;
                    let kept = _mm256_cmp_pd(v, self.thr, _CMP_GT_OQ);
                    // 1.0 where the portable code's m is 1: kept and below the first edge.
                    let low = _mm256_and_pd(_mm256_and_pd(kept, _mm256_cmp_pd(v, self.first, _CMP_LT_OQ)), one);
                    if c + 4 <= k {
                        // SAFETY: c + 4 <= k entries of the per-class arrays.
                        let lc = self.p.low_cnt.as_mut_ptr().add(c);
                        let ls = self.p.low_sum.as_mut_ptr().add(c);
                        // m * s with m in {0, 1}, as the portable code adds.
                        _mm256_storeu_pd(lc, _mm256_add_pd(_mm256_loadu_pd(lc), low));
                        _mm256_storeu_pd(ls, _mm256_add_pd(_mm256_loadu_pd(ls), _mm256_mul_pd(low, v)));
                    } else {
                        let (mut m, mut s) = ([0.0f64; 4], [0.0f64; 4]);
                        _mm256_storeu_pd(m.as_mut_ptr(), low);
                        _mm256_storeu_pd(s.as_mut_ptr(), v);
                        for l in 0..n.saturating_sub(4 * h).min(4) {
                            self.p.low_cnt[c + l] += m[l];
                            self.p.low_sum[c + l] += m[l] * s[l];
                        }
                    }
                }
                let high0 = _mm256_and_pd(_mm256_cmp_pd(v0, self.thr, _CMP_GT_OQ), _mm256_cmp_pd(v0, self.first, _CMP_GE_OQ));
                let high1 = _mm256_and_pd(_mm256_cmp_pd(v1, self.thr, _CMP_GT_OQ), _mm256_cmp_pd(v1, self.first, _CMP_GE_OQ));
                let mut m = (_mm256_movemask_pd(high0) | _mm256_movemask_pd(high1) << 4) & ((1 << n) - 1);
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    let s = self.row[j + l].to_f64();
                    let cell = &mut self.p.cells[self.e.bin(s) * k + j + l];
                    cell[0] += 1.0;
                    cell[1] += s;
                    m &= m - 1;
                }
                    }
        }
    }

    /// The class-conditional [`super::accumulate_row`] for every row, in one read of each row
    /// ([`row_sum_and_bad_avx2`]): each group of eight values is added to the bin-0 fast lane
    /// with vector loads and stores of the per-class arrays, and compared with the first edge
    /// into a bit mask, so the scattered path visits only the (few) set bits instead of testing
    /// every entry. Same updates, in the same order, as the portable code.
    ///
    /// `p` must have `x.k` groups and `e.num_bins()` bins (asserted).
    #[target_feature(enable = "avx2")]
    pub(super) fn accumulate_rows<T: Score>(
        x: &Inputs<T>,
        rows: std::ops::Range<usize>,
        e: &EvenEdges,
        p: &mut Part,
        thr: f64,
        check: &Checks,
    ) -> Option<usize> {
        let k = x.k;
        assert!(p.low_cnt.len() == k && p.low_sum.len() == k && p.cells.len() == k * e.num_bins());
        let (t, first) = (_mm256_set1_pd(thr), _mm256_set1_pd(e.first_edge()));
        for i in rows {
            let row = x.row(i);
            // SAFETY: AVX2 is enabled here; `row_sum_and_bad_avx2` reads only inside `row`, and
            // `Sce::visit` is given columns inside the row, with the table's shape asserted
            // above.
            let (sum, any_bad) = unsafe { row_sum_and_bad_avx2(row, &mut Sce { row, e, p: &mut *p, thr: t, first }) };
            let label = x.labels[i] as u64 as usize;
            if !row_ok(sum, any_bad, check) || label >= k {
                return Some(i);
            }
            let s = row[label].to_f64();
            if s > thr {
                p.outcome[label * p.nb + e.bin(s)] += 1.0;
            }
        }
        None
    }
}

#[inline(always)]
fn accumulate_row<T: Score>(row: &[T], label: usize, e: &EvenEdges, p: &mut Part, g: &Grouping) {
    let thr = g.threshold;
    let groups = p.groups;
    let u1 = e.first_edge();
    // Fast lane: kept scores below the first edge are bin 0 (branch-free, SIMD).
    if g.class_conditional {
        let (lc, ls) = (&mut p.low_cnt[..row.len()], &mut p.low_sum[..row.len()]);
        for k in 0..row.len() {
            let s = row[k].to_f64();
            let m = ((s > thr) & (s < u1)) as u8 as f64;
            lc[k] += m;
            ls[k] += m * s;
        }
    } else {
        let (lc, ls) = (&mut p.low_cnt[..LANES], &mut p.low_sum[..LANES]);
        let mut it = row.chunks_exact(LANES);
        for c in &mut it {
            for l in 0..LANES {
                let s = c[l].to_f64();
                let m = ((s > thr) & (s < u1)) as u8 as f64;
                lc[l] += m;
                ls[l] += m * s;
            }
        }
        for (l, v) in it.remainder().iter().enumerate() {
            let s = v.to_f64();
            let m = ((s > thr) & (s < u1)) as u8 as f64;
            lc[l] += m;
            ls[l] += m * s;
        }
    }
    // Scattered path: the few kept scores at or above the first edge.
    let cells = &mut p.cells[..];
    for (k, v) in row.iter().enumerate() {
        let s = v.to_f64();
        if s >= u1 && s > thr {
            let c = &mut cells[e.bin(s) * groups + if g.class_conditional { k } else { 0 }];
            c[0] += 1.0;
            c[1] += s;
        }
    }
    let s = row[label].to_f64();
    if s > thr {
        let grp = if g.class_conditional { label } else { 0 };
        p.outcome[grp * p.nb + e.bin(s)] += 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Binning;

    /// The AVX2 class-conditional pass gives bitwise the tables of the portable pass.
    #[test]
    fn vector_pass_equals_portable_pass() {
        let mut s: u64 = 11;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        for (n, k) in [(300, 3), (257, 13), (100, 40), (50, 1000)] {
            let mut p = vec![0.0f64; n * k];
            for row in p.chunks_mut(k) {
                row.iter_mut().for_each(|v| *v = (12.0 * rnd()).exp() * if rnd() < 0.1 { 0.0 } else { 1.0 });
                let t: f64 = row.iter().sum::<f64>().max(1e-300);
                row.iter_mut().for_each(|v| *v /= t);
            }
            let y: Vec<i64> = (0..n).map(|_| (rnd() * k as f64) as i64).collect();
            let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
            for thr in [0.0, 0.01, 0.3] {
                let g = Grouping { binning: Binning::Even, max_prob: false, class_conditional: true, threshold: thr };
                let e = [EvenEdges::new(15)];
                let run = |pass: &dyn Fn(&mut [Part]) -> Option<usize>| {
                    let mut part = vec![Part::zeros(k, 16, true)];
                    assert!(pass(&mut part).is_none());
                    let st = part.pop().unwrap().into_stats(&e[0].boundaries());
                    (st.count, st.sum_score, st.sum_outcome)
                };
                let x = Inputs::new(&p, &y, k).unwrap();
                let a = run(&|pt| accumulate(&x, 0..n, &e, pt, &g, &Checks::ALL));
                let b = run(&|pt| accumulate_rows(&x, 0..n, &e, pt, &g, &Checks::ALL));
                assert_eq!(a, b, "f64 N={n} K={k} thr={thr}");
                let x = Inputs::new(&p32, &y, k).unwrap();
                let a = run(&|pt| accumulate(&x, 0..n, &e, pt, &g, &Checks::ALL));
                let b = run(&|pt| accumulate_rows(&x, 0..n, &e, pt, &g, &Checks::ALL));
                assert_eq!(a, b, "f32 N={n} K={k} thr={thr}");
            }
        }
    }
}
