//! Order-independent cell sums: every score is added to its cell as a whole number of grid
//! units ([`GRID`] = 2^-50), and a cell holds the exact integer sum of its scores' units.
//!
//! Integer addition is associative, so a cell's sum does not depend on the order of its
//! scores, on how the rows are cut into chunks, batches (`Accumulator`) or partitions
//! (`calibkit.dask`), on the number of threads, or on which kernel built the table: every
//! path gives the same bits, and weighted tables with unit weights are the unweighted ones.
//! The float sum a table reports is the exact unit sum rounded once ([`value`]).
//!
//! The cost is one rounding per score: a score x becomes round(x * 2^50) units (ties to even),
//! an error of at most 2^-51 (4.4e-16) per score, the same order as one float addition into a
//! sum near 1; a bin's mean score is off by at most 2^-51. Scores are checked to lie in
//! [-1e-4, 1 + 1e-4], so |units| <= 2^50 * (1 + 1e-4) < 2^51.
//!
//! The conversion is one float addition and no branch ([`biased`]): for |x| < 2, `x + 6.0`
//! lies in [4, 8), where floats are spaced by exactly one unit (2^-50), so the addition rounds
//! x to the grid (to nearest, ties to even) and the result's bit pattern is [`SHIFT_BITS`] plus
//! x's units, the same in scalar code and in a vector lane. Kernels add these biased values in
//! `i64` runs (at most [`RUN`] scores each, so they cannot overflow), take the bias off by
//! count, and fold the runs into the table's `i128` cells.

/// The value of one unit: 2^-50.
pub const GRID: f64 = 1.0 / (1u64 << 50) as f64;
/// Units per 1.0: 2^50.
pub const SCALE: f64 = (1u64 << 50) as f64;
/// 1.5 * 2^52: for |y| <= 2^51, `y + MAGIC` is rounded to a whole number and its bit pattern
/// is `MAGIC`'s plus that number (the weighted sums' rounding, `weighted::sums`).
pub const MAGIC: f64 = 6_755_399_441_055_744.0;
/// The bit pattern of [`MAGIC`].
pub const MAGIC_BITS: i64 = 0x4338_0000_0000_0000;
/// Added to a score to round it to the grid ([`biased`]).
pub const SHIFT: f64 = 6.0;
/// The bit pattern of [`SHIFT`]: the bias of [`biased`].
pub const SHIFT_BITS: i64 = 0x4018_0000_0000_0000;
/// Scores an `i64` run accumulator may take before it is folded into an `i128` cell: each is
/// below 2^51 units in magnitude, so 4096 of them stay below 2^63.
pub const RUN: usize = 4096;

/// The units of a score x with |x| < 2: round(x * 2^50), ties to even. (Values outside that
/// range, possible only for an input written by another thread during a call, give some
/// number, never a panic.)
#[inline(always)]
pub fn units(x: f64) -> i64 {
    biased(x).wrapping_sub(SHIFT_BITS)
}

/// [`units`] of a score x with |x| < 2 as a float, exactly, by float operations alone (a
/// loop of them vectorises where the float-to-integer conversion does not): adding [`SHIFT`]
/// rounds x to the grid as [`biased`] does, taking it off again is exact, and the grid value
/// times 2^50 is the whole number of units (below 2^51: exact in a float).
#[inline(always)]
pub fn units_f64(x: f64) -> f64 {
    ((x + SHIFT) - SHIFT) * SCALE
}

/// The biased units of a score x with |x| < 2: `units(x) + SHIFT_BITS`, the bit pattern of
/// `x + SHIFT`; a sum of n of them, less n * `SHIFT_BITS` (wrapping), is the sum of the units
/// whenever that fits in an `i64`.
#[inline(always)]
pub fn biased(x: f64) -> i64 {
    (x + SHIFT).to_bits() as i64
}

