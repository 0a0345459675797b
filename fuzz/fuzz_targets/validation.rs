//! Arbitrary bytes as f32/f64 matrices of arbitrary shape with arbitrary labels, thresholds,
//! bin counts and weights, through every kernel entry: an error or a value, never a panic
//! (and clean under AddressSanitizer). Bin counts beyond the limit are passed as they are
//! (they must be refused); allowed ones are capped so that the (groups x bins) table stays
//! within this harness's memory budget (2^20 cells), below the kernels' own table limit.
#![no_main]

use calibkit::kernels::weighted::grouped::{grouped_bin_stats, grouped_bin_stats_at, GroupedRows};
use calibkit::kernels::core::spec::MAX_BINS;
use calibkit::kernels::core::validate::Checks;
use calibkit::kernels::{self, Binning, GceSpec, Grouping, Inputs, Norm, Score};
use calibkit_fuzz::Reader;
use libfuzzer_sys::fuzz_target;

const CELLS: usize = 1 << 20;

fn bins(r: &mut Reader, groups: usize) -> usize {
    let raw = r.u32() as usize;
    if raw > MAX_BINS || raw == 0 {
        return raw;
    }
    raw.min(CELLS / groups.max(1)).max(1)
}

fn run<T: Score>(probs: &[T], labels: &[i64], k: usize, r: &mut Reader) {
    let x = match Inputs::new(probs, labels, k) {
        Ok(x) => x,
        Err(_) => return,
    };
    let flags = r.u8();
    let g = Grouping {
        binning: if flags & 1 == 1 { Binning::Adaptive } else { Binning::Even },
        max_prob: flags & 2 == 2,
        class_conditional: flags & 4 == 4,
        threshold: if flags & 8 == 8 { r.f64() } else { (r.u8() as f64) / 255.0 },
    };
    let norm = [Norm::L1, Norm::L2, Norm::Max][(flags >> 4) as usize % 3];
    let check = Checks { values: true, row_sums: flags & 64 == 0, labels: true };
    let b = bins(r, k);
    let _ = kernels::gce(&x, &GceSpec { grouping: g, norm, num_bins: b }, &check);
    let _ = kernels::bin_stats(&x, &g, b, &check);
    let b2 = bins(r, k);
    let other = Grouping { binning: if g.binning == Binning::Even { Binning::Adaptive } else { Binning::Even }, max_prob: !g.max_prob, ..g };
    let _ = kernels::evaluate(&x, &[(g, norm), (other, Norm::L2)], &[b, b2], &check);
}

fn grouped<T: Score>(scores: &[T], r: &mut Reader) {
    let m = scores.len();
    let ng = 1 + (r.u8() as usize % 8);
    let groups: Vec<i64> = (0..m).map(|_| r.u8() as i8 as i64 % 9).collect();
    let outcomes: Vec<f64> = (0..m).map(|_| if r.u8() & 1 == 1 { r.f64() } else { 1.0 }).collect();
    let weights: Vec<f64> = (0..m).map(|_| if r.u8() & 1 == 1 { r.f64() } else { r.u8() as f64 }).collect();
    let flags = r.u8();
    let rows = GroupedRows {
        groups: if flags & 1 == 1 { Some(&groups) } else { None },
        scores,
        outcomes: &outcomes,
        weights: if flags & 2 == 2 { Some(&weights) } else { None },
        num_groups: ng,
    };
    let b = bins(r, ng);
    let binning = if flags & 4 == 4 { Binning::Adaptive } else { Binning::Even };
    let _ = grouped_bin_stats(&rows, binning, b);
    let upper: Vec<f64> = (0..(ng * (b.min(64).saturating_sub(1)))).map(|_| r.u8() as f64 / 255.0).collect();
    let _ = grouped_bin_stats_at(&rows, &upper, b.min(64));
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let head = r.u8();
    let k = (r.u8() % 17) as usize; // 0 columns too
    let n = r.u8() as usize;
    // usually a consistent shape (so that values reach the checks), sometimes not
    let nvals = if head & 2 == 2 { (r.u16() % 2048) as usize } else { n * k };
    let labels: Vec<i64> = (0..n)
        .map(|_| match r.u8() % 4 {
            0 => r.u64() as i64,
            _ => (r.u8() % 20) as i64 - 2,
        })
        .collect();
    if head & 1 == 1 {
        let probs: Vec<f32> = (0..nvals).map(|_| if r.u8() & 3 == 0 { r.f32() } else { r.u8() as f32 / 255.0 }).collect();
        run(&probs, &labels, k, &mut r);
        grouped(&probs, &mut r);
    } else {
        let probs: Vec<f64> = (0..nvals).map(|_| if r.u8() & 3 == 0 { r.f64() } else { r.u8() as f64 / 255.0 }).collect();
        run(&probs, &labels, k, &mut r);
        grouped(&probs, &mut r);
    }
});
