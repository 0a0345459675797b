//! Counter-based random draws of the resamplers: 64 random bits per (seed, stream, index)
//! (SplitMix64), uniforms, and Poisson(1) multiplicities. A draw depends only on its counter,
//! so resamples are the same for any thread count, block size or order of evaluation. The
//! bootstrap's per-row multiplicities ([`Scheme`], [`bootstrap_counts`]) are drawn here.

use crate::kernels::KernelError;

/// SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
#[inline(always)]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> MIX_SHIFTS[0])).wrapping_mul(MIX_MULTIPLIERS[0]);
    z = (z ^ (z >> MIX_SHIFTS[1])).wrapping_mul(MIX_MULTIPLIERS[1]);
    z ^ (z >> MIX_SHIFTS[2])
}

/// SplitMix64's finaliser: the multipliers and shifts of [`mix64`] (also its AVX2 form,
/// `weighted::hits`).
pub(crate) const MIX_MULTIPLIERS: [u64; 2] = [0xbf58_476d_1ce4_e5b9, 0x94d0_49bb_1331_11eb];
pub(crate) const MIX_SHIFTS: [u32; 3] = [30, 27, 31];

/// The key of counter stream `stream` (one per resample) under `seed`.
#[inline(always)]
pub fn stream_key(seed: u64, stream: u64) -> u64 {
    mix64(mix64(seed ^ 0x9e37_79b9_7f4a_7c15) ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03))
}

/// SplitMix64's increment (the golden ratio in 64 bits).
pub(crate) const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The 64 random bits of entry `index` of the stream with key `key`: SplitMix64's
/// `index`-th output from state `key`, so entry i of any stream is computed on its own.
#[inline(always)]
pub fn draw(key: u64, index: u64) -> u64 {
    draw_tagged(key, tag(index))
}

/// The part of [`draw`] that depends on the entry only: loops that draw the same entries for
/// many resamples compute it once.
#[inline(always)]
pub(crate) fn tag(index: u64) -> u64 {
    index.wrapping_add(1).wrapping_mul(GAMMA)
}

/// [`draw`] given the entry's [`tag`].
#[inline(always)]
pub(crate) fn draw_tagged(key: u64, tag: u64) -> u64 {
    mix64(key.wrapping_add(tag))
}

/// The 64 random bits of counter `(seed, stream, index)`.
#[inline(always)]
pub fn bits(seed: u64, stream: u64, index: u64) -> u64 {
    draw(stream_key(seed, stream), index)
}

/// A uniform in [0, 1) with 53 random bits from 64 random bits.
#[inline(always)]
pub fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform in [0, 1) with 53 random bits, from counter `(seed, stream, index)`.
#[inline(always)]
pub fn uniform(seed: u64, stream: u64, index: u64) -> f64 {
    unit(bits(seed, stream, index))
}

/// Cumulative Poisson(1) probabilities P(X <= k), k = 0..16 (the tail beyond 16 is < 1e-15).
pub(crate) const POISSON1_CDF: [f64; 17] = {
    let mut c = [0.0f64; 17];
    let e = 0.367_879_441_171_442_33; // exp(-1)
    let mut term = e;
    let mut acc = 0.0;
    let mut k = 0;
    while k < 17 {
        acc += term;
        c[k] = acc;
        term /= (k + 1) as f64;
        k += 1;
    }
    c
};

/// A Poisson(1) draw by inverse CDF from a uniform: the number of CDF values <= u.
#[inline(always)]
pub fn poisson1(u: f64) -> f64 {
    let mut k = 0u32;
    for &c in POISSON1_CDF.iter() {
        k += (u >= c) as u32;
    }
    k as f64
}

/// Top bits of the random word that index [`POISSON_LUT`].
pub(crate) const LUT_BITS: u32 = 12;
pub(crate) const LUT_SIZE: usize = 1 << LUT_BITS;
/// `POISSON_LUT[j]` is the Poisson(1) draw of every uniform in [j/4096, (j+1)/4096), or
/// `MIXED` when a CDF value falls inside that range (then [`poisson1`] decides: 16 of the 4096
/// ranges, so the branch is almost always predicted).
pub(crate) const MIXED: u8 = u8::MAX;
pub(crate) const POISSON_LUT: [u8; LUT_SIZE] = {
    let mut t = [0u8; LUT_SIZE];
    let mut j = 0;
    while j < LUT_SIZE {
        let lo = j as f64 / LUT_SIZE as f64;
        let hi = (j + 1) as f64 / LUT_SIZE as f64;
        let mut klo = 0u8;
        let mut khi = 0u8;
        let mut k = 0;
        while k < 17 {
            klo += (lo >= POISSON1_CDF[k]) as u8;
            // the largest u in the range is just below hi
            khi += (hi > POISSON1_CDF[k]) as u8;
            k += 1;
        }
        t[j] = if klo == khi { klo } else { MIXED };
        j += 1;
    }
    t
};

/// The Poisson(1) draw of 64 random bits: the same value as `poisson1(unit(x))`, mostly by a
/// table lookup on the top 12 bits.
#[inline(always)]
pub fn poisson_of_bits(x: u64) -> f64 {
    poisson_count(x) as f64
}

/// The largest Poisson(1) draw ([`poisson_count`]).
pub const POISSON_MAX: u64 = 17;

/// [`poisson_of_bits`] as an integer (at most [`POISSON_MAX`]).
#[inline(always)]
pub fn poisson_count(x: u64) -> u32 {
    let v = POISSON_LUT[(x >> (64 - LUT_BITS)) as usize];
    if v != MIXED {
        v as u32
    } else {
        poisson1(unit(x)) as u32
    }
}

/// How rows are reweighted in one bootstrap resample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Independent Poisson(1) multiplicities per row (the "Poisson bootstrap").
    Poisson,
    /// Multinomial(N; 1/N, ..., 1/N) multiplicities: N row indices drawn uniformly.
    Multinomial,
}

impl Scheme {
    pub fn parse(s: &str) -> Result<Self, KernelError> {
        match s {
            "poisson" => Ok(Scheme::Poisson),
            "multinomial" => Ok(Scheme::Multinomial),
            _ => Err(KernelError::Parameter(format!("weights must be 'poisson' or 'multinomial', got {s:?}"))),
        }
    }
}

/// Per-row multiplicities of bootstrap resample `r` into `w` (length N).
pub fn bootstrap_weights(scheme: Scheme, seed: u64, r: u64, w: &mut [f64]) {
    bootstrap_counts(scheme, seed, r, w);
}

/// [`bootstrap_weights`] as whole numbers of any type that holds them (`f64`, `u32`): the same
/// multiplicities.
pub fn bootstrap_counts<T: Copy + From<u32> + std::ops::AddAssign>(scheme: Scheme, seed: u64, r: u64, w: &mut [T]) {
    let n = w.len();
    match scheme {
        Scheme::Poisson => {
            let key = stream_key(seed, r);
            for (i, x) in w.iter_mut().enumerate() {
                *x = T::from(poisson_count(draw(key, i as u64)));
            }
        }
        Scheme::Multinomial => {
            w.iter_mut().for_each(|x| *x = T::from(0));
            let key = stream_key(seed, r);
            for j in 0..n {
                let idx = ((unit(draw(key, j as u64)) * n as f64) as usize).min(n - 1);
                w[idx] += T::from(1);
            }
        }
    }
}
