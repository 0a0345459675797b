//! The passes over a group's values: the bucket histogram (count and score sum per bucket) and
//! the gathering of the members of the buckets that must be resolved exactly; or, when the
//! counts are known beforehand, both in one pass.

use super::Keys;
use crate::kernels::core::units;
use crate::kernels::Score;

/// One group's histogram over the bucket keys (the last slot counts dropped entries).
///
/// A bucket's score sum is the exact integer sum of its scores' grid units ([`units::units`],
/// read by [`Lanes::units`]): it does not depend on the order of the values, nor on how they
/// are cut into segments or chunks, and a bucket that lies wholly in a bin adds exactly its
/// members' units to it, as any other path that bins those scores one by one does.
///
/// It is kept in [`Lanes`], exact for any number of scores a group may hold.
pub(super) struct Hist {
    pub(super) cnt: Vec<u32>,
    /// Per bucket: its scores' units.
    pub(super) sum: Vec<Lanes>,
}

/// An exact sum of fewer than 2^32 scores' units, as the sums of the low and of the high 32
/// bits of their biased units ([`units::biased`], as `u64`): each lane adds values below 2^32,
/// so neither can overflow, and adding a score is two independent adds (one two-lane vector
/// add of its zero-extended halves), not an `i128` add with carry. [`Lanes::units`] reads the
/// sum, given the count.
#[derive(Clone, Copy, Default)]
pub(super) struct Lanes([u64; 2]);

/// The biased units of a score ([`units::biased`]) as its low and high 32 bits.
#[inline(always)]
pub(super) fn halves(x: f64) -> [u32; 2] {
    let b = units::biased(x) as u64;
    [b as u32, (b >> 32) as u32]
}

impl Lanes {
    /// Adds a score given by its [`halves`].
    #[inline(always)]
    pub(super) fn add(&mut self, h: [u32; 2]) {
        self.merge(Lanes([h[0] as u64, h[1] as u64]));
    }

    /// Adds another sum (of scores of the same group).
    #[inline(always)]
    pub(super) fn merge(&mut self, o: Lanes) {
        self.0[0] = self.0[0].wrapping_add(o.0[0]);
        self.0[1] = self.0[1].wrapping_add(o.0[1]);
    }

    /// This sum less `o`, the sum of some of its scores: the sum of the others (exact, as
    /// both are).
    #[inline(always)]
    pub(super) fn less(self, o: Lanes) -> Lanes {
        Lanes([self.0[0].wrapping_sub(o.0[0]), self.0[1].wrapping_sub(o.0[1])])
    }

    /// The exact sum of the units of the `n` scores added: the sum of their biased units less
    /// one bias each. (A count that is not the number of scores added, possible only for an
    /// input changed by another thread, gives some number.)
    #[inline]
    pub(super) fn units(self, n: u64) -> i128 {
        let [lo, hi] = self.0;
        lo as i128 + ((hi as i128) << 32) - n as i128 * units::SHIFT_BITS as i128
    }
}

/// The count and the units of the scores of `vals` at or above `e`, summed in registers:
/// branch-free masked adds, so that no read-modify-write of a table chains one score to the
/// next (as adding each score to its segment's cell did: consecutive scores of a bucket mostly
/// fall in the same segment).
#[inline]
pub(super) fn at_or_above(vals: &[f64], e: f64) -> (u64, Lanes) {
    let (mut n, mut lo, mut hi) = (0u64, 0u64, 0u64);
    for &s in vals {
        let m = u64::from(s >= e);
        let [a, b] = halves(s);
        n += m;
        // A mask times a half: the half or nothing; each lane stays below 2^32 * count.
        lo = lo.wrapping_add(m * a as u64);
        hi = hi.wrapping_add(m * b as u64);
    }
    (n, Lanes([lo, hi]))
}

impl Hist {
    pub(super) fn zeros(keys: Keys) -> Self {
        Hist { cnt: vec![0; keys.nkeys() + 1], sum: vec![Lanes::default(); keys.nkeys() + 1] }
    }

    /// Empties the histogram, keeping its buffers (reused from group to group).
    pub(super) fn clear(&mut self, keys: Keys) {
        self.cnt.clear();
        self.cnt.resize(keys.nkeys() + 1, 0);
        self.sum.clear();
        self.sum.resize(keys.nkeys() + 1, Lanes::default());
    }

    pub(super) fn count(&self, q: usize) -> u64 {
        self.cnt[q] as u64
    }

    /// Adds another histogram. Counts are u32: groups of 2^32 entries or more are refused.
    pub(super) fn merge(&mut self, o: &Hist) {
        for (a, b) in self.cnt.iter_mut().zip(&o.cnt) {
            *a += b;
        }
        for (a, b) in self.sum.iter_mut().zip(&o.sum) {
            a.merge(*b);
        }
    }
}

crate::kernels::core::simd::multiversion! {
    /// Adds `vals` to the histogram: each value's count and units to its bucket's.
    pub(super) fn hist_values<T: Score>(h: &mut Hist, keys: Keys, vals: &[T], thr: f64) -> () {
        // As in `sum_and_gather`: a block's slots and units first (loops the compiler
        // vectorises), then the read-modify-writes.
        const BLOCK: usize = 256;
        let n = keys.nkeys() + 1;
        assert!(n <= u16::MAX as usize + 1);
        let (cnt, sum) = (&mut h.cnt[..n], &mut h.sum[..n]);
        let mut slots = [0u16; BLOCK];
        let mut us = [[0u32; 2]; BLOCK];
        for block in vals.chunks(BLOCK) {
            for (q, &v) in slots.iter_mut().zip(block) {
                *q = keys.slot(v, thr) as u16;
            }
            for (u, &v) in us.iter_mut().zip(block) {
                *u = halves(v.to_f64());
            }
            for (&q, &u) in slots.iter().zip(&us).take(block.len()) {
                cnt[q as usize] += 1;
                sum[q as usize].add(u);
            }
        }
    }
}

