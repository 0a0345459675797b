//! Even-binned top-label metrics (ECE, class-conditional ECE, MCE, any threshold and norm)
//! fused with the scan: rows are scanned a block at a time into small buffers (maximum and
//! first argmax, `scan_rows`), each block's cells and outcomes are computed four rows at a
//! time (`cells_of`: bins by [`EvenEdges::bin4`], rows at or below the threshold sent to a
//! discard cell instead of branching, labels range-checked on the way), and the table updates
//! are spread over the copies of a [`LaneTables`]. Each row is read once and nothing of size N
//! is allocated. The scan and the binning are separate tight loops over a block (one loop doing
//! both would not keep its state in registers). Row chunks run in parallel, the calling thread
//! taking its share; their tables are added in chunk order.

use std::ops::Range;

use crate::kernels::core::chunks::row_chunks_split;
use crate::kernels::core::share::map_fold_here;
use crate::kernels::core::simd;
use crate::kernels::core::edges::EvenEdges;
use crate::kernels::core::stats::LaneTables;
use crate::kernels::core::units;
use crate::kernels::gce::toplabel_scan::scan_rows;
use crate::kernels::core::validate::{failed_row_error, labels as check_labels, Checks};
use crate::kernels::{BinStats, Grouping, Inputs, KernelError, Score};

/// Rows scanned into the buffers at a time.
pub(crate) const BLOCK: usize = 256;
/// Chunks hold at most this many entries, split evenly: a 10k x 10 input is four chunks, mapped
/// by the calling thread and whichever pool threads wake in time ([`map_fold_here`]). The
/// split depends only on the shape, so results do not depend on the number of threads. Inputs
/// of at most this many entries are one chunk, on the calling thread (the glue keeps the GIL
/// for inputs smaller than this, and rayon must run only with the GIL released).
const CHUNK: usize = 1 << 15;
/// ... and at least this many rows (each chunk sets up its own tables and buffers).
const MIN_ROWS: usize = 2048;

/// Whether [`even_stats`] applies: its per-chunk tables are small (a chunk's tables are
/// allocated per chunk and folded in order).
pub fn fused_even_fits(g: &Grouping, k: usize, bins: &[usize]) -> bool {
    bins.iter().all(|&b| g.groups(k) * (b + 1) <= LaneTables::SMALL)
}

/// Even-binned top-label statistics for each bin count in `bins` (one pass per bin count).
/// Errors are those of [`crate::kernels::gce::toplabel::summarise`]: labels first, then the first
/// failing row.
pub fn even_stats<T: Score>(x: &Inputs<T>, g: &Grouping, bins: &[usize], check: &Checks) -> Result<Vec<BinStats>, KernelError> {
    bins.iter().map(|&b| even_stats_one(x, g, &EvenEdges::new(b), check)).collect()
}

/// The row chunks of [`even_stats`] (fixed by the shape): [`crate::kernels::gce::toplabel::stats`]
/// folds a shared summary over the same chunks and blocks, in the same order, so that `gce` and
/// `evaluate` give bitwise the same tables.
pub fn chunks(n: usize, k: usize) -> Vec<Range<usize>> {
    row_chunks_split(n, k, CHUNK, MIN_ROWS)
}

fn even_stats_one<T: Score>(x: &Inputs<T>, g: &Grouping, e: &EvenEdges, check: &Checks) -> Result<BinStats, KernelError> {
    let chunks = chunks(x.n, x.k);
    let mut total: Option<BinStats> = None;
    let res = map_fold_here(
        &chunks,
        |rows| even_chunk(x, g, e, rows, check),
        |part| match &mut total {
            None => total = Some(part),
            Some(t) => t.add(&part),
        },
    );
    if let Err(err) = res {
        if check.labels {
            check_labels(x)?;
        }
        return Err(err);
    }
    // `Inputs` has at least one row, so there is at least one chunk.
    let mut st = total.ok_or_else(|| KernelError::Shape("probs is empty; pass at least one row".into()))?;
    st.finish();
    st.edges = e.boundaries().repeat(st.groups);
    Ok(st)
}

