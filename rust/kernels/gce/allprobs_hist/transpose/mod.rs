//! Column-major copies of blocks of classes, so that each class's scores are contiguous, with
//! each class's bucket counts taken on the way.
//!
//! The block is split into tiles of rows, transposed in parallel. With AVX2 the tiles are
//! transposed in register blocks (4 x 4 for f64, 8 x 8 for f32): whole vectors are loaded from
//! consecutive rows and whole vectors are stored into each column, instead of one scalar store
//! per entry at a large stride. f64 tiles, whose columns start on cache lines, are written a
//! whole line per column at a time with non-temporal stores (no read of the destination line
//! first). Copies are exact, so every path gives the same tile.
//!
//! While the values are in registers, their bucket slots ([`Keys::slot`]) are counted per tile
//! and column. Counts are integers, so adding the tiles' counts gives a class's bucket counts
//! exactly, whatever the tiling; the class pass then needs one read of its column instead of
//! two (the bucket sums are taken in that read, with the gathering that needs the counts).
//!
//! The input checks are taken on the way too ([`RowSums`]): each row's running sum (its values
//! added one by one in column order, across the blocks, on every path) and whether any value
//! is out of range, so that no separate validation pass reads the matrix
//! ([`Tiles::check_rows`]).
//!
//! The tiles' buffers outlive the call ([`take_spare`], [`give_spare`]): a call that frees tens of megabytes hands
//! them back to the system, and the next call would fault them in again page by page (at
//! (50k, 1000) about 13,000 faults, 30 ms of system time on a 250 ms ACE, measured).

use std::any::Any;
use std::ops::Range;
use std::sync::Mutex;

use rayon::prelude::*;

use super::Keys;
use crate::kernels::core::validate::{self, Checks};
use crate::kernels::core::simd;
use crate::kernels::KernelError;
use crate::kernels::{Inputs, Score};

/// At most this many classes are transposed at once ... (wider blocks read longer segments of
/// each row and take fewer steps; the byte limit below usually binds first, e.g. 125 float64
/// classes of 50k rows; a tile's u16 count table then takes ~0.5 MB).
const MAX_BLOCK: usize = 256;
/// ... and the transposed block holds at most this many bytes (unless one class is larger),
/// and at most an eighth of the input when that is more than [`MIN_BLOCK_BYTES`]: the copy is
/// the kernel's extra memory.
const BLOCK_BYTES: usize = 64 << 20;
const MIN_BLOCK_BYTES: usize = 16 << 20;
/// At most this many rows per transposition tile ...
const TRANSPOSE_ROWS: usize = 8192;
/// ... and, when there are enough rows, at least this many.
const MIN_TILE_ROWS: usize = 1024;
// A tile's counts are u16.
const _: () = assert!(TRANSPOSE_ROWS <= u16::MAX as usize);

/// The row tiles of `n` rows: of equal sizes (the last a few rows shorter), at most
/// [`TRANSPOSE_ROWS`], as many as a multiple of the threads where that leaves tiles of
/// [`MIN_TILE_ROWS`] or more, so that no thread is left with a last tile alone. The tiling
/// changes no result: counts are integers, a class's column is its tiles' segments in row
/// order, and row sums run along rows.
fn row_tiles(n: usize, threads: usize) -> Vec<Range<usize>> {
    let tiles = n.div_ceil(TRANSPOSE_ROWS).next_multiple_of(threads.max(1)).min(n.div_ceil(MIN_TILE_ROWS)).max(1);
    let rows = n.div_ceil(tiles).max(1);
    (0..n).step_by(rows).map(|s| s..(s + rows).min(n)).collect()
}

/// Rows ahead that the transposition prefetches.
const PREFETCH_ROWS: usize = 16;