/// Values [`gather_values`] writes at a time: `out` needs this much room past the wanted
/// values it will hold, or it grows.
pub(super) const GATHER_BLOCK: usize = 1024;

crate::kernels::core::simd::multiversion! {
    /// Appends the kept values of `vals` whose bucket is wanted, in order. Branch-free: each
    /// block of values is written into the end of `out`, grown by the block's length, whose
    /// length then advances only for wanted ones (whether a value is wanted is unpredictable,
    /// so a branch would mispredict often); `out` is cut back to the wanted ones after each
    /// block. Unlike a direct scatter into the buckets' slots, there is no dependency through
    /// memory from one value to the next (wanted values are a few percent of a group; callers
    /// that know how many reserve `out` for them). The room is grown per block rather than
    /// kept in a fixed buffer because the compacted path calls this once per class and chunk
    /// with a few dozen values, where zeroing a whole buffer per call would dominate.
    pub(super) fn gather_values<T: Score>(wanted: &[bool], keys: Keys, vals: &[T], thr: f64, out: &mut Vec<f64>) -> () {
        const BLOCK: usize = GATHER_BLOCK;
        let wanted = &wanted[..keys.nkeys()];
        for block in vals.chunks(BLOCK) {
            let start = out.len();
            out.resize(start + block.len(), 0.0);
            let buf = &mut out[start..];
            let mut len = 0usize;
            for &v in block {
                let s = v.to_f64();
                buf[len] = s;
                // len <= index within the block, so the write above stays in bounds.
                len += (s > thr && wanted[keys.of(v)]) as usize;
            }
            out.truncate(start + len);
        }
    }
}

crate::kernels::core::simd::multiversion! {
    /// [`hist_values`] and [`gather_values`] in one read, for groups whose bucket counts are
    /// already known (counted while transposing, see [`super::transpose`]): adds the scores'
    /// units to the histogram sums and appends the kept values of wanted buckets to `out`, in
    /// order.
    ///
    /// Works in blocks: first every value's slot and units (loops the compiler vectorises),
    /// then the sum updates and the branch-free gathering read them back, so their computation
    /// stays out of the loop that carries the read-modify-write of the sums. `wanted` has a
    /// slot per key plus the drop slot (never wanted).
    pub(super) fn sum_and_gather<T: Score>(
        h: &mut Hist,
        wanted: &[bool],
        keys: Keys,
        vals: &[T],
        thr: f64,
        out: &mut Vec<f64>,
    ) -> () {
        // Short blocks: their buffers take little of L1 beside the histogram.
        const BLOCK: usize = 256;
        assert!(keys.drop_slot() <= u16::MAX as usize);
        let sum = &mut h.sum[..keys.nkeys() + 1];
        let wanted = &wanted[..keys.nkeys() + 1];
        let mut slots = [0u16; BLOCK];
        let mut us = [[0u32; 2]; BLOCK];
        let mut buf = [0.0f64; BLOCK];
        for block in vals.chunks(BLOCK) {
            for (q, &v) in slots.iter_mut().zip(block) {
                *q = keys.slot(v, thr) as u16;
            }
            for (u, &v) in us.iter_mut().zip(block) {
                *u = halves(v.to_f64());
            }
            let mut len = 0usize;
            for ((&q, &u), &v) in slots.iter().zip(&us).zip(block) {
                sum[q as usize].add(u);
                buf[len] = v.to_f64();
                // As in `gather_values`: len <= index within the block.
                len += wanted[q as usize] as usize;
            }
            out.extend_from_slice(&buf[..len]);
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    /// Lanes hold the exact sum of the scores' units, for scores of either sign and near the
    /// ends of the validated range, added one by one or as merged partial sums, and many of
    /// the largest scores (where an `i64` sum of units would overflow).
    #[test]
    fn lanes_sum_units_exactly() {
        let mut draw = crate::kernels::tests::xorshift(0x5EED_1234_ABCD_0001);
        let mut xs: Vec<f64> = (0..100_000).map(|_| draw() * (1.0 + 2e-4) - 1e-4).collect();
        xs.extend([0.0, -0.0, -1e-4, 1.0 + 1e-4, 1.0, 1e-300, units::GRID * 1.5]);
        let (mut one, mut parts) = (Lanes::default(), [Lanes::default(); 3]);
        for (i, &x) in xs.iter().enumerate() {
            one.add(halves(x));
            parts[i % 3].add(halves(x));
        }
        let want: i128 = xs.iter().map(|&x| units::units(x) as i128).sum();
        assert_eq!(one.units(xs.len() as u64), want);
        let mut merged = Lanes::default();
        parts.iter().for_each(|p| merged.merge(*p));
        assert_eq!(merged.units(xs.len() as u64), want);
        let n = 1u64 << 22;
        let top = 1.0 + 1e-4;
        let mut big = Lanes::default();
        for _ in 0..n {
            big.add(halves(top));
        }
        assert_eq!(big.units(n), n as i128 * units::units(top) as i128);
        assert!(big.units(n) > i64::MAX as i128);
    }
}
