//! The calibration test's redraws of top-label outcomes, eight resamples at a time: for each
//! row of a cell's run, the eight resamples' uniform draws ([`draw_tagged`]) tested against the
//! row's hit threshold, and the hits counted or their count units summed per resample.
//!
//! The draws are SplitMix64 outputs, two 64-bit multiplies each. The portable loop makes them
//! sixteen scalar multiplies a row; the AVX2 twin ([`x86::hit_sums`]) hashes four resamples per
//! vector (a 64-bit product from three 32 x 32-bit ones) and tests and adds in the same
//! registers. Integer arithmetic throughout, so both give the same sums, bit for bit.

use crate::kernels::weighted::draws::draw_tagged;

/// Resamples [`hit_sums`] draws at once.
pub const LANES: usize = 8;

/// Per resample `j`, over the rows `(tag, threshold, count units)` of `run`: the number of
/// rows whose draw `draw_tagged(keys[j], tag) >> 11` is below the threshold (`units` false),
/// or the sum of those rows' count units (`units` true; the caller keeps it below 2^64).
pub fn hit_sums(run: &[(u64, u64, u64)], keys: &[u64; LANES], units: bool) -> [u64; LANES] {
    use crate::kernels::core::simd::{record, Kernel, Level};
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::core::simd::avx2() {
        record(Kernel::HitLanes, Level::Avx2);
        // SAFETY: AVX2 is present (the crate's one feature check); the twin reads `run` and
        // `keys` through safe indexing only.
        return unsafe { x86::hit_sums(run, keys, units) };
    }
    record(Kernel::HitLanes, Level::Portable);
    hit_sums_portable(run, keys, units)
}

/// The portable [`hit_sums`] (the path without AVX2, and what the twin is compared to).
pub fn hit_sums_portable(run: &[(u64, u64, u64)], keys: &[u64; LANES], units: bool) -> [u64; LANES] {
    let mut sum = [0u64; LANES];
    for &(g, thr, c1) in run {
        // the lanes' tests first, then their masks added (a select compiles to a branch the
        // draws mispredict)
        let mut hit = [0u64; LANES];
        for (h, &key) in hit.iter_mut().zip(keys) {
            *h = (((draw_tagged(key, g) >> 11) < thr) as u64).wrapping_neg();
        }
        let add = if units { c1 } else { 1 };
        for (s, h) in sum.iter_mut().zip(hit) {
            *s = s.wrapping_add(add & h);
        }
    }
    sum
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::LANES;
    use crate::kernels::weighted::draws::{MIX_MULTIPLIERS, MIX_SHIFTS};
    use std::arch::x86_64::*;

    /// `z * c` modulo 2^64 in each lane: `lo(z) lo(c) + (lo(z) hi(c) + hi(z) lo(c)) << 32`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mul64(z: __m256i, c_lo: __m256i, c_hi: __m256i) -> __m256i {
        let a = _mm256_mul_epu32(z, c_lo);
        let b = _mm256_mul_epu32(z, c_hi);
        let c = _mm256_mul_epu32(_mm256_srli_epi64::<32>(z), c_lo);
        _mm256_add_epi64(a, _mm256_slli_epi64::<32>(_mm256_add_epi64(b, c)))
    }

    /// `draws::mix64` in each lane (its shifts `MIX_SHIFTS`, as immediates).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mix64(z: __m256i, m1: (__m256i, __m256i), m2: (__m256i, __m256i)) -> __m256i {
        const S: [u32; 3] = MIX_SHIFTS;
        let z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64::<{ S[0] as i32 }>(z)), m1.0, m1.1);
        let z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64::<{ S[1] as i32 }>(z)), m2.0, m2.1);
        _mm256_xor_si256(z, _mm256_srli_epi64::<{ S[2] as i32 }>(z))
    }

    /// A 64-bit constant as its broadcast low and high 32-bit halves (`mul64`'s operands).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn split(c: u64) -> (__m256i, __m256i) {
        (_mm256_set1_epi64x(c as u32 as i64), _mm256_set1_epi64x((c >> 32) as i64))
    }

    /// The AVX2 twin of [`super::hit_sums_portable`]: two vectors of four resamples. A draw
    /// shifted right by 11 is below 2^53 and a threshold at most 2^53 + 1, so the signed
    /// 64-bit compare is the unsigned one.
    #[target_feature(enable = "avx2")]
    pub(super) fn hit_sums(run: &[(u64, u64, u64)], keys: &[u64; LANES], units: bool) -> [u64; LANES] {
        let (m1, m2) = (split(MIX_MULTIPLIERS[0]), split(MIX_MULTIPLIERS[1]));
        let k0 = _mm256_set_epi64x(keys[3] as i64, keys[2] as i64, keys[1] as i64, keys[0] as i64);
        let k1 = _mm256_set_epi64x(keys[7] as i64, keys[6] as i64, keys[5] as i64, keys[4] as i64);
        let (mut s0, mut s1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for &(g, thr, c1) in run {
            let (g, thr) = (_mm256_set1_epi64x(g as i64), _mm256_set1_epi64x(thr as i64));
            let add = _mm256_set1_epi64x(if units { c1 as i64 } else { 1 });
            let d0 = _mm256_srli_epi64::<11>(mix64(_mm256_add_epi64(k0, g), m1, m2));
            let d1 = _mm256_srli_epi64::<11>(mix64(_mm256_add_epi64(k1, g), m1, m2));
            s0 = _mm256_add_epi64(s0, _mm256_and_si256(_mm256_cmpgt_epi64(thr, d0), add));
            s1 = _mm256_add_epi64(s1, _mm256_and_si256(_mm256_cmpgt_epi64(thr, d1), add));
        }
        let mut out = [0u64; LANES];
        // SAFETY: `out` is eight u64, 64 bytes: the two unaligned stores write exactly it.
        unsafe {
            _mm256_storeu_si256(out.as_mut_ptr().cast(), s0);
            _mm256_storeu_si256(out.as_mut_ptr().add(4).cast(), s1);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::core::simd::{with_level, Level};

    /// Both paths give the same sums, bit for bit, with thresholds at their ends (no draw
    /// hits 0; every draw hits 2^53 + 1) and count units at their bound.
    #[test]
    fn the_twin_gives_the_portable_sums() {
        let mut next = crate::kernels::tests::xorshift_bits(0x2545_f491_4f6c_dd1du64);
        for n in [0usize, 1, 7, 300] {
            let run: Vec<(u64, u64, u64)> = (0..n)
                .map(|i| {
                    let thr = match i % 4 {
                        0 => 0,
                        1 => (1 << 53) + 1,
                        _ => next() >> 11,
                    };
                    (next(), thr, if i % 3 == 0 { (1 << 61) - 1 } else { next() >> 3 })
                })
                .collect();
            let keys: [u64; LANES] = std::array::from_fn(|_| next());
            for units in [false, true] {
                let want = hit_sums_portable(&run, &keys, units);
                // the portable loop against the plain rule, lane by lane
                for (j, &w) in want.iter().enumerate() {
                    let direct = run.iter().filter(|r| (draw_tagged(keys[j], r.0) >> 11) < r.1).fold(0u64, |s, r| s.wrapping_add(if units { r.2 } else { 1 }));
                    assert_eq!(w, direct, "n {n} lane {j}");
                }
                for level in [Level::Portable, Level::Avx2] {
                    assert_eq!(with_level(level, || hit_sums(&run, &keys, units)), want, "n {n} units {units} {level:?}");
                }
            }
        }
    }
}
