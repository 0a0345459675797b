//! Bin edges and bin assignment (SPEC.md "Bins inside a group").
//!
//! A score goes to the bin numbered by how many upper edges are <= it (left-closed bins).

/// Even upper edges `u_j = j * (1/B)` for j = 1..B as `np.linspace(0, 1, B+1)[1:]` computes
/// them (last exactly 1.0), with sentinels: `table[0] = -inf`, `table[B+1] = +inf`.
#[derive(Debug, Clone)]
pub struct EvenEdges {
    pub b: usize,
    bf: f64,
    table: Vec<f64>,
}

impl EvenEdges {
    pub fn new(b: usize) -> Self {
        let step = 1.0 / b as f64;
        let mut table = Vec::with_capacity(b + 2);
        table.push(f64::NEG_INFINITY);
        for j in 1..b {
            table.push(j as f64 * step);
        }
        table.push(1.0);
        table.push(f64::INFINITY);
        EvenEdges { b, bf: b as f64, table }
    }

    /// Bin of score `s` in 0..=B (B is the extra bin of scores >= 1.0). Branch-free: a guess
    /// by multiply-and-floor, corrected by one comparison on each side against the exact edges.
    #[inline(always)]
    pub fn bin(&self, s: f64) -> usize {
        // `as usize` saturates (NaN -> 0), and the clamp keeps the guess in 0..=B.
        let g = ((s * self.bf) as usize).min(self.b);
        let up = (s >= self.table[g + 1]) as usize;
        let down = (s < self.table[g]) as usize;
        g + up - down
    }

    /// The first upper edge u_1 (1.0 when B = 1): scores below it are in bin 0.
    #[inline(always)]
    pub fn first_edge(&self) -> f64 {
        self.table[1]
    }

    /// Number of bins including the extra one for 1.0.
    pub fn num_bins(&self) -> usize {
        self.b + 1
    }

    /// Bin boundaries for reports: 0, u_1, ..., u_B = 1.0, and 1.0 again closing the extra bin.
    pub fn boundaries(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.b + 2);
        v.push(0.0);
        v.extend_from_slice(&self.table[1..=self.b]);
        v.push(1.0);
        v
    }
}

/// Positions of the adaptive edges in a sorted group of `n` scores: `round_half_even(j * (n/B))`
/// for j = 1..B-1, clipped to n-1 (as `np.round(np.linspace(0, n, B, endpoint=False))`).
pub fn adaptive_positions(n: usize, b: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let step = n as f64 / b as f64;
    (1..b)
        .map(|j| ((j as f64 * step).round_ties_even() as usize).min(n - 1))
        .collect()
}

/// The B-1 adaptive upper edges of a sorted group (empty if the group is empty).
pub fn adaptive_edges(sorted: &[f64], b: usize) -> Vec<f64> {
    adaptive_positions(sorted.len(), b).into_iter().map(|p| sorted[p]).collect()
}

/// Bin of `s` given non-decreasing upper edges: the number of edges <= s.
#[inline]
pub fn bin_by_edges(edges: &[f64], s: f64) -> usize {
    edges.partition_point(|&e| e <= s)
}

/// Bin boundaries of an adaptive group for reports: threshold, the B-1 edges, 1.0.
pub fn adaptive_boundaries(edges: &[f64], b: usize, threshold: f64) -> Vec<f64> {
    let mut v = Vec::with_capacity(b + 1);
    v.push(threshold);
    if edges.is_empty() {
        v.extend(std::iter::repeat(f64::NAN).take(b - 1));
    } else {
        v.extend_from_slice(edges);
    }
    v.push(1.0);
    v
}