/// Classes per transposed block, balanced over the blocks, in whole cache lines of a row when
/// the limits allow (then rows need no leftover columns after the register blocks).
pub(super) fn class_blocks(n: usize, k: usize, elem: usize) -> Vec<Range<usize>> {
    let budget = BLOCK_BYTES.min((n * k * elem / 8).max(MIN_BLOCK_BYTES));
    let by_bytes = (budget / (n * elem).max(1)).max(1);
    let cap = MAX_BLOCK.min(by_bytes);
    let nblocks = k.div_ceil(cap.min(k));
    let w = k.div_ceil(nblocks);
    let lines = w.next_multiple_of(64 / elem);
    let w = if lines <= cap { lines } else { w };
    (0..k).step_by(w).map(|s| s..(s + w).min(k)).collect()
}

/// Where a tile's bucket counts go: `cnt[j * (keys.nkeys() + 1) + slot]` for column j.
pub(super) struct Counter<'a> {
    pub(super) cnt: &'a mut [u16],
    pub(super) keys: Keys,
    pub(super) thr: f64,
}

impl Counter<'_> {
    #[inline(always)]
    fn add(&mut self, j: usize, slot: usize) {
        self.cnt[j * (self.keys.nkeys() + 1) + slot] += 1;
    }
}

/// The input checks of a tile, taken while it is transposed: `sum[i - rows.start]` is row i's
/// running sum, its values added one at a time in column order (carried from block to block,
/// so after the last block it is the row's plain sequential sum, on every path), and `bad`
/// whether any value failed [`validate::in_range`].
pub(super) struct RowSums<'a> {
    pub(super) sum: &'a mut [f64],
    pub(super) bad: bool,
}

impl RowSums<'_> {
    #[inline(always)]
    fn add(&mut self, ii: usize, v: f64) {
        self.sum[ii] += v;
        self.bad |= !validate::in_range(v);
    }
}

/// Copies `x[rows, cols]` into `t` column by column: entry (i, c) goes to
/// `t[(c - cols.start) * stride + (i - rows.start)]`, counts each entry's bucket slot for
/// column `c - cols.start` in `counter`, and adds each entry to its row's running sum in
/// `sums` (in column order). Uses the AVX2 register-block kernels when the CPU has AVX2, the
/// scalar loop otherwise (bitwise the same copies, counts and sums).
fn transpose_rows<T: Score>(
    x: &Inputs<T>,
    rows: Range<usize>,
    cols: Range<usize>,
    stride: usize,
    t: &mut [T],
    counter: &mut Counter,
    sums: &mut RowSums,
) {
    assert!(rows.end <= x.n && cols.end <= x.k && cols.start <= cols.end);
    assert!(rows.len() <= stride && t.len() >= cols.len() * stride);
    assert!(counter.cnt.len() >= cols.len() * (counter.keys.nkeys() + 1));
    assert!(sums.sum.len() >= rows.len());
    if rows.is_empty() || cols.is_empty() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if simd::avx2() {
        // The element type picks the register-block kernel (no copy, no reinterpretation).
        if let (Some(p), Some(t)) = (T::as_f64s(x.probs), T::as_f64s_mut(t)) {
            simd::record(simd::Kernel::Transpose, simd::Level::Avx2);
            // SAFETY: the CPU has AVX2, and the asserts above are the bounds
            // `avx2::transpose_f64` requires.
            unsafe { avx2::transpose_f64(p, x.k, rows, cols, stride, t, counter, sums) };
            return;
        }
        if let (Some(p), Some(t)) = (T::as_f32s(x.probs), T::as_f32s_mut(t)) {
            simd::record(simd::Kernel::Transpose, simd::Level::Avx2);
            // SAFETY: as above, for `avx2::transpose_f32`.
            unsafe { avx2::transpose_f32(p, x.k, rows, cols, stride, t, counter, sums) };
            return;
        }
    }
    simd::record(simd::Kernel::Transpose, simd::Level::Portable);
    transpose_scalar(x.probs, x.k, rows, cols, stride, t, counter, sums);
}

