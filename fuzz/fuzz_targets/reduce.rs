//! The one reduction on extreme tables: counts anywhere in [0, f64::MAX] (totals that overflow
//! float64 included), sums at or below their counts. A table `check_table` accepts reduces to a
//! finite value in [0, 1] (l1, l2, max), never NaN and never a panic; and the value is the one
//! of the same table scaled down by a power of two (the bin weights are ratios of counts).
#![no_main]

use calibkit::kernels::core::reduce::{check_table, reduce};
use calibkit::kernels::BinStats;
use calibkit_fuzz::*;
use libfuzzer_sys::fuzz_target;

/// A count: tiny, ordinary, or near the top of float64, by the fuzzer's choice.
fn count(r: &mut Reader) -> f64 {
    match r.u8() % 4 {
        0 => 0.0,
        1 => (r.u16() as f64) + 1.0,
        2 => f64::MAX * (r.u16() as f64 / 65535.0),
        _ => r.f64().abs(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let groups = 1 + (r.u8() % 4) as usize;
    let nb = 1 + (r.u8() % 8) as usize;
    let norm = norm(&mut r);
    let cc = groups > 1 || r.bool();
    let n = groups * nb;
    let mut st = BinStats::zeros(groups, nb);
    for i in 0..n {
        let c = count(&mut r);
        st.count[i] = c;
        // fractions of the count in [0, 1]: a mean score and a mean outcome
        st.sum_score[i] = c * (r.u16() as f64 / 65535.0);
        st.sum_outcome[i] = c * (r.u16() as f64 / 65535.0);
    }
    if check_table(&st, cc).is_err() {
        assert!(st.count.iter().any(|c| !c.is_finite()), "a finite table was refused: {st:?}");
        return;
    }
    let v = reduce(&st, norm, cc);
    assert!(v.is_finite() && (-1e-12..=1.0 + 1e-12).contains(&v), "{v} from {st:?}");
    // 2^-900 keeps every count >= 2^-20 and its sums (>= 2^-16 of it) normal, so exact
    if st.count.iter().all(|&c| c == 0.0 || c >= 2f64.powi(-20)) {
        let k = 2f64.powi(-900);
        let mut small = st.clone();
        for x in small.count.iter_mut().chain(small.sum_score.iter_mut()).chain(small.sum_outcome.iter_mut()) {
            *x *= k;
        }
        let w = reduce(&small, norm, cc);
        assert!(close(v, w, 1e-12), "{v} vs scaled {w}: {st:?}");
    }
});