/// The units of `n` scores whose [`biased`] units summed (wrapping) to `sum`: the bias taken
/// off once per score. Exact whenever the true sum fits in an `i64` (a run of at most [`RUN`]
/// scores).
#[inline(always)]
pub fn unbias(sum: i64, n: u64) -> i128 {
    sum.wrapping_sub(SHIFT_BITS.wrapping_mul(n as i64)) as i128
}

/// [`biased`] of each score of `xs` into `out` (a loop the compiler vectorises).
#[inline(always)]
pub fn biased_into(xs: &[f64], out: &mut [i64]) {
    for (o, &x) in out.iter_mut().zip(xs) {
        *o = biased(x);
    }
}

/// The float value of a sum of units, rounded once (to nearest). (Through `i64` when the sum
/// fits: the same rounding, without the library routine of `i128 as f64`.)
#[inline(always)]
pub fn value(u: i128) -> f64 {
    i64::try_from(u).map_or(u as f64, |v| v as f64) * GRID
}

/// The power of two that weights are multiplied by before their units are taken
/// (`weighted::sums`): 1 when the
/// largest weight is at least 1/2, else 2^e lifting it into [1/2, 1), so that small weights
/// (say 1e-9 each) keep the resolution of unit weights. The metrics are ratios of weighted
/// sums, so an exact power-of-two scale does not change them; tables report sums divided by
/// it again (exact).
pub fn weight_scale(max_weight: f64) -> f64 {
    if max_weight.is_nan() || max_weight <= 0.0 || max_weight >= 0.5 || !max_weight.is_finite() {
        return 1.0;
    }
    let mut s = 1.0;
    let mut m = max_weight;
    // Stop below 2^1000 (a larger power of two overflows once multiplied back); weights below
    // about 1e-301 keep less resolution.
    while m < 0.5 {
        // Steps of 2^64 first (weights as small as 1e-300 need about 1000 doublings).
        if m < 0.5 / 1.8446744073709552e19 && s < 1e280 {
            s *= 1.8446744073709552e19;
            m *= 1.8446744073709552e19;
        } else if s < 1e300 {
            s *= 2.0;
            m *= 2.0;
        } else {
            break;
        }
    }
    s
}

/// Adds `x`'s units into an `i128` cell.
#[inline(always)]
pub fn add(cell: &mut i128, x: f64) {
    *cell += units(x) as i128;
}

