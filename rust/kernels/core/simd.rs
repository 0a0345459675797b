//! The one SIMD layer: one CPU feature check for the whole crate ([`level`], detected once
//! and cached), and one way to dispatch.
//!
//! Every vectorised kernel is a portable function plus its AVX2 twin, and one dispatcher that
//! asks [`level`] (through [`avx2`]) which to run:
//! - loops the compiler vectorises on its own are written once and compiled twice by
//!   [`multiversion!`] (baseline x86-64, and with AVX2 enabled);
//! - kernels written with intrinsics have a portable function next to them (`*_portable`), which
//!   is the production fallback and what the tests compare the AVX2 twin to, bitwise.
//!
//! Only AVX2 is enabled, never FMA: no kernel uses an FMA intrinsic, and Rust never contracts
//! `a * b + c` into an FMA nor reassociates a sum on its own, so every copy gives
//! bitwise-identical results; only the speed differs.
//!
//! # Levels, and the `CALIBKIT_SIMD` cap
//! [`Level::Avx512`] is detected (AVX2 and AVX-512 F, BW, DQ and VL) and implies AVX2: [`avx2`]
//! is true there, so every AVX2 twin runs on such CPUs. `CALIBKIT_SIMD`, read once on the
//! first call of [`level`], caps the level: `portable`, `avx2` or `avx512` (case-insensitive);
//! unset, empty, unknown, or above what the CPU has, it leaves the detected level. It compares
//! the paths on one machine (tests/test_dispatch.py checks that every level gives bitwise the
//! same metric values; benchmarks run once per level, back to back) and rules out a vector path
//! in the field (`CALIBKIT_SIMD=portable`).
//!
//! # No AVX-512 twin
//! No kernel has an AVX-512 twin: those built did not pay (docs/simd.md). A new AVX-512 twin
//! goes behind this same [`level`], next to its AVX2 twin, tested bitwise against the portable
//! function.
//!
//! Under `cargo test`, each dispatcher records which path it took ([`record`]), so that a test
//! (`tests_simd`) fails when a kernel takes the portable path on a CPU that has AVX2 (AVX-512
//! CPUs included).

use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction set the dispatchers use (ordered: a level implies the ones below it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Baseline code (SSE2 on x86-64, or any other architecture).
    Portable,
    /// x86-64 with AVX2.
    Avx2,
    /// x86-64 with AVX2 and AVX-512 F, BW, DQ and VL.
    Avx512,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    /// The name `CALIBKIT_SIMD` takes for this level.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }
}

/// 0: not detected yet; else 1 + the level's index.
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The instruction set the dispatchers use: this CPU's, capped by `CALIBKIT_SIMD`; detected on
/// the first call and cached. The one CPU feature check of the crate.
#[inline]
pub fn level() -> Level {
    #[cfg(test)]
    if let Some(l) = FORCED.with(|f| f.get()) {
        return l;
    }
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Portable,
        2 => Level::Avx2,
        3 => Level::Avx512,
        _ => {
            let l = detect().min(allowed());
            LEVEL.store(1 + l as u8, Ordering::Relaxed);
            l
        }
    }
}

/// The level `CALIBKIT_SIMD` allows (the highest when unset).
pub fn allowed() -> Level {
    cap(std::env::var("CALIBKIT_SIMD").ok().as_deref())
}

/// What this CPU has.
pub fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        if has!("avx2") {
            if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
                return Level::Avx512;
            }
            return Level::Avx2;
        }
    }
    Level::Portable
}

/// The cap a `CALIBKIT_SIMD` value sets (no cap when unset, empty or unknown).
fn cap(var: Option<&str>) -> Level {
    let v = var.unwrap_or("").trim();
    Level::ALL.into_iter().find(|l| l.name().eq_ignore_ascii_case(v)).unwrap_or(Level::Avx512)
}

/// Whether the AVX2 twins run (the CPU has AVX2, and `CALIBKIT_SIMD` allows it).
#[inline]
pub fn avx2() -> bool {
    level() >= Level::Avx2
}

/// The vectorised kernels, as the dispatch records name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    TopLabelScan,
    Cells,
    SceRows,
    Compact,
    Transpose,
    Multiversion,
    /// The top-label scan of long rows (`toplabel_scan::long_row`).
    LongRowScan,
    /// The (confidence, correct) pair cells (`pairs::grouped::cells_of` and the pooled pass).
    PairCells,
    /// The weighted bootstrap's sums of several resamples at once (`weighted::sums::term_sums_lanes`).
    TermLanes,
    /// The calibration test's redraws of eight resamples at once (`weighted::hits::hit_sums`).
    HitLanes,
}

