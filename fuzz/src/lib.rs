//! Shared pieces of the fuzz targets: decoding fuzzer bytes into kernel inputs, and a slow,
//! obvious, sort-based reference of SPEC's binning (a Rust transcription of
//! `python/calibkit/reference.py`) that the kernels are compared with.

use calibkit::kernels::{BinStats, Binning, Grouping, Norm};

/// Reads values off the fuzzer's bytes (zeros once they run out).
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    pub fn left(&self) -> usize {
        self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in out.iter_mut() {
            *b = self.u8();
        }
        out
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
    pub fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.bytes())
    }
    pub fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.bytes())
    }
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
}

/// One metric's grouping, from one byte (and a threshold byte).
pub fn grouping(r: &mut Reader) -> Grouping {
    let b = r.u8();
    let threshold = match r.u8() {
        0..=127 => 0.0,
        128..=191 => 0.01,
        t => (t - 192) as f64 / 64.0, // up to 0.984: drops most scores
    };
    Grouping {
        binning: if b & 1 == 1 { Binning::Adaptive } else { Binning::Even },
        max_prob: b & 2 == 2,
        class_conditional: b & 4 == 4,
        threshold,
    }
}

pub fn norm(r: &mut Reader) -> Norm {
    match r.u8() % 3 {
        0 => Norm::L1,
        1 => Norm::L2,
        _ => Norm::Max,
    }
}

/// A valid (n, k) probability matrix with labels: each row is non-negative weights from the
/// bytes, normalised. `levels` small gives many ties; `wide` spreads entries over many
/// binary orders of magnitude (the histogram kernels bucket by exponent).
pub fn prob_rows(r: &mut Reader, k: usize, max_rows: usize, wide: bool) -> (Vec<f64>, Vec<i64>) {
    let levels = 1 + (r.u8() % 16) as u32;
    let mut probs = Vec::new();
    let mut labels = Vec::new();
    while r.left() >= k + 1 && labels.len() < max_rows {
        let label = (r.u8() as usize % k) as i64;
        let mut row: Vec<f64> = (0..k)
            .map(|_| {
                let b = r.u8();
                if wide {
                    let m = (b & 7) as f64;
                    m * (2.0f64).powi(-((b >> 3) as i32) * 3)
                } else {
                    ((b as u32) % (levels + 1)) as f64
                }
            })
            .collect();
        let s: f64 = row.iter().sum();
        if s > 0.0 {
            row.iter_mut().for_each(|v| *v /= s);
        } else {
            row[0] = 1.0;
        }
        probs.extend(row);
        labels.push(label);
    }
    (probs, labels)
}

/// SPEC's score groups: (group id, score, outcome) of every kept score.
pub fn groups_of(probs: &[f64], labels: &[i64], k: usize, g: &Grouping) -> Vec<(usize, f64, f64)> {
    let mut out = Vec::new();
    for (i, &y) in labels.iter().enumerate() {
        let row = &probs[i * k..(i + 1) * k];
        if g.max_prob {
            let mut pred = 0;
            for c in 1..k {
                if row[c] > row[pred] {
                    pred = c;
                }
            }
            let s = row[pred];
            if s > g.threshold {
                out.push((if g.class_conditional { pred } else { 0 }, s, (pred as i64 == y) as u8 as f64));
            }
        } else {
            for (c, &s) in row.iter().enumerate() {
                if s > g.threshold {
                    out.push((if g.class_conditional { c } else { 0 }, s, (c as i64 == y) as u8 as f64));
                }
            }
        }
    }
    out
}

