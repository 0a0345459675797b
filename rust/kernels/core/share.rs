//! Short parallel work shared with the calling thread.
//!
//! Handing a job of a few tens of microseconds to rayon from a thread outside its pool costs
//! about as much as the job: the caller sleeps until a pool thread has woken up, run the job and
//! woken it again. [`map_fold_here`] instead lets the calling thread work on the chunks itself,
//! claiming them one at a time from a shared counter, while pool threads, once awake, claim the
//! remaining ones. The caller never sleeps: if no pool thread wakes in time it simply maps every
//! chunk; it then waits (spinning) only for chunks a pool thread has already started. (rayon's
//! own scoped work, `in_place_scope`, would also make the caller wait for pool threads that
//! have not woken yet, to run jobs that then find nothing to do.)
//!
//! Results are stored per chunk and folded in chunk order, so they do not depend on who mapped
//! which chunk, nor on the number of threads.
//!
//! # Invariants
//! Pool tasks must be `'static` (`rayon::spawn`), but `map` and the chunk list are borrowed
//! from the caller's frame, so a task ([`Task`]) refers to them by raw pointers. That is sound
//! because of these invariants, which every unsafe block below relies on:
//! 1. *Claims.* A participant (the caller or a pool task) dereferences the pointers only for a
//!    chunk index it claimed, `i = next.fetch_add(1) < n`: each index is claimed once.
//! 2. *Completion.* Once a claimed chunk's `map` call has returned or panicked (the panic is
//!    caught), its outcome is stored in its slot and `finished` is incremented (Release): the
//!    claimant uses the pointers no more.
//! 3. *The caller waits.* Before the caller leaves a wave, by returning or by unwinding through
//!    it, [`Wait`] closes the claims (`next` raised to at least n, so that every later claim
//!    fails) and spins until `finished` (Acquire) reaches the number of indices claimed. Every
//!    use of `map` and of the chunk list therefore happens before they go out of scope.
//! 4. *Late tasks.* A pool task that starts after the claims are closed (its thread woke late,
//!    maybe after `map_fold_here` returned) finds no index below n and returns: it touches only
//!    the state it shares through its `Arc`, never its raw pointers, dangling by then.
//! 5. *Threads.* `map` is `Sync` (called through `&M` from several threads at once), the chunk
//!    list is only read, and results, errors and panic payloads are `Send` and move through the
//!    slots' mutexes.
//!
//! The tests below exercise these under Miri, which checks every access through the pointers
//! for use after free and data races: `cargo +nightly miri test core::share` with
//! `MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks"` (rayon's
//! crossbeam-epoch fails Stacked Borrows on its own; its pool threads outlive the tests).

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
    /// Next chunk to claim (invariant 1; raised to at least `n` when the claims close).
    next: AtomicUsize,
    /// Claimed chunks mapped, by anyone (invariant 2).
    finished: AtomicUsize,
    slots: Vec<Mutex<Option<Outcome<P, E>>>>,
}

/// One participant: maps chunks until none is left. It refers to the caller's `map` and chunk
/// list through raw pointers, since pool tasks must be `'static` (see the invariants).
struct Task<P, E> {
    shared: Arc<Shared<P, E>>,
    map: *const (),
    call: unsafe fn(*const (), Range<usize>) -> Result<P, E>,
    chunks: *const Range<usize>,
    n: usize,
}

// SAFETY: a `Task` moves to a pool thread with two raw pointers, `map` (to an `M: Sync`) and
// `chunks` (to `n` read-only ranges). They are dereferenced only for a claimed chunk, while the
// caller waits for it (invariants 1-3), and never by a task that starts late (invariant 4);
// through them `M` is only called by shared reference (`Sync`) and the ranges only read. The
// other fields are `Send`: the `Arc` (its `Shared` holds atomics and mutexes of `Send` values,
// as `P` and `E` are), a function pointer and a count.
unsafe impl<P: Send, E: Send> Send for Task<P, E> {}

/// Calls the `M` behind `m`.
///
/// # Safety
/// `m` must point to a live `M` (a claimed chunk's task, invariants 1-3).
unsafe fn call<P, E, M: Fn(Range<usize>) -> Result<P, E> + Sync>(m: *const (), r: Range<usize>) -> Result<P, E> {
    // SAFETY: `m` points to a live `M` (the caller's contract), which is `Sync`, so calling it
    // through a shared reference from any thread is sound.
    unsafe { (*(m as *const M))(r) }
}

impl<P: Send, E: Send> Task<P, E> {
    fn run(&self) {
        loop {
            let i = self.shared.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                // No chunk left, or the claims are closed (invariant 4).
                return;
            }
            // SAFETY: chunk i (< n) is claimed by this task alone (invariant 1), so the caller
            // is still inside the wave, waiting for it (invariant 3): `map` and the chunk list
            // are alive until `finished` counts this chunk, which happens only after the call
            // below has returned or unwound (invariant 2). `self.chunks.add(i)` stays within the
            // `n` ranges of the wave, and `self.call` is `call::<P, E, M>` for the `M` behind
            // `self.map`.
            let r = catch_unwind(AssertUnwindSafe(|| unsafe { (self.call)(self.map, (*self.chunks.add(i)).clone()) }));
            *self.shared.slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            self.shared.finished.fetch_add(1, Ordering::Release);
        }
    }
}

/// Invariant 3, as a guard: when dropped (after the caller's own share of a wave, or while
/// unwinding through it), closes the claims and waits until every claimed chunk is mapped.
struct Wait<'a, P, E> {
    shared: &'a Shared<P, E>,
    n: usize,
}

