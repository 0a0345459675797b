//! Short parallel work shared with the calling thread.
//!
//! Handing a job of a few tens of microseconds to rayon from a thread outside its pool costs
//! about as much as the job: the caller sleeps until a pool thread has woken up, run the job and
//! woken it again. [`map_fold_here`] instead lets the calling thread work on the chunks itself,
//! claiming them one at a time from a shared counter, while pool threads, once awake, claim the
//! remaining ones. The caller never sleeps: if no pool thread wakes in time it simply maps every
//! chunk; it then waits (spinning) only for chunks a pool thread has already started.
//!
//! Results are stored per chunk and folded in chunk order, so they do not depend on who mapped
//! which chunk, nor on the number of threads.

use std::any::Any;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Chunks mapped before their results are folded (bounds the memory of the partial results).
const WAVE: usize = 64;

type Outcome<P, E> = Result<Result<P, E>, Box<dyn Any + Send>>;

/// State shared, through an `Arc`, by the caller and the tasks handed to the pool.
struct Shared<P, E> {
    /// Next chunk to claim.
    next: AtomicUsize,
    /// Chunks mapped (by anyone).
    finished: AtomicUsize,
    slots: Vec<Mutex<Option<Outcome<P, E>>>>,
}

/// One participant: maps chunks until none is left. It refers to the caller's `map` and chunk
/// list through raw pointers, since pool tasks must be `'static`.
struct Task<P, E> {
    shared: Arc<Shared<P, E>>,
    map: *const (),
    call: unsafe fn(*const (), Range<usize>) -> Result<P, E>,
    chunks: *const Range<usize>,
    n: usize,
}

// SAFETY: the pointers are only dereferenced for a claimed chunk (see `Task::run`), while the
// caller of `map_fold_here` is still waiting; `map` is `Sync`, the chunk list is read-only, and
// `P` and `E` are `Send`.
unsafe impl<P: Send, E: Send> Send for Task<P, E> {}

/// Calls the `M` behind `m`.
///
/// # Safety
/// `m` must point to a live `M`.
unsafe fn call<P, E, M: Fn(Range<usize>) -> Result<P, E>>(m: *const (), r: Range<usize>) -> Result<P, E> {
    // SAFETY: `m` points to a live `M` (the caller's contract), which is `Sync`, so calling it
    // through a shared reference from any thread is sound.
    unsafe { (*(m as *const M))(r) }
}

impl<P: Send, E: Send> Task<P, E> {
    fn run(&self) {
        loop {
            let i = self.shared.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                return;
            }
            // SAFETY: chunk i (< n) is claimed by this task alone. The caller does not return
            // before `finished` reaches n, which counts this chunk only after the call below,
            // so `map` and the chunk list are alive throughout. A task that starts after every
            // chunk was claimed returns above without touching them.
            let r = catch_unwind(AssertUnwindSafe(|| unsafe { (self.call)(self.map, (*self.chunks.add(i)).clone()) }));
            *self.shared.slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            self.shared.finished.fetch_add(1, Ordering::Release);
        }
    }
}

/// Maps every chunk (the caller and up to `rayon::current_num_threads() - 1` pool threads,
/// in waves of `WAVE`) and folds the results in chunk order. The first error in chunk order
/// wins; a panic in `map` is resumed on the calling thread.
pub fn map_fold_here<P, E, M, F>(chunks: &[Range<usize>], map: M, mut fold: F) -> Result<(), E>
where
    P: Send + 'static,
    E: Send + 'static,
    M: Fn(Range<usize>) -> Result<P, E> + Sync,
    F: FnMut(P),
{
    if chunks.len() == 1 {
        fold(map(chunks[0].clone())?);
        return Ok(());
    }
    for wave in chunks.chunks(WAVE) {
        let n = wave.len();
        let shared = Arc::new(Shared {
            next: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            slots: (0..n).map(|_| Mutex::new(None)).collect(),
        });
        let task = || Task {
            shared: Arc::clone(&shared),
            map: &map as *const M as *const (),
            call: call::<P, E, M>,
            chunks: wave.as_ptr(),
            n,
        };
        // The caller is one of the workers: with as many threads as the pool has, not one
        // more (a third thread on two cores would only be switched in and out).
        for _ in 0..(rayon::current_num_threads().saturating_sub(1)).min(n - 1) {
            let t = task();
            rayon::spawn(move || t.run());
        }
        task().run();
        // Only chunks already being mapped by pool threads remain.
        let mut spins = 0u32;
        while shared.finished.load(Ordering::Acquire) < n {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        for slot in &shared.slots {
            let r = slot.lock().unwrap_or_else(|e| e.into_inner()).take().expect("every chunk was mapped");
            match r {
                Ok(part) => fold(part?),
                Err(panic) => resume_unwind(panic),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(n: usize, size: usize) -> Vec<Range<usize>> {
        (0..n).step_by(size).map(|s| s..(s + size).min(n)).collect()
    }

    #[test]
    fn folds_every_chunk_in_order_for_any_thread_count() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                for (n, size) in [(1, 1), (10, 3), (1000, 7), (100_000, 97)] {
                    let mut seen = Vec::new();
                    map_fold_here::<_, (), _, _>(&chunks(n, size), Ok, |r| seen.push(r)).unwrap();
                    assert_eq!(seen, chunks(n, size), "threads={threads} n={n}");
                }
            });
            // From a thread outside the pool, as the Python glue calls it.
            let mut seen = Vec::new();
            map_fold_here::<_, (), _, _>(&chunks(5000, 13), Ok, |r| seen.push(r)).unwrap();
            assert_eq!(seen, chunks(5000, 13), "caller outside the pool");
        }
    }

    #[test]
    fn first_error_in_chunk_order_wins_and_panics_propagate() {
        let c = chunks(1000, 10);
        let err = map_fold_here(&c, |r| if r.start >= 500 { Err(r.start) } else { Ok(()) }, |_| {});
        assert_eq!(err, Err(500));
        let caught = std::panic::catch_unwind(|| {
            map_fold_here::<(), (), _, _>(&c, |r| if r.start == 990 { panic!("boom") } else { Ok(()) }, |_| {})
        });
        assert!(caught.is_err());
    }
}