/// The portable transposition: one row at a time, one scalar store per entry.
#[allow(clippy::too_many_arguments)]
fn transpose_scalar<T: Score>(
    p: &[T],
    k: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    stride: usize,
    t: &mut [T],
    counter: &mut Counter,
    sums: &mut RowSums,
) {
    let end = rows.end;
    for (ii, i) in rows.enumerate() {
        if i + PREFETCH_ROWS < end {
            prefetch_row(p, (i + PREFETCH_ROWS) * k, &cols);
        }
        let row = &p[i * k + cols.start..i * k + cols.end];
        for (j, &v) in row.iter().enumerate() {
            t[j * stride + ii] = v;
            counter.add(j, counter.keys.slot(v, counter.thr));
            sums.add(ii, v.to_f64());
        }
    }
}

/// Prefetches the block's segment of the row starting at `p[start]`. The block reads a short
/// segment of each row at a large stride, which hardware prefetchers do not follow across
/// pages: the transposition asks for the segment a few rows ahead.
#[inline(always)]
fn prefetch_row<T>(p: &[T], start: usize, cols: &Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    {
        let seg = &p[start + cols.start..start + cols.end];
        let line = 64 / std::mem::size_of::<T>();
        for c in (0..seg.len()).step_by(line) {
            // SAFETY: prefetching is a hint; the address comes from a valid reference.
            unsafe {
                use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(&seg[c] as *const T as *const i8);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, start, cols);
}

#[cfg(target_arch = "x86_64")]
mod avx2;

/// Transposition buffers kept between calls, of either element type: at most [`SPARE_MAX`]
/// buffers and [`SPARE_BYTES`] bytes, the largest kept (the memory a later call of the same
/// size needs again). A call takes them under the lock, so concurrent calls never share one.
static SPARE: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());
/// At most this many spare buffers (a call has one per tile: about one per thread, more for
/// very long inputs) ...
const SPARE_MAX: usize = 64;
/// ... holding at most this many bytes (four times the largest block, [`BLOCK_BYTES`]).
const SPARE_BYTES: usize = 4 * BLOCK_BYTES;

fn spare_bytes(b: &(dyn Any + Send)) -> usize {
    if let Some(v) = b.downcast_ref::<Vec<f64>>() {
        v.capacity() * 8
    } else if let Some(v) = b.downcast_ref::<Vec<f32>>() {
        v.capacity() * 4
    } else {
        0
    }
}

/// A spare buffer of element type `T` (the largest kept), or a new empty one.
fn take_spare<T: Score>() -> Vec<T> {
    let mut s = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    let best = (0..s.len()).filter(|&i| s[i].is::<Vec<T>>()).max_by_key(|&i| spare_bytes(s[i].as_ref()));
    match best.map(|i| s.swap_remove(i).downcast::<Vec<T>>()) {
        Some(Ok(v)) => *v,
        _ => Vec::new(),
    }
}

/// Keeps `v` for a later call ([`keep_largest`]: the smallest spares go first).
fn give_spare<T: Score>(v: Vec<T>) {
    if v.capacity() == 0 {
        return;
    }
    let mut s = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    s.push(Box::new(v));
    keep_largest(&mut s, SPARE_MAX, SPARE_BYTES);
}

/// Keeps the largest buffers of `s` that fit, largest first: at most `most` of them and `bytes`
/// bytes in all (a buffer over what is left is dropped, smaller ones may still be kept).
fn keep_largest(s: &mut Vec<Box<dyn Any + Send>>, most: usize, bytes: usize) {
    s.sort_by_key(|b| std::cmp::Reverse(spare_bytes(b.as_ref())));
    let (mut total, mut kept) = (0usize, 0usize);
    s.retain(|b| {
        let n = spare_bytes(b.as_ref());
        let keep = kept < most && total + n <= bytes;
        if keep {
            total += n;
            kept += 1;
        }
        keep
    });
}

/// Index of the first element of `t` on a 64-byte boundary, where a tile's columns start (0 if
/// there is none within the spare line; the transposition then uses ordinary stores).
fn line_start<T>(t: &[T]) -> usize {
    let a = t.as_ptr().align_offset(64);
    if a < 64 / std::mem::size_of::<T>() { a } else { 0 }
}

/// Column-major copies of a block of columns, one tile per chunk of rows, with each tile's
/// bucket counts per column. The buffers are reused from block to block (fresh pages would
/// cost more to fault in than to fill).
pub(super) struct Tiles<T: Score> {
    rows: Vec<Range<usize>>,
    data: Vec<Vec<T>>,
    stride: Vec<usize>,
    /// Per tile: `counts[j * (keys.nkeys() + 1) + slot]` for column j of the block.
    counts: Vec<Vec<u16>>,
    /// Per tile: its rows' running sums over the blocks transposed so far, and whether any of
    /// their values failed the range check ([`RowSums`]).
    sums: Vec<Vec<f64>>,
    bad: Vec<bool>,
    keys: Keys,
}

impl<T: Score> Drop for Tiles<T> {
    /// The buffers go to [`give_spare`] for the next call.
    fn drop(&mut self) {
        self.data.drain(..).for_each(give_spare::<T>);
    }
}

impl<T: Score> Tiles<T> {
    pub(super) fn new(n: usize, keys: Keys) -> Self {
        let rows = row_tiles(n, rayon::current_num_threads());
        // Columns start on whole cache lines, with the stride padded by one line so the block's
        // columns do not all map to the same cache set (power-of-two strides thrash L1 in a
        // transpose).
        let line = 64 / std::mem::size_of::<T>();
        let stride = rows.iter().map(|r| r.len().next_multiple_of(line) + line).collect();
        let tiles = rows.len();
        let sums = rows.iter().map(|r| vec![0.0; r.len()]).collect();
        let data = (0..tiles).map(|_| take_spare::<T>()).collect();
        Tiles { data, counts: vec![Vec::new(); tiles], sums, bad: vec![false; tiles], rows, stride, keys }
    }

    /// Transposes the block `cols` and counts its bucket slots (values above `thr` by key, the
    /// others in the drop slot).
    pub(super) fn fill(&mut self, x: &Inputs<T>, cols: &Range<usize>, thr: f64) {
        let w = cols.len();
        let keys = self.keys;
        self.data
            .par_iter_mut()
            .zip(self.counts.par_iter_mut())
            .zip(self.sums.par_iter_mut().zip(self.bad.par_iter_mut()))
            .zip(self.rows.par_iter().zip(self.stride.par_iter()))
            .for_each(|(((t, cnt), (sum, bad)), (r, &stride))| {
                // One spare line, so that the columns can start on a cache line.
                t.resize(w * stride + 64 / std::mem::size_of::<T>(), T::default());
                cnt.clear();
                cnt.resize(w * (keys.nkeys() + 1), 0);
                let mut counter = Counter { cnt, keys, thr };
                let mut sums = RowSums { sum, bad: *bad };
                let a = line_start(t);
                let t = &mut t[a..];
                transpose_rows(x, r.clone(), cols.clone(), stride, t, &mut counter, &mut sums);
                *bad = sums.bad;
            });
    }

    /// The input checks of `check` (values and row sums; not labels), after every block of
    /// columns has been filled: rows whose values are all in range and whose running sums
    /// certainly pass ([`validate::row_sum_surely_ok`]) are done; the others (tiles with a
    /// value out of range, whichever checks are asked for, and rows near the tolerance) are
    /// checked again exactly, in row order, and the first failing row is the error, as
    /// [`validate::scan`] names it.
    pub(super) fn check_rows(&self, x: &Inputs<T>, check: &Checks) -> Result<(), KernelError> {
        if !check.values && !check.row_sums {
            return Ok(());
        }
        for ((r, sums), &bad) in self.rows.iter().zip(&self.sums).zip(&self.bad) {
            // A value out of range fails the value check, and voids the bound on how far the
            // two sums' orders can differ: either way only the exact check decides.
            let sure = |&s: &f64| validate::row_sum_surely_ok(s, x.k);
            if bad || (check.row_sums && !sums.iter().all(sure)) {
                if let Some(e) = validate::first_row_error(x, r.clone(), check) {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Column `j` of the block, as one segment per tile.
    pub(super) fn column(&self, j: usize) -> Vec<&[T]> {
        self.data
            .iter()
            .zip(&self.rows)
            .zip(&self.stride)
            .map(|((t, r), &stride)| {
                let a = line_start(t) + j * stride;
                &t[a..a + r.len()]
            })
            .collect()
    }

    /// Adds column `j`'s bucket counts (every tile's) to `out`.
    pub(super) fn add_counts(&self, j: usize, out: &mut [u32]) {
        let nk1 = self.keys.nkeys() + 1;
        let out = &mut out[..nk1];
        for cnt in &self.counts {
            for (o, &c) in out.iter_mut().zip(&cnt[j * nk1..(j + 1) * nk1]) {
                *o += c as u32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic distinct-looking test values.
    fn values<T: Score>(len: usize, from: impl Fn(f64) -> T) -> Vec<T> {
        let mut draw = crate::kernels::tests::xorshift(0x2545_F491_4F6C_DD1Du64);
        (0..len).map(|_| from(draw())).collect()
    }

    /// The dispatching transposition (AVX2 when available) against the scalar loop and against
    /// the definition, copies, bucket counts and row sums (bitwise), over shapes where rows and
    /// columns are not multiples of the register blocks, with values dropped by the threshold
    /// and (in some runs) values out of range.
    fn check<T: Score + PartialEq + std::fmt::Debug>(from: impl Fn(f64) -> T + Copy) {
        for keys in [Keys::CLASS, Keys::CLASS.above(0.3), Keys::CLASS_FINE] {
            check_keys(from, keys);
        }
    }

    fn check_keys<T: Score + PartialEq + std::fmt::Debug>(from: impl Fn(f64) -> T + Copy, keys: Keys) {
        for &(n, k) in &[(1usize, 1usize), (3, 5), (37, 17), (64, 64), (101, 43), (9, 200)] {
            // A few exact zeros, dropped as the threshold test requires.
            let p: Vec<T> = values(n * k, |v| from(if v < 0.05 { 0.0 } else { v }));
            let labels = vec![0i64; n];
            let x = Inputs::new(&p, &labels, k).unwrap();
            let col_ranges = [0..k, k / 3..k, 1..k.min(12), k - 1..k, 0..0];
            let row_ranges = [0..n, n / 2..n, 1.min(n)..n.min(35)];
            // The same values with one out of range (NaN, too large, too negative) in some row.
            let mut odd = p.clone();
            for (at, v) in [(n * k / 2, f64::NAN), (n * k - 1, 1.5), (k / 2, -0.1)] {
                odd[at] = from(v);
            }
            let xo = Inputs::new(&odd, &labels, k).unwrap();
            for (p, x) in [(&p, &x), (&odd, &xo)] {
                for thr in [0.0, 0.3] {
                    for cols in col_ranges.iter() {
                        for rows in row_ranges.iter() {
                            check_one(p, x, rows.clone(), cols.clone(), thr, keys);
                        }
                    }
                }
            }
        }
    }

    /// One call of [`check_keys`]: dispatching kernel, scalar loop and definition agree, with
    /// running row sums starting from values of their own (as from an earlier block).
    fn check_one<T: Score + PartialEq + std::fmt::Debug>(
        p: &[T],
        x: &Inputs<T>,
        rows: Range<usize>,
        cols: Range<usize>,
        thr: f64,
        keys: Keys,
    ) {
        let (k, nk1) = (x.k, keys.nkeys() + 1);
        let stride = rows.len() + 5;
        let mut want = vec![T::default(); cols.len() * stride];
        let mut got = want.clone();
        let mut want_cnt = vec![0u16; cols.len() * nk1];
        let mut got_cnt = want_cnt.clone();
        let start: Vec<f64> = (0..rows.len()).map(|i| i as f64 * 0.1).collect();
        let (mut want_sum, mut got_sum) = (start.clone(), start.clone());
        let mut c = Counter { cnt: &mut want_cnt, keys, thr };
        let mut want_rs = RowSums { sum: &mut want_sum, bad: false };
        transpose_scalar(p, k, rows.clone(), cols.clone(), stride, &mut want, &mut c, &mut want_rs);
        let want_bad = want_rs.bad;
        let mut c = Counter { cnt: &mut got_cnt, keys, thr };
        let mut got_rs = RowSums { sum: &mut got_sum, bad: false };
        transpose_rows(x, rows.clone(), cols.clone(), stride, &mut got, &mut c, &mut got_rs);
        let got_bad = got_rs.bad;
        let at = format!("k={k} thr={thr} rows={rows:?} cols={cols:?}");
        // Compared as bit patterns (NaN is not equal to itself).
        let tbits = |s: &[T]| s.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>();
        assert_eq!(tbits(&got), tbits(&want), "{at}");
        assert_eq!(got_cnt, want_cnt, "{at}");
        let bits = |s: &[f64]| s.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got_sum), bits(&want_sum), "{at}");
        assert_eq!(got_bad, want_bad, "{at}");
        let mut def_cnt = vec![0u16; cols.len() * nk1];
        for (j, c) in cols.clone().enumerate() {
            for (ii, i) in rows.clone().enumerate() {
                let v = p[i * k + c];
                assert_eq!(want[j * stride + ii].to_f64().to_bits(), v.to_f64().to_bits());
                def_cnt[j * nk1 + keys.slot(v, thr)] += 1;
            }
        }
        assert_eq!(want_cnt, def_cnt, "{at}");
        // Each row's sum: its start, then its values one at a time in column order.
        let def_sum: Vec<f64> = rows
            .clone()
            .zip(&start)
            .map(|(i, &s0)| cols.clone().fold(s0, |s, c| s + p[i * k + c].to_f64()))
            .collect();
        assert_eq!(bits(&want_sum), bits(&def_sum), "{at}");
        let def_bad = rows.clone().any(|i| cols.clone().any(|c| !validate::in_range(p[i * k + c].to_f64())));
        assert_eq!(want_bad, def_bad, "{at}");
    }

    /// Whole blocks through [`Tiles`] (aligned columns, so the f64 kernel streams its stores)
    /// against the definition: columns, per-column bucket counts and, after the last block,
    /// row sums, over several tiles.
    fn check_tiles<T: Score + PartialEq + std::fmt::Debug>(from: impl Fn(f64) -> T + Copy) {
        let keys = Keys::CLASS;
        for &(n, k) in &[(TRANSPOSE_ROWS + 13, 11usize), (2 * TRANSPOSE_ROWS + 8, 70), (5, 3)] {
            let p: Vec<T> = values(n * k, |v| from(if v < 0.05 { 0.0 } else { v }));
            let labels = vec![0i64; n];
            let x = Inputs::new(&p, &labels, k).unwrap();
            let mut tiles = Tiles::new(n, keys);
            for cols in class_blocks(n, k, std::mem::size_of::<T>()) {
                tiles.fill(&x, &cols, 0.0);
                for (j, c) in cols.clone().enumerate() {
                    let col: Vec<T> = tiles.column(j).concat();
                    let want: Vec<T> = (0..n).map(|i| p[i * k + c]).collect();
                    assert_eq!(col, want, "n={n} k={k} column {c}");
                    let mut cnt = vec![0u32; keys.nkeys() + 1];
                    tiles.add_counts(j, &mut cnt);
                    let mut def = vec![0u32; keys.nkeys() + 1];
                    for &v in &want {
                        def[keys.slot(v, 0.0)] += 1;
                    }
                    assert_eq!(cnt, def, "n={n} k={k} column {c}");
                }
            }
            // After the last block, each row's sum is its values added in column order.
            let sums: Vec<u64> = tiles.sums.concat().iter().map(|s| s.to_bits()).collect();
            let def: Vec<u64> =
                (0..n).map(|i| p[i * k..(i + 1) * k].iter().fold(0.0, |s, v| s + v.to_f64()).to_bits()).collect();
            assert_eq!(sums, def, "n={n} k={k} row sums");
        }
    }

    /// The checks taken while transposing name the same error as the stand-alone scan (or
    /// none), for every set of checks: valid rows, rows at and just beyond the row-sum
    /// tolerance (where the two sums' orders could disagree, so the exact check decides),
    /// values out of range and NaN, in the first, a middle and the last tile.
    fn check_rows_like_scan<T: Score>(from: impl Fn(f64) -> T + Copy) {
        let (n, k) = (2 * TRANSPOSE_ROWS + 37, 70);
        let mut draw = crate::kernels::tests::xorshift(0x9E37_79B9_7F4A_7C15);
        let mut base = vec![0.0f64; n * k];
        for row in base.chunks_mut(k) {
            row.iter_mut().for_each(|v| *v = draw() + 1e-3);
            let s: f64 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= s);
        }
        // (row, column, value, whether it replaces the value or is added to it, moving the
        // row sum by that much).
        let edits: [&[(usize, usize, f64, bool)]; 8] = [
            &[],
            &[(5, 3, f64::NAN, true)],
            &[(TRANSPOSE_ROWS + 1, 0, 1.0 + 2.0 * validate::RANGE_TOL, true), (n - 1, 9, f64::NAN, true)],
            &[(n - 1, 69, -2.0 * validate::RANGE_TOL, true)],
            &[(TRANSPOSE_ROWS, 4, 0.01, false)],
            &[(7, 0, validate::ROW_SUM_TOL, false)],
            &[(7, 0, validate::ROW_SUM_TOL * (1.0 + 1e-12), false)],
            &[(n / 2, 1, -validate::ROW_SUM_TOL, false), (n - 2, 1, 1e-9, false)],
        ];
        let labels = vec![0i64; n];
        let checks = [
            Checks::ALL,
            Checks { values: false, ..Checks::ALL },
            Checks { row_sums: false, ..Checks::ALL },
            Checks::NONE,
        ];
        for (e, edit) in edits.iter().enumerate() {
            let mut q = base.clone();
            for &(i, j, v, set) in edit.iter() {
                q[i * k + j] = if set { v } else { q[i * k + j] + v };
            }
            let p: Vec<T> = q.iter().map(|&v| from(v)).collect();
            let x = Inputs::new(&p, &labels, k).unwrap();
            let mut tiles = Tiles::new(n, Keys::CLASS);
            for cols in class_blocks(n, k, std::mem::size_of::<T>()) {
                tiles.fill(&x, &cols, 0.0);
            }
            for check in &checks {
                // Compared as text (an error may carry a NaN).
                let want = format!("{:?}", validate::scan(&x, check));
                assert_eq!(format!("{:?}", tiles.check_rows(&x, check)), want, "edit {e}, {check:?}");
            }
            // The edits that must fail do (the others are at the tolerance, either way).
            if (1..5).contains(&e) {
                assert!(validate::scan(&x, &Checks::ALL).is_err(), "edit {e} should fail");
            }
        }
        // Values far out of range void the bound on the two orders' difference: this row sums
        // to 1 in column order (1e16 - 1e16 first) but to 0 in the scan's eight lanes (1.0 is
        // lost beside 1e16 in lane 0), so with the values unchecked only the exact check can
        // say it fails.
        let mut q = base.clone();
        q[3 * k..4 * k].fill(0.0);
        (q[3 * k], q[3 * k + 1], q[3 * k + 8]) = (1e16, -1e16, 1.0);
        let p: Vec<T> = q.iter().map(|&v| from(v)).collect();
        let x = Inputs::new(&p, &labels, k).unwrap();
        let mut tiles = Tiles::new(n, Keys::CLASS);
        for cols in class_blocks(n, k, std::mem::size_of::<T>()) {
            tiles.fill(&x, &cols, 0.0);
        }
        let values_off = Checks { values: false, ..Checks::ALL };
        assert!(matches!(validate::scan(&x, &values_off), Err(KernelError::RowSum { row: 3, .. })));
        for check in &checks {
            let want = format!("{:?}", validate::scan(&x, check));
            assert_eq!(format!("{:?}", tiles.check_rows(&x, check)), want, "far out of range, {check:?}");
        }
    }

    #[test]
    fn spare_buffers_keep_the_largest_within_the_limits() {
        let buf = |n: usize, f32s: bool| -> Box<dyn Any + Send> {
            if f32s { Box::new(Vec::<f32>::with_capacity(n)) } else { Box::new(Vec::<f64>::with_capacity(n)) }
        };
        let sizes = |s: &Vec<Box<dyn Any + Send>>| s.iter().map(|b| spare_bytes(b.as_ref())).collect::<Vec<_>>();
        let mut s = vec![buf(10, false), buf(100, true), buf(30, false), buf(1, false)];
        keep_largest(&mut s, 8, 1000);
        assert_eq!(sizes(&s), vec![400, 240, 80, 8]);
        keep_largest(&mut s, 2, 1000);
        assert_eq!(sizes(&s), vec![400, 240]);
        keep_largest(&mut s, 8, 500);
        assert_eq!(sizes(&s), vec![400]);
        keep_largest(&mut s, 8, 100);
        assert!(s.is_empty());
        // a buffer over the byte limit by itself is not kept; a smaller one that fits is
        let mut s = vec![buf(300, false), buf(10, false)];
        keep_largest(&mut s, 8, 1000);
        assert_eq!(sizes(&s), vec![80]);
    }

    #[test]
    fn class_blocks_cover_the_classes_within_the_memory_budget() {
        for &(n, k) in &[(50_000usize, 1000usize), (1, 1), (10, 3), (1_000_000, 100), (3, 100_000), (200_000_000, 2)] {
            for elem in [4usize, 8] {
                let b = class_blocks(n, k, elem);
                let at = format!("n={n} k={k} elem={elem}");
                assert_eq!((b[0].start, b.last().unwrap().end), (0, k), "{at}");
                assert!(b.windows(2).all(|w| w[0].end == w[1].start), "{at}");
                let budget = BLOCK_BYTES.min((n * k * elem / 8).max(MIN_BLOCK_BYTES));
                for r in &b {
                    assert!(r.len() <= MAX_BLOCK, "{at}");
                    // Over the budget only when a single class is.
                    assert!(r.len() * n * elem <= budget || r.len() == 1, "{at}: {r:?}");
                }
            }
        }
    }

    #[test]
    fn row_tiles_cover_the_rows_evenly() {
        for n in [0usize, 1, 7, 1023, 1025, 5000, 8192, 8193, 50_000, 200_001] {
            for threads in [1usize, 2, 3, 8] {
                let t = row_tiles(n, threads);
                let at = format!("n={n} threads={threads}");
                assert_eq!(t.first().map_or(0, |r| r.start), 0, "{at}");
                assert_eq!(t.last().map_or(0, |r| r.end), n, "{at}");
                assert!(t.windows(2).all(|w| w[0].end == w[1].start), "{at}");
                assert!(t.iter().all(|r| r.len() <= TRANSPOSE_ROWS), "{at}");
                // Equal sizes, the last no longer than the others.
                if let Some((last, rest)) = t.split_last() {
                    assert!(rest.iter().all(|r| r.len() == t[0].len()), "{at}: {t:?}");
                    assert!(last.len() <= t[0].len() && !last.is_empty(), "{at}: {t:?}");
                }
                if n >= MIN_TILE_ROWS * threads {
                    assert_eq!(t.len() % threads, 0, "{at}: {t:?}");
                }
            }
        }
    }

    #[test]
    fn check_rows_names_the_scans_error() {
        check_rows_like_scan(|v| v);
        check_rows_like_scan(|v| v as f32);
    }

    #[test]
    fn tiles_match_definition() {
        check_tiles(|v| v);
        check_tiles(|v| v as f32);
    }

    #[test]
    fn transpose_matches_scalar_f64() {
        check(|v| v);
    }

    #[test]
    fn transpose_matches_scalar_f32() {
        check(|v| v as f32);
    }
}