/// One row chunk of [`even_stats`].
fn even_chunk<T: Score>(x: &Inputs<T>, g: &Grouping, e: &EvenEdges, rows: Range<usize>, check: &Checks) -> Result<BinStats, KernelError> {
    let mut st = BinStats::zeros(g.groups(x.k), e.num_bins());
    let mut acc = LaneTables::new(st.count.len());
    let mut b = Box::new(Buffers::new());
    let bn = Binner { edges: e, class_conditional: g.class_conditional, threshold: g.threshold, drop: acc.discard() as u32, k: x.k };
    let mut labels_ok = true;
    for start in rows.clone().step_by(BLOCK) {
        let block = start..(start + BLOCK).min(rows.end);
        let n = block.len();
        if !scan_rows(x, block.clone(), &mut b.pred[..n], &mut b.conf[..n], check) {
            // InputChanged if no row fails any more (another thread wrote to the block).
            return Err(failed_row_error(x, block, check));
        }
        labels_ok &= cells_of(&bn, &x.labels[block], &mut b, n);
        acc.push_slices(&b.cells[..n], &b.biased[..n], &b.incs[..n]);
        acc.pushed(n, &mut st);
    }
    if check.labels && !labels_ok {
        check_labels(x)?;
    }
    acc.flush(&mut st);
    Ok(st)
}

/// Space of one block: scan results, then each row's cell and count increment.
#[repr(C)]
struct Buffers {
    conf: [f64; BLOCK],
    pred: [u32; BLOCK],
    cells: [u32; BLOCK],
    incs: [u64; BLOCK],
    biased: [i64; BLOCK],
}

impl Buffers {
    fn new() -> Self {
        Buffers { conf: [0.0; BLOCK], pred: [0; BLOCK], cells: [0; BLOCK], incs: [0; BLOCK], biased: [0; BLOCK] }
    }
}

/// What [`cells_of`] needs to know of the grouping and binning.
struct Binner<'a> {
    edges: &'a EvenEdges,
    class_conditional: bool,
    threshold: f64,
    /// The table's discard cell (rows at or below the threshold).
    drop: u32,
    k: usize,
}

/// Fills cell, count increment (1, plus 1 << 32 if correct) and biased score units
/// ([`units::biased`]) of the first `n` buffered
/// rows; returns whether their labels are all in [0, K). Dispatches to [`x86::cells_of`] (four
/// rows at a time) where the CPU has AVX2, the rest of the rows to [`cells_of_portable`].
fn cells_of(bn: &Binner<'_>, labels: &[i64], b: &mut Buffers, n: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        simd::record(simd::Kernel::Cells, simd::Level::Avx2);
        // SAFETY: the CPU has AVX2, the only feature `x86::cells_of` is compiled for. It reads
        // the thread's own buffers and `labels` within lengths it asserts; a label changed by
        // another thread meanwhile gives another outcome or the labels error, and cells are
        // table cells whatever the values (bins clamped, predictions < K), indexed with checks.
        let (done, ok) = unsafe { x86::cells_of(bn, labels, b, n) };
        return cells_of_portable(bn, labels, b, done..n) & ok;
    }
    simd::record(simd::Kernel::Cells, simd::Level::Portable);
    cells_of_portable(bn, labels, b, 0..n)
}

