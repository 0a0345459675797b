//! The passes over a group's values: the bucket histogram (count and score sum per bucket) and
//! the gathering of the members of the buckets that must be resolved exactly; or, when the
//! counts are known beforehand, both in one pass.

use super::Keys;
use crate::kernels::Score;

/// One group's histogram over the bucket keys (the last slot counts dropped entries).
///
/// A bucket's score sum is kept as `sum[q][0] + sum[q][1]`: the first adds the f32-rounded high
/// parts of the values ([`Score::split`]), which share the bucket's f32 exponent and so add
/// exactly (up to 2^29 values per bucket), whatever the order; the second the tiny low parts
/// (f64 input only).
/// So only the low parts' sum rounds, and its error is ~2^-24 of a plain sum's: bucket sums
/// stay exact to about an ulp however many equal scores a bucket holds (a plain sum of 10M
/// equal scores drifts by ~1e-10 relative).
pub(super) struct Hist {
    pub(super) cnt: Vec<u32>,
    /// Per bucket `[sum of high parts, sum of low parts]`, side by side so that one update is
    /// one two-lane add.
    pub(super) sum: Vec<[f64; 2]>,
}

impl Hist {
    pub(super) fn zeros(keys: Keys) -> Self {
        Hist { cnt: vec![0; keys.nkeys() + 1], sum: vec![[0.0; 2]; keys.nkeys() + 1] }
    }

    /// Empties the histogram, keeping its buffers (reused from group to group).
    pub(super) fn clear(&mut self, keys: Keys) {
        self.cnt.clear();
        self.cnt.resize(keys.nkeys() + 1, 0);
        self.sum.clear();
        self.sum.resize(keys.nkeys() + 1, [0.0; 2]);
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
            a[0] += b[0];
            a[1] += b[1];
        }
    }
}

crate::kernels::core::simd::multiversion! {
    /// Adds `vals` to the histogram in order (every bucket's sum runs in value order).
    pub(super) fn hist_values<T: Score>(h: &mut Hist, keys: Keys, vals: &[T], thr: f64) -> () {
        let n = keys.nkeys() + 1;
        let (cnt, sum) = (&mut h.cnt[..n], &mut h.sum[..n]);
        for &v in vals {
            let key = keys.slot(v, thr);
            let (hi, lo) = v.split();
            cnt[key] += 1;
            let s = &mut sum[key];
            s[0] += hi;
            if T::HAS_LOW {
                s[1] += lo;
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
    /// already known (counted while transposing, see [`super::transpose`]): adds the scores to
    /// the histogram sums, in order, and appends the kept values of wanted buckets to `out`.
    ///
    /// Works in blocks: first every value's slot (a loop the compiler vectorises), then the
    /// sum updates and the branch-free gathering read the slots back, so the slot computation
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
        const BLOCK: usize = 1024;
        assert!(keys.drop_slot() <= u16::MAX as usize);
        let sum = &mut h.sum[..keys.nkeys() + 1];
        let wanted = &wanted[..keys.nkeys() + 1];
        let mut slots = [0u16; BLOCK];
        let mut buf = [0.0f64; BLOCK];
        for block in vals.chunks(BLOCK) {
            for (q, &v) in slots.iter_mut().zip(block) {
                *q = keys.slot(v, thr) as u16;
            }
            let mut len = 0usize;
            for (&q, &v) in slots.iter().zip(block) {
                let s = v.to_f64();
                let (hi, lo) = v.split();
                let e = &mut sum[q as usize];
                e[0] += hi;
                if T::HAS_LOW {
                    e[1] += lo;
                }
                buf[len] = s;
                // As in `gather_values`: len <= index within the block.
                len += wanted[q as usize] as usize;
            }
            out.extend_from_slice(&buf[..len]);
        }
    }
}