/// Room for this many kernels in the records (more than the enum has).
#[cfg(test)]
const RECORDED: usize = 32;

/// Per kernel and level, how many times its dispatcher took that path, in this process (tests
/// only).
#[cfg(test)]
static TAKEN: [[std::sync::atomic::AtomicUsize; 3]; RECORDED] =
    [const { [const { std::sync::atomic::AtomicUsize::new(0) }; 3] }; RECORDED];

/// Records that the dispatcher of `kernel` took `level` (tests only; nothing in release code).
#[inline(always)]
pub fn record(kernel: Kernel, level: Level) {
    // (Not while `with_level` caps this thread: those paths are taken on purpose.)
    #[cfg(test)]
    if FORCED.with(|f| f.get()).is_none() {
        TAKEN[kernel as usize][level as usize].fetch_add(1, Ordering::Relaxed);
    }
    #[cfg(not(test))]
    let _ = (kernel, level);
}

/// (portable, vector: AVX2 or AVX-512) dispatches of `kernel` so far in this process (tests
/// only).
#[cfg(test)]
pub fn taken(kernel: Kernel) -> [usize; 2] {
    let [p, a, b] = taken_at(kernel);
    [p, a + b]
}

/// (portable, AVX2, AVX-512) dispatches of `kernel` so far in this process (tests only).
#[cfg(test)]
pub fn taken_at(kernel: Kernel) -> [usize; 3] {
    let t = &TAKEN[kernel as usize];
    [t[0].load(Ordering::Relaxed), t[1].load(Ordering::Relaxed), t[2].load(Ordering::Relaxed)]
}

#[cfg(test)]
thread_local! {
    /// The level [`with_level`] forces on this thread (tests only).
    static FORCED: std::cell::Cell<Option<Level>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the dispatchers of this thread capped at `cap` (never above what the CPU
/// has), to compare the paths bitwise in one process (tests only; work that rayon sends to
/// other threads is not capped, so use inputs small enough to stay on this thread).
#[cfg(test)]
pub fn with_level<R>(cap: Level, f: impl FnOnce() -> R) -> R {
    let l = cap.min(detect());
    let old = FORCED.with(|c| c.replace(Some(l)));
    let r = f();
    FORCED.with(|c| c.set(old));
    r
}

/// Defines `fn name<T: Bound>(args) -> ret` (or `fn name(args)`) whose body is compiled for
/// both instruction sets (baseline x86-64, and with AVX2 enabled), dispatched on [`level`].
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident<$g:ident: $b:path>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        $vis fn $name<$g: $b>($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn inner<$g: $b>($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn avx2<$g: $b>($($arg: $ty),*) -> $ret {
                    inner($($arg),*)
                }
                if $crate::kernels::core::simd::avx2() {
                    $crate::kernels::core::simd::record($crate::kernels::core::simd::Kernel::Multiversion, $crate::kernels::core::simd::Level::Avx2);
                    // SAFETY: `avx2` needs only the AVX2 feature, which `simd::avx2()` found on
                    // this CPU; the body is safe code (bounds-checked indexing), so it is in
                    // bounds whatever the data, even if another thread changes it meanwhile.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $crate::kernels::core::simd::record($crate::kernels::core::simd::Kernel::Multiversion, $crate::kernels::core::simd::Level::Portable);
            inner($($arg),*)
        }
    };
    // The same without a type parameter (`-> ()` for none).
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn inner($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) -> $ret {
                    inner($($arg),*)
                }
                if $crate::kernels::core::simd::avx2() {
                    $crate::kernels::core::simd::record($crate::kernels::core::simd::Kernel::Multiversion, $crate::kernels::core::simd::Level::Avx2);
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $crate::kernels::core::simd::record($crate::kernels::core::simd::Kernel::Multiversion, $crate::kernels::core::simd::Level::Portable);
            inner($($arg),*)
        }
    };
}

pub(crate) use multiversion;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_parses_each_level_and_ignores_the_rest() {
        assert_eq!(cap(Some("portable")), Level::Portable);
        assert_eq!(cap(Some(" AVX2 ")), Level::Avx2);
        assert_eq!(cap(Some("avx512")), Level::Avx512);
        for v in [None, Some(""), Some("sse"), Some("avx-512")] {
            assert_eq!(cap(v), Level::Avx512, "{v:?}");
        }
    }
}