impl<P, E> Drop for Wait<'_, P, E> {
    fn drop(&mut self) {
        // Every index below n claimed so far was claimed before this (one modification order
        // of `next`), and none can be claimed after it.
        let claimed = self.shared.next.fetch_max(self.n, Ordering::Relaxed).min(self.n);
        // Only chunks already being mapped by pool threads remain. The Acquire load that sees
        // them all finished synchronises with their Release increments (all increments are
        // read-modify-writes: one release sequence).
        let mut spins = 0u32;
        while self.shared.finished.load(Ordering::Acquire) < claimed {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
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
        // From here until it is dropped, the caller does not leave the wave with a chunk still
        // being mapped, even by unwinding (invariant 3).
        let wait = Wait { shared: &shared, n };
        // The caller is one of the workers: with as many threads as the pool has, not one
        // more (a third thread on two cores would only be switched in and out).
        for _ in 0..(rayon::current_num_threads().saturating_sub(1)).min(n - 1) {
            let t = task();
            rayon::spawn(move || t.run());
        }
        task().run();
        drop(wait);
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

    /// Inputs are smaller under Miri, which interprets every step.
    const fn sized(native: usize, miri: usize) -> usize {
        if cfg!(miri) {
            miri
        } else {
            native
        }
    }

    fn chunks(n: usize, size: usize) -> Vec<Range<usize>> {
        (0..n).step_by(size).map(|s| s..(s + size).min(n)).collect()
    }

    #[test]
    fn folds_every_chunk_in_order_for_any_thread_count() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                for (n, size) in [(1, 1), (10, 3), (1000, 7), (sized(100_000, 2000), 97)] {
                    let mut seen = Vec::new();
                    map_fold_here::<_, (), _, _>(&chunks(n, size), Ok, |r| seen.push(r)).unwrap();
                    assert_eq!(seen, chunks(n, size), "threads={threads} n={n}");
                }
            });
            // From a thread outside the pool, as the Python glue calls it.
            let mut seen = Vec::new();
            map_fold_here::<_, (), _, _>(&chunks(sized(5000, 500), 13), Ok, |r| seen.push(r)).unwrap();
            assert_eq!(seen, chunks(sized(5000, 500), 13), "caller outside the pool");
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

    /// Invariant 3: whatever the outcome (values, an error, a panic), no call of `map` is still
    /// running when `map_fold_here` returns, and the data `map` borrows can be freed at once
    /// (Miri checks the freed memory is never read: invariant 4). A panic in `map` is caught
    /// and resumed after the wait, so this test does not unwind through the guard;
    /// `the_guard_waits_for_claimed_chunks_and_closes_the_claims` does. From inside pools of
    /// 1 to 3 threads and from a thread outside the pool; each chunk sleeps a little, so that
    /// pool threads are still mapping when the caller has run out of chunks.
    #[test]
    fn no_chunk_is_mapped_after_the_call_whatever_its_outcome() {
        let active = AtomicUsize::new(0);
        let rounds = sized(20, 3);
        let check = |fail_at: Option<usize>, panic_at: Option<usize>| {
            for round in 0..rounds {
                let n = 8 + round;
                let data: Vec<usize> = (0..n).collect();
                let list = chunks(n, 1);
                let map = |r: Range<usize>| {
                    active.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_micros(50));
                    let v: usize = data[r.clone()].iter().sum();
                    active.fetch_sub(1, Ordering::SeqCst);
                    if Some(r.start) == panic_at {
                        panic!("chunk {}", r.start);
                    }
                    if Some(r.start) == fail_at {
                        return Err(r.start);
                    }
                    Ok(v)
                };
                let mut total = 0;
                let res = catch_unwind(AssertUnwindSafe(|| map_fold_here(&list, map, |v| total += v)));
                assert_eq!(active.load(Ordering::SeqCst), 0, "a chunk still mapped after the call");
                // The borrowed data goes away at once.
                drop(list);
                drop(data);
                match (panic_at, fail_at) {
                    (Some(_), _) => assert!(res.is_err()),
                    (None, Some(f)) => assert_eq!(res.unwrap(), Err(f)),
                    (None, None) => {
                        assert_eq!(res.unwrap(), Ok(()));
                        assert_eq!(total, n * (n - 1) / 2);
                    }
                }
            }
        };
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                check(None, None);
                check(Some(1), None);
                check(None, Some(0));
            });
        }
        check(None, None);
        check(Some(5), None);
        check(None, Some(7));
    }

    /// Invariant 3 on the unwinding path itself: the guard, dropped while a chunk is still
    /// being mapped by another thread, waits for it, and closes the claims so that no chunk
    /// starts after it.
    #[test]
    fn the_guard_waits_for_claimed_chunks_and_closes_the_claims() {
        let shared = Arc::new(Shared::<(), ()> {
            next: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            slots: (0..4).map(|_| Mutex::new(None)).collect(),
        });
        // A participant has claimed chunk 0 and is still mapping it.
        assert_eq!(shared.next.fetch_add(1, Ordering::Relaxed), 0);
        let done = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(if cfg!(miri) { 1 } else { 20 }));
                done.store(1, Ordering::SeqCst);
                shared.finished.fetch_add(1, Ordering::Release);
            });
            drop(Wait { shared: &shared, n: 4 });
            assert_eq!(done.load(Ordering::SeqCst), 1, "the guard returned before the claimed chunk was mapped");
        });
        // Closed: no index below n can be claimed any more.
        assert!(shared.next.fetch_add(1, Ordering::Relaxed) >= 4);
    }
}
