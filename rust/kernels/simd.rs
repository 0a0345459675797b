//! The one SIMD layer: one CPU feature check for the whole crate ([`level`], detected once
//! and cached), and one way to dispatch.
//!
//! Every vectorised kernel is a portable function plus its AVX2 twin, and one dispatcher that
//! asks [`level`] which to run:
//! - loops the compiler vectorises on its own are written once and compiled twice by
//!   [`multiversion!`] (baseline x86-64, and with AVX2 enabled);
//! - kernels written with intrinsics have a portable function next to them (`*_portable`), which
//!   is the production fallback and what the tests compare the AVX2 twin to, bitwise.
//!
//! Only AVX2 is enabled, never FMA: no kernel uses an FMA intrinsic, and Rust never contracts
//! `a * b + c` into an FMA on its own, so both copies give bitwise-identical results; only the
//! speed differs.
//!
//! Under `cargo test`, each dispatcher records which path it took ([`record`]), so that a test
//! (`tests_simd`) fails when a kernel takes the portable path on a CPU that has AVX2.

use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction set the dispatchers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Baseline code (SSE2 on x86-64, or any other architecture).
    Portable,
    /// x86-64 with AVX2.
    Avx2,
}

/// 0: not detected yet; 1: portable; 2: AVX2.
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The instruction set of this CPU, detected on the first call and cached. The one CPU
/// feature check of the crate.
#[inline]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Portable,
        2 => Level::Avx2,
        _ => {
            let l = detect();
            LEVEL.store(if l == Level::Avx2 { 2 } else { 1 }, Ordering::Relaxed);
            l
        }
    }
}

fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        return Level::Avx2;
    }
    Level::Portable
}

/// Whether the AVX2 twins run (the CPU has AVX2).
#[inline]
pub fn avx2() -> bool {
    level() == Level::Avx2
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
    /// The (confidence, correct) pair cells (`pairs::cells_of`).
    PairCells,
}

/// Per kernel, how many times its dispatcher took the portable and the AVX2 path, in this
/// process (tests only).
#[cfg(test)]
static TAKEN: [[std::sync::atomic::AtomicUsize; 2]; 8] = [const { [const { std::sync::atomic::AtomicUsize::new(0) }; 2] }; 8];

/// Records that the dispatcher of `kernel` took `level` (tests only; nothing in release code).
#[inline(always)]
pub fn record(kernel: Kernel, level: Level) {
    #[cfg(test)]
    TAKEN[kernel as usize][(level == Level::Avx2) as usize].fetch_add(1, Ordering::Relaxed);
    #[cfg(not(test))]
    let _ = (kernel, level);
}

/// (portable, AVX2) dispatches of `kernel` so far in this process (tests only).
#[cfg(test)]
pub fn taken(kernel: Kernel) -> [usize; 2] {
    let t = &TAKEN[kernel as usize];
    [t[0].load(Ordering::Relaxed), t[1].load(Ordering::Relaxed)]
}

/// Defines `fn name<T: Bound>(args) -> ret` (or `fn name(args)`) whose body is compiled for
/// both instruction sets, dispatched on [`level`].
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
                if $crate::kernels::simd::avx2() {
                    $crate::kernels::simd::record($crate::kernels::simd::Kernel::Multiversion, $crate::kernels::simd::Level::Avx2);
                    // SAFETY: `avx2` needs only the AVX2 feature, which `simd::avx2()` found on
                    // this CPU; the body is safe code (bounds-checked indexing), so it is in
                    // bounds whatever the data, even if another thread changes it meanwhile.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $crate::kernels::simd::record($crate::kernels::simd::Kernel::Multiversion, $crate::kernels::simd::Level::Portable);
            inner($($arg),*)
        }
    };
    // The same without a type parameter.
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn inner($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) {
                    inner($($arg),*)
                }
                if $crate::kernels::simd::avx2() {
                    $crate::kernels::simd::record($crate::kernels::simd::Kernel::Multiversion, $crate::kernels::simd::Level::Avx2);
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $crate::kernels::simd::record($crate::kernels::simd::Kernel::Multiversion, $crate::kernels::simd::Level::Portable);
            inner($($arg),*)
        }
    };
}

pub(crate) use multiversion;
