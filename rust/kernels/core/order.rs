//! Sorting scores: a `u64` key that orders like the `f64` value ([`order_key`], with its
//! inverse [`score_of_key`]), and the one LSD radix sort over such keys ([`radix_sort_by`]).
//! The weighted primitive's and the resamplers' sorted groups, and the KS and isotonic
//! estimators, all sort through here.

/// A key that orders finite scores as f64 comparison does (a total order; -0.0 and 0.0 alike).
#[inline(always)]
pub fn order_key(s: f64) -> u64 {
    let b = (s + 0.0).to_bits(); // -0.0 + 0.0 == +0.0
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The score of an [`order_key`] (its inverse; -0.0 and +0.0 share the key of +0.0).
#[inline(always)]
pub fn score_of_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Bits of a radix digit: six passes cover a 64-bit key.
const DIGIT: u32 = 11;
const BUCKETS: usize = 1 << DIGIT;

/// Sorts `items` by `key(item)`, stably (items of equal keys keep their order), by a
/// least-significant-digit radix sort of 11-bit digits: every digit's histogram from one read,
/// then one scatter pass per digit, skipping a digit every key shares (the high digits of
/// scores in [0, 1], of small integers). `scratch` is reused between calls.
pub fn radix_sort_by<T: Copy>(items: &mut [T], scratch: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let n = items.len();
    if n < 2 {
        return;
    }
    let passes = 64usize.div_ceil(DIGIT as usize);
    let mut hist = vec![[0usize; BUCKETS]; passes];
    for it in items.iter() {
        let k = key(it);
        for (p, h) in hist.iter_mut().enumerate() {
            h[((k >> (p as u32 * DIGIT)) as usize) & (BUCKETS - 1)] += 1;
        }
    }
    scratch.clear();
    scratch.resize(n, items[0]);
    let (mut src, mut dst): (&mut [T], &mut [T]) = (items, &mut scratch[..]);
    let mut in_scratch = false;
    for (p, h) in hist.iter().enumerate() {
        if h.contains(&n) {
            continue; // every key has the same digit here: the pass would move nothing
        }
        let mut off = [0usize; BUCKETS];
        let mut acc = 0;
        for (o, &c) in off.iter_mut().zip(h.iter()) {
            *o = acc;
            acc += c;
        }
        let shift = p as u32 * DIGIT;
        for it in src.iter() {
            let d = ((key(it) >> shift) as usize) & (BUCKETS - 1);
            dst[off[d]] = *it;
            off[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        in_scratch = !in_scratch;
    }
    if in_scratch {
        // the sorted items are in the scratch: `dst` is the caller's slice
        dst.copy_from_slice(src);
    }
}

/// [`radix_sort_by`] of plain `u64` keys.
pub fn radix_sort_u64(keys: &mut [u64]) {
    radix_sort_by(keys, &mut Vec::new(), |&k| k);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stable and sorted, against a stable comparison sort, for keys with shared high digits,
    /// many ties, and every size around the digit's scale.
    #[test]
    fn radix_sort_is_the_stable_comparison_sort() {
        let mut st = 7u64;
        let mut next = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let mut scratch = Vec::new();
        for n in [0usize, 1, 2, 7, 2047, 2048, 5000, 70_000] {
            for mask in [u64::MAX, 0xFFFF, 0x3FF0_0000_0000_0000 | 0xFF] {
                let items: Vec<(u64, u32)> = (0..n).map(|i| (next() & mask, i as u32)).collect();
                let mut want = items.clone();
                want.sort_by_key(|x| x.0); // stable
                let mut got = items.clone();
                radix_sort_by(&mut got, &mut scratch, |x| x.0);
                assert_eq!(got, want, "n {n} mask {mask:x}");
                let mut plain: Vec<u64> = items.iter().map(|x| x.0).collect();
                radix_sort_u64(&mut plain);
                assert!(plain.iter().zip(&want).all(|(a, b)| *a == b.0));
            }
        }
    }

    /// The key's inverse gives back every finite score (and +0.0 for -0.0, its key), and keys
    /// order as the scores do.
    #[test]
    fn score_of_key_inverts_order_key() {
        let xs = [f64::MIN, -0.5, -1e-4, -0.0, 0.0, 5e-324, 1e-300, 0.25, 1.0, 1.0 + 1e-4, 2.0, f64::MAX];
        for x in xs {
            let back = score_of_key(order_key(x));
            assert_eq!(back.to_bits(), (x + 0.0).to_bits());
        }
        for w in xs.windows(2) {
            assert!(order_key(w[0]) <= order_key(w[1]));
        }
    }
}
