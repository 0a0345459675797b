//! Function multiversioning: the hot loops are compiled twice, for the baseline x86-64 (SSE2)
//! and for AVX2 + FMA, and the AVX2 copy runs when the CPU has it (checked once by std and
//! cached). Rust never contracts `a * b + c` into an FMA on its own, so both copies give
//! bitwise-identical results; only the speed differs.

/// Defines `fn name<T: Bound>(args) -> ret` (or `fn name(args)`) whose body is compiled for both instruction sets.
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident<$g:ident: $b:path>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        $vis fn $name<$g: $b>($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn inner<$g: $b>($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2<$g: $b>($($arg: $ty),*) -> $ret {
                    inner($($arg),*)
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports the features `avx2` was compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
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
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) {
                    inner($($arg),*)
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports the features `avx2` was compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            inner($($arg),*)
        }
    };
}

pub(crate) use multiversion;