/// The exact sums of `values` by cell: `values[i]` added into cell `cells[i]` of
/// `num_cells` (a table's bucket sums gathered into its bins). Cells out of range are an error.
pub fn sum_at(values: &[i128], cells: &[i64], num_cells: usize) -> Result<Vec<i128>, crate::kernels::KernelError> {
    if values.len() != cells.len() {
        return Err(crate::kernels::KernelError::Shape(format!("{} unit sums but {} cells; pass one cell per sum", values.len(), cells.len())));
    }
    let mut out = vec![0i128; num_cells];
    for (&v, &c) in values.iter().zip(cells) {
        let slot = usize::try_from(c).ok().and_then(|c| out.get_mut(c));
        *slot.ok_or_else(|| crate::kernels::KernelError::Parameter(format!("cell {c} outside [0, {num_cells})")))? += v;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float form of the units is the units, exactly, over (-2, 2): grid ties, values
    /// near both ends, tiny and subnormal ones, and random scores.
    #[test]
    fn float_units_are_the_units() {
        let mut xs = vec![0.0, -0.0, 1.0, -1.0, 0.5 * GRID, 1.5 * GRID, 2.5 * GRID, -2.5 * GRID, 1e-300, -1e-300, 5e-324];
        xs.extend([2.0f64.next_down(), (-2.0f64).next_up(), 1.0 + GRID * 0.5, 1.0f64.next_down(), 1.0f64.next_up()]);
        let mut draw = crate::kernels::tests::xorshift(0x0F1A_7001);
        xs.extend((0..100_000).map(|_| (draw() - 0.5) * 4.0 * (1.0 - 1e-12)));
        xs.extend((0..10_000).map(|_| draw().powi(40)));
        for x in xs {
            assert_eq!(units_f64(x), units(x) as f64, "x = {x:e}");
        }
    }

    #[test]
    fn units_round_to_nearest_even_on_the_grid() {
        assert_eq!(units(0.0), 0);
        assert_eq!(units(1.0), 1 << 50);
        assert_eq!(units(-1.0), -(1 << 50));
        assert_eq!(units(0.5), 1 << 49);
        assert_eq!(units(1.0 + 1e-4), (SCALE * (1.0 + 1e-4)).round() as i64);
        // Half a unit rounds to even: 0.5 and 1.5 units.
        assert_eq!(units(0.5 * GRID), 0);
        assert_eq!(units(1.5 * GRID), 2);
        assert_eq!(units(2.5 * GRID), 2);
        assert_eq!(units(1e-300), 0);
        let mut x = 1e-3;
        for _ in 0..1000 {
            x = (x * 1.618_033_988_749_895) % 1.0;
            assert_eq!(units(x) as f64, (x * SCALE).round_ties_even());
        }
    }

    /// The biased units are the grid units plus [`SHIFT_BITS`]: on the grid, at ties (to
    /// even), between, at the ends of the scores' range and beyond it up to 2.
    #[test]
    fn biased_units_are_the_rounded_units() {
        assert_eq!(SHIFT.to_bits() as i64, SHIFT_BITS);
        let g = GRID;
        let mut xs = vec![0.0, -0.0, 1.0, -1.0, 0.5, 1.0 + 1e-4, -1e-4, 1.999_999, -1.999_999, 1e-300, 5e-324, g, 0.5 * g];
        for k in [0.0f64, 1.0, 2.0, 3.0, 12345.0, (1u64 << 49) as f64, (1u64 << 50) as f64 - 1.0] {
            for d in [0.25, 0.5, 0.75, 1.5] {
                xs.extend([(k + d) * g, -(k + d) * g]);
            }
        }
        let mut x = 1e-3;
        for _ in 0..100_000 {
            x = (x * 1.618_033_988_749_895 + 0.1) % 1.0;
            xs.extend([x, x * 1e-6, x * 1.9, -x]);
        }
        for x in xs {
            assert_eq!(units(x) as f64, (x * SCALE).round_ties_even(), "{x:e}");
        }
        assert_eq!(value(1 << 100), 2f64.powi(50));
        assert_eq!(value(-(1 << 80) - 1), (-(2f64.powi(80)) - 1.0) * GRID);
    }

    #[test]
    fn sums_are_the_same_in_any_order() {
        let xs: Vec<f64> = (0..10_000).map(|i| ((i as f64) * 0.618_033_988_749_895).fract()).collect();
        let forward: i128 = xs.iter().map(|&x| units(x) as i128).sum();
        let backward: i128 = xs.iter().rev().map(|&x| units(x) as i128).sum();
        assert_eq!(forward, backward);
        assert!((value(forward) - xs.iter().sum::<f64>()).abs() < 1e-9);
    }

    #[test]
    fn sums_by_cell_are_exact() {
        let big = 1i128 << 100;
        assert_eq!(sum_at(&[big, 1, -big, 5], &[1, 0, 1, 0], 3).unwrap(), vec![6, 0, 0]);
        assert!(sum_at(&[1], &[3], 3).is_err());
        assert!(sum_at(&[1], &[-1], 3).is_err());
        assert!(sum_at(&[1, 2], &[0], 3).is_err());
    }

    #[test]
    fn weight_scale_lifts_small_weights_only() {
        assert_eq!(weight_scale(1.0), 1.0);
        assert_eq!(weight_scale(0.5), 1.0);
        assert_eq!(weight_scale(1e9), 1.0);
        assert_eq!(weight_scale(0.3), 2.0);
        for m in [1e-9, 3e-200, 1e-290] {
            let s = weight_scale(m);
            assert!(s.is_finite() && (0.5..1.0).contains(&(m * s)), "{m}: {s}");
            assert_eq!(s.log2().fract(), 0.0);
        }
        assert_eq!(weight_scale(0.0), 1.0);
        assert!(weight_scale(5e-324).is_finite());
    }
}
