//! All-probabilities metrics with even bins (SCE and its relatives): every entry of the matrix
//! goes into a (group, bin) cell. Per entry only the count and the score sum are updated,
//! without data-dependent branches; the outcome is 1 only at the true label, so it is added
//! once per row. Rows are validated in the same read.

use crate::kernels::chunks::{map_fold, row_chunks_min};
use crate::kernels::edges::EvenEdges;
use crate::kernels::validate::{first_row_error, labels as check_labels, row_sum_and_bad, row_ok, Checks};
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
            match accumulate_rows(x, rows.clone(), &edges, &mut part, g, check) {
                None => Ok(part),
                Some(i) => Err(first_row_error(x, rows.start..i + 1, check).expect("row fails")),
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
    /// Accumulates `rows` into `part`; the index of the first row failing a check, if any.
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
            if !row_ok(sum, bad, check) {
                return Some(i);
            }
            for (e, p) in edges.iter().zip(part.iter_mut()) {
                accumulate_row(row, x.labels[i] as usize, e, p, g);
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
