//! All-probabilities metrics with even bins (SCE and its relatives): every entry of the matrix
//! goes into a (group, bin) cell. Per entry only the count and the score sum are updated,
//! without data-dependent branches; the outcome is 1 only at the true label, so it is added
//! once per row. Rows are validated in the same read.

use crate::kernels::chunks::{map_fold, row_chunks};
use crate::kernels::edges::EvenEdges;
use crate::kernels::validate::{first_row_error, labels as check_labels, row_sum_and_bad, row_ok, Checks};
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

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
    let empty = || -> Vec<BinStats> {
        edges.iter().map(|e| BinStats::zeros(groups, e.num_bins())).collect()
    };
    let mut total = empty();
    let chunks = row_chunks(x.n, x.k);
    map_fold(
        &chunks,
        |rows| {
            let mut part = empty();
            for i in rows.clone() {
                let row = x.row(i);
                let (sum, bad) = row_sum_and_bad(row);
                if !row_ok(sum, bad, check) {
                    return Err(first_row_error(x, rows.start..i + 1, check).expect("row fails"));
                }
                for (e, st) in edges.iter().zip(part.iter_mut()) {
                    accumulate_row(row, x.labels[i] as usize, e, st, g);
                }
            }
            Ok(part)
        },
        |part| {
            for (t, p) in total.iter_mut().zip(&part) {
                t.add(p);
            }
        },
    )?;
    for (t, e) in total.iter_mut().zip(&edges) {
        let bounds = e.boundaries();
        t.edges = (0..groups).flat_map(|_| bounds.iter().copied()).collect();
    }
    Ok(total)
}

#[inline(always)]
fn accumulate_row<T: Score>(row: &[T], label: usize, e: &EvenEdges, st: &mut BinStats, g: &Grouping) {
    let nb = st.nb;
    let thr = g.threshold;
    if g.class_conditional {
        for (k, v) in row.iter().enumerate() {
            let s = v.to_f64();
            let keep = (s > thr) as u8 as f64;
            let i = k * nb + e.bin(s);
            st.count[i] += keep;
            st.sum_score[i] += keep * s;
        }
    } else {
        for v in row {
            let s = v.to_f64();
            let keep = (s > thr) as u8 as f64;
            let i = e.bin(s);
            st.count[i] += keep;
            st.sum_score[i] += keep * s;
        }
    }
    let s = row[label].to_f64();
    if s > thr {
        let grp = if g.class_conditional { label } else { 0 };
        st.sum_outcome[grp * nb + e.bin(s)] += 1.0;
    }
}
