//! Fixed partitions of the rows and deterministic parallel reductions over them.
//!
//! Chunk boundaries depend only on the shape (N, K), never on the number of threads, and
//! partial results are combined strictly in chunk order, so every floating-point sum is
//! performed in the same order for any `RAYON_NUM_THREADS`: results are bitwise identical.

use rayon::prelude::*;
use std::ops::Range;

/// About this many matrix entries per chunk.
pub const CHUNK_ENTRIES: usize = 1 << 17;
/// Chunks evaluated in parallel before their partials are folded in order (bounds memory): at
/// least this many, and at least [`WAVE_PER_THREAD`] per thread of the pool ([`wave`]).
pub const WAVE: usize = 8;
/// Chunks per thread in one wave: a wave of a fixed 8 chunks kept at most 8 threads busy and
/// left them idle while the calling thread folded (SCE and `evaluate` stopped scaling at 8
/// threads on a 16-core host, issue 29).
pub const WAVE_PER_THREAD: usize = 4;

/// Chunks per wave of [`map_fold`] on the current pool. Only the memory held and the speed
/// depend on it: partials are folded in chunk order whatever the wave.
pub fn wave() -> usize {
    WAVE.max(WAVE_PER_THREAD * rayon::current_num_threads())
}

/// Row ranges of about [`CHUNK_ENTRIES`] entries each.
pub fn row_chunks(n: usize, k: usize) -> Vec<Range<usize>> {
    row_chunks_min(n, k, CHUNK_ENTRIES)
}

/// Row ranges of as equal sizes as possible, each of at most about `max_entries` entries but
/// at least `min_rows` rows (for work split over the threads with a per-chunk setup cost:
/// [`crate::kernels::core::share::map_fold_here`]).
pub fn row_chunks_split(n: usize, k: usize, max_entries: usize, min_rows: usize) -> Vec<Range<usize>> {
    let rows = (max_entries / k.max(1)).max(min_rows).max(1);
    let parts = n.div_ceil(rows).max(1);
    let rows = n.div_ceil(parts).max(1);
    (0..n).step_by(rows).map(|s| s..(s + rows).min(n)).collect()
}

/// Row ranges of at least about `min_entries` entries each (callers whose per-chunk partial
/// state is large ask for larger chunks, so that folding the partials stays cheap).
pub fn row_chunks_min(n: usize, k: usize, min_entries: usize) -> Vec<Range<usize>> {
    let rows = (min_entries.max(CHUNK_ENTRIES) / k.max(1)).max(1);
    (0..n).step_by(rows).map(|s| s..(s + rows).min(n)).collect()
}

/// Maps every chunk (in parallel, in waves of [`wave`] chunks) and folds the partials in chunk
/// order.
/// The first error, in chunk order, wins.
pub fn map_fold<P, E, M, F>(chunks: &[Range<usize>], map: M, mut fold: F) -> Result<(), E>
where
    P: Send,
    E: Send,
    M: Fn(Range<usize>) -> Result<P, E> + Sync,
    F: FnMut(P),
{
    if chunks.len() == 1 {
        fold(map(chunks[0].clone())?);
        return Ok(());
    }
    for wave in chunks.chunks(wave()) {
        let parts: Vec<Result<P, E>> = wave.par_iter().map(|r| map(r.clone())).collect();
        for p in parts {
            fold(p?);
        }
    }
    Ok(())
}

/// One value per thread of the rayon pool (and one for a calling thread outside it), kept for
/// one kernel call and reused by every job a thread runs in it: scratch made per job (as
/// rayon's `map_init` does, once per split) is allocated, grown and faulted in again each time.
/// The closure given to [`PerThread::with`] must not itself run rayon jobs (another job could
/// then run on the same thread and wait for the value held).
pub(crate) struct PerThread<T>(Vec<std::sync::Mutex<T>>);

impl<T: Default> PerThread<T> {
    pub(crate) fn new() -> Self {
        PerThread((0..rayon::current_num_threads() + 1).map(|_| std::sync::Mutex::new(T::default())).collect())
    }

    /// The values, one per thread (in no particular order), once the call's jobs are done.
    pub(crate) fn into_values(self) -> impl Iterator<Item = T> {
        self.0.into_iter().map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `f` with this thread's value.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let at = rayon::current_thread_index().map_or(0, |i| i + 1) % self.0.len();
        let mut value = self.0[at].lock().unwrap_or_else(|e| e.into_inner());
        f(&mut value)
    }
}