/// The portable [`cells_of`], for buffered rows `rows`.
fn cells_of_portable(bn: &Binner<'_>, labels: &[i64], b: &mut Buffers, rows: Range<usize>) -> bool {
    let nb = bn.edges.num_bins() as u32;
    let mut ok = true;
    for j in rows {
        let (s, p, l) = (b.conf[j], b.pred[j], labels[j]);
        let group = if bn.class_conditional { p } else { 0 };
        b.cells[j] = if s > bn.threshold { group * nb + bn.edges.bin(s) as u32 } else { bn.drop };
        b.incs[j] = 1 | ((l == p as i64) as u64) << 32;
        b.biased[j] = units::biased(s);
        ok &= (l as u64) < bn.k as u64;
    }
    ok
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Binner, Buffers};
    use crate::kernels::core::units;
    use std::arch::x86_64::*;

    /// [`super::cells_of`] four rows at a time; returns (rows done, labels in range). Cells
    /// are table cells whatever the buffered values (bins clamped to 0..=B, predictions < K
    /// from the scan), and the table is indexed with bounds checks.
    #[target_feature(enable = "avx2")]
    pub fn cells_of(bn: &Binner<'_>, labels: &[i64], b: &mut Buffers, n: usize) -> (usize, bool) {
        assert!(n <= labels.len() && n <= b.conf.len());
        let nb = _mm_set1_epi32(bn.edges.num_bins() as i32);
        let drop = _mm_set1_epi32(bn.drop as i32);
        let threshold = _mm256_set1_pd(bn.threshold);
        let k = _mm256_set1_epi64x(bn.k as i64);
        let (one, correct_inc) = (_mm256_set1_epi64x(1), _mm256_set1_epi64x(1 << 32));
        let shift = _mm256_set1_pd(units::SHIFT);
        let low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        let mut bad = _mm256_setzero_si256();
        let done = n / 4 * 4;
        for j in (0..done).step_by(4) {
            // SAFETY: j + 4 <= done <= n <= b.conf.len() (asserted), and the buffers have the
            // same length BLOCK: the loads read entries j..j+4 of `conf` and `pred`.
            let (s, p) = unsafe {
                (_mm256_loadu_pd(b.conf.as_ptr().add(j)), _mm_loadu_si128(b.pred.as_ptr().add(j) as *const __m128i))
            };
            let bins = bn.edges.bin4(s);
            let cells = if bn.class_conditional { _mm_add_epi32(_mm_mullo_epi32(p, nb), bins) } else { bins };
            let keep = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                _mm256_castpd_si256(_mm256_cmp_pd(s, threshold, _CMP_GT_OQ)),
                low_halves,
            ));
            // SAFETY: entries j..j+4 of `cells` (length BLOCK >= n) and of `labels` (j + 4 <= n
            // <= labels.len(), asserted).
            let l = unsafe {
                _mm_storeu_si128(b.cells.as_mut_ptr().add(j) as *mut __m128i, _mm_blendv_epi8(drop, cells, keep));
                _mm256_loadu_si256(labels.as_ptr().add(j) as *const __m256i)
            };
            let correct = _mm256_cmpeq_epi64(l, _mm256_cvtepi32_epi64(p));
            let inc = _mm256_or_si256(one, _mm256_and_si256(correct, correct_inc));
            // The scores' biased units, as `units::biased` computes them (bitwise: the same
            // two roundings).
            let biased = _mm256_castpd_si256(_mm256_add_pd(s, shift));
            // SAFETY: entries j..j+4 of `incs` and `biased` (length BLOCK >= n).
            unsafe {
                _mm256_storeu_si256(b.incs.as_mut_ptr().add(j) as *mut __m256i, inc);
                _mm256_storeu_si256(b.biased.as_mut_ptr().add(j) as *mut __m256i, biased);
            }
            let negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), l);
            let not_below_k = _mm256_xor_si256(_mm256_cmpgt_epi64(k, l), _mm256_set1_epi64x(-1));
            bad = _mm256_or_si256(bad, _mm256_or_si256(negative, not_below_k));
        }
        (done, _mm256_testz_si256(bad, bad) == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 cells (four rows at a time) are bitwise those of the production portable loop:
    /// bins at and around every edge, NaN, values outside [0, 1], thresholds, both groupings,
    /// labels in and out of range, and every row count of a block's tail.
    #[test]
    fn vector_cells_equal_portable() {
        if !simd::avx2() {
            return;
        }
        let mut rnd = crate::kernels::tests::xorshift(0x2545_F491_4F6C_DD1Du64);
        for b in [1usize, 3, 10, 15, 97] {
            let e = EvenEdges::new(b);
            let bounds = e.boundaries();
            for (cc, thr) in [(false, 0.0), (true, 0.0), (false, 0.3), (true, 0.01)] {
                let bn = Binner { edges: &e, class_conditional: cc, threshold: thr, drop: 999, k: 7 };
                let mut buf = Buffers::new();
                let mut labels = [0i64; BLOCK];
                #[allow(clippy::needless_range_loop)]
                for j in 0..BLOCK {
                    let edge = bounds[(rnd() * bounds.len() as f64) as usize];
                    buf.conf[j] = match j % 6 {
                        0 => edge,
                        1 => f64::from_bits(edge.to_bits().wrapping_sub(1)),
                        2 => [f64::NAN, -0.5, 1.5, 0.0, -0.0, 1.0][(rnd() * 6.0) as usize],
                        _ => rnd(),
                    };
                    buf.pred[j] = (rnd() * 7.0) as u32;
                    labels[j] = (rnd() * 8.0) as i64 - if j % 50 == 0 { 9 } else { 0 };
                }
                for n in [0usize, 1, 3, 4, 5, 255, BLOCK] {
                    let mut v = Buffers { conf: buf.conf, pred: buf.pred, cells: [7; BLOCK], incs: [7; BLOCK], biased: [7; BLOCK] };
                    let mut q = Buffers { conf: buf.conf, pred: buf.pred, cells: [7; BLOCK], incs: [7; BLOCK], biased: [7; BLOCK] };
                    // SAFETY: AVX2 is present (checked above).
                    let (done, ok) = unsafe { x86::cells_of(&bn, &labels, &mut v, n) };
                    assert!(done <= n && n - done < 4);
                    let want_ok = cells_of_portable(&bn, &labels, &mut q, 0..done);
                    assert_eq!((&v.cells[..done], &v.incs[..done], &v.biased[..done], ok), (&q.cells[..done], &q.incs[..done], &q.biased[..done], want_ok), "B={b} cc={cc} thr={thr} n={n}");
                }
            }
        }
    }
}
