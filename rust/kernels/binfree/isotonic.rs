//! Isotonic (non-decreasing) least-squares regression by pool-adjacent-violators, the
//! recalibration step of the CORP decomposition (Dimitriadis, Gneiting & Jordan 2021).
//!
//! Rows with exactly equal x are pooled first (their weighted mean outcome is one value), then
//! adjacent blocks whose means decrease are merged until the means increase. The fitted value
//! of a row is the weighted mean outcome of its block. Zero-weight tie blocks carry no
//! information: they join the block before them (the first block after them when they come
//! first).

use crate::kernels::core::order::order_key;
use crate::kernels::KernelError;

struct Block {
    swy: f64,
    sw: f64,
    /// One past the last sorted position covered by the block.
    end: usize,
}

/// Fitted values of the isotonic regression of `y` on `x` (weights 1 when `None`), in the
/// rows' original order.
pub fn isotonic_fit(x: &[f64], y: &[f64], weights: Option<&[f64]>) -> Result<Vec<f64>, KernelError> {
    let n = x.len();
    if y.len() != n || weights.is_some_and(|w| w.len() != n) {
        return Err(KernelError::Shape(format!(
            "x has {n} entries but y has {} (and weights {:?}); pass one of each per row",
            y.len(),
            weights.map(|w| w.len())
        )));
    }
    if n == 0 {
        return Err(KernelError::Shape("no rows: pass at least one".into()));
    }
    if let Some(w) = weights {
        crate::kernels::core::validate::weights(w, "weights")?;
    }
    if n > u32::MAX as usize {
        return Err(KernelError::Shape(format!("{n} rows is more than the isotonic fit handles (2^32 - 1)")));
    }
    let w = |i: usize| weights.map_or(1.0, |w| w[i]);
    let mut order: Vec<(u64, u32)> = x.iter().enumerate().map(|(i, &v)| (order_key(v), i as u32)).collect();
    order.sort_unstable();
    let mut blocks: Vec<Block> = Vec::new();
    let mut j = 0;
    while j < n {
        let key = order[j].0;
        let (mut swy, mut sw) = (0.0, 0.0);
        while j < n && order[j].0 == key {
            let i = order[j].1 as usize;
            swy += w(i) * y[i];
            sw += w(i);
            j += 1;
        }
        if sw == 0.0 {
            if let Some(last) = blocks.last_mut() {
                last.end = j;
            } else {
                blocks.push(Block { swy: 0.0, sw: 0.0, end: j });
            }
            continue;
        }
        if let Some(last) = blocks.last_mut() {
            if last.sw == 0.0 {
                // Leading zero-weight rows join the first weighted block.
                *last = Block { swy, sw, end: j };
                continue;
            }
        }
        blocks.push(Block { swy, sw, end: j });
        while blocks.len() >= 2 {
            let b = &blocks[blocks.len() - 1];
            let a = &blocks[blocks.len() - 2];
            if a.swy / a.sw > b.swy / b.sw {
                let b = blocks.pop().expect("two blocks");
                let a = blocks.last_mut().expect("two blocks");
                a.swy += b.swy;
                a.sw += b.sw;
                a.end = b.end;
            } else {
                break;
            }
        }
    }
    if blocks.iter().all(|b| b.sw == 0.0) {
        return Err(KernelError::Parameter("the weights sum to 0: at least one row needs a positive weight".into()));
    }
    let mut out = vec![0.0f64; n];
    let mut start = 0;
    for b in &blocks {
        let v = b.swy / b.sw;
        for &(_, i) in &order[start..b.end] {
            out[i as usize] = v;
        }
        start = b.end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_violators_and_ties() {
        let x = [0.1, 0.2, 0.3, 0.4];
        let y = [0.0, 1.0, 0.0, 1.0];
        assert_eq!(isotonic_fit(&x, &y, None).unwrap(), vec![0.0, 0.5, 0.5, 1.0]);
        // Ties pooled whatever the order of rows.
        let f = isotonic_fit(&[0.5, 0.2, 0.5, 0.9], &[1.0, 0.0, 0.0, 1.0], None).unwrap();
        assert_eq!(f, vec![0.5, 0.0, 0.5, 1.0]);
    }

    #[test]
    fn weights_are_repeated_rows_and_zero_weights_join_neighbours() {
        let a = isotonic_fit(&[0.1, 0.2, 0.2, 0.3], &[1.0, 0.0, 0.0, 1.0], None).unwrap();
        let b = isotonic_fit(&[0.1, 0.2, 0.3], &[1.0, 0.0, 1.0], Some(&[1.0, 2.0, 1.0])).unwrap();
        assert_eq!(a[0], b[0]);
        assert_eq!(a[3], b[2]);
        assert_eq!(a[1], b[1]);
        let z = isotonic_fit(&[0.0, 0.1, 0.2], &[1.0, 0.0, 1.0], Some(&[0.0, 1.0, 1.0])).unwrap();
        assert_eq!(z, vec![0.0, 0.0, 1.0]);
        assert!(isotonic_fit(&[0.0], &[1.0], Some(&[0.0])).is_err());
        assert!(isotonic_fit(&[], &[], None).is_err());
    }
}