/// SPEC's binning of the groups, by sorting: per-(group, bin) statistics with edges as the
/// kernels report them.
pub fn reference_stats(rows: &[(usize, f64, f64)], groups: usize, binning: Binning, b: usize, threshold: f64) -> BinStats {
    let nb = if binning == Binning::Even { b + 1 } else { b };
    let mut st = BinStats::zeros(groups, nb);
    for g in 0..groups {
        let mut s: Vec<(f64, f64)> = rows.iter().filter(|r| r.0 == g).map(|r| (r.1, r.2)).collect();
        s.sort_by(|a, c| a.0.partial_cmp(&c.0).unwrap());
        let n = s.len();
        let upper: Vec<f64> = match binning {
            Binning::Even => (1..=b).map(|j| if j == b { 1.0 } else { j as f64 * (1.0 / b as f64) }).collect(),
            Binning::Adaptive if n > 0 => (1..b)
                .map(|j| {
                    let p = ((j as f64 * (n as f64 / b as f64)).round_ties_even() as usize).min(n - 1);
                    s[p].0
                })
                .collect(),
            Binning::Adaptive => vec![f64::NAN; b - 1],
        };
        // score sums by the cell-sum rule (docs/spec.md, "Cell sums": `push` adds each
        // score's grid units exactly, `finish` rounds once), so that tables compare bit for bit
        for &(x, o) in &s {
            let bin = upper.iter().filter(|&&e| e <= x).count();
            st.push(g, bin, x, o);
        }
        match binning {
            Binning::Even => {
                st.edges.push(0.0);
                st.edges.extend(&upper);
                st.edges.push(1.0);
            }
            Binning::Adaptive => {
                st.edges.push(threshold);
                st.edges.extend(&upper);
                st.edges.push(1.0);
            }
        }
    }
    st.finish();
    st
}

/// SPEC's reduction (reference.py's `group_error` and `ReferenceBins.error`).
pub fn reference_reduce(st: &BinStats, norm: Norm) -> f64 {
    let mut per_group = Vec::new();
    for g in 0..st.groups {
        let r = g * st.nb..(g + 1) * st.nb;
        let total: f64 = st.count[r.clone()].iter().sum();
        if total == 0.0 {
            per_group.push(0.0);
            continue;
        }
        let mut acc = 0.0f64;
        for i in r {
            let n = st.count[i];
            if n == 0.0 {
                continue;
            }
            let gap = st.sum_outcome[i] / n - st.sum_score[i] / n;
            match norm {
                Norm::L1 => acc += n / total * gap.abs(),
                Norm::L2 => acc += n / total * gap * gap,
                Norm::Max => acc = acc.max(gap.abs()),
            }
        }
        per_group.push(acc);
    }
    let v = per_group.iter().sum::<f64>() / per_group.len() as f64;
    if norm == Norm::L2 {
        v.sqrt()
    } else {
        v
    }
}

/// The tolerance of tables that must agree exactly (every unweighted table builder and
/// [`reference_stats`] sum scores by the same exact rule): `close` then tests `==`.
pub const EXACT: f64 = 0.0;

/// |a - b| within `tol` absolutely or relatively (NaN equals NaN).
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// Asserts two tables agree: shapes, counts and edges exactly, sums within `tol` (0: bit for
/// bit, [`EXACT`]).
/// `skip_first_edge`: the primitive reports 0, the metric kernels the threshold.
pub fn assert_same_stats(what: &str, got: &BinStats, want: &BinStats, tol: f64, skip_first_edge: bool) {
    assert_eq!((got.groups, got.nb), (want.groups, want.nb), "{what}: shape");
    assert_eq!(got.count, want.count, "{what}: counts");
    if tol == EXACT && got.units.len() == got.count.len() && want.units.len() == want.count.len() {
        assert_eq!(got.units, want.units, "{what}: exact score units");
    }
    for i in 0..got.count.len() {
        assert!(close(got.sum_score[i], want.sum_score[i], tol), "{what}: sum_score[{i}] {} vs {}", got.sum_score[i], want.sum_score[i]);
        assert!(close(got.sum_outcome[i], want.sum_outcome[i], tol), "{what}: sum_outcome[{i}] {} vs {}", got.sum_outcome[i], want.sum_outcome[i]);
    }
    assert_eq!(got.edges.len(), want.edges.len(), "{what}: edges length");
    for (i, (a, b)) in got.edges.iter().zip(&want.edges).enumerate() {
        if skip_first_edge && i % (got.nb + 1) == 0 {
            continue;
        }
        assert!(a == b || (a.is_nan() && b.is_nan()), "{what}: edges[{i}] {a} vs {b}");
    }
}
