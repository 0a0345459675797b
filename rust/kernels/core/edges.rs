//! Bin edges and bin assignment (docs/spec.md, "Bins inside a group").
//!
//! A score goes to the bin numbered by how many upper edges are <= it (left-closed bins).

/// Even upper edges `u_j = j * (1/B)` for j = 1..B as `np.linspace(0, 1, B+1)[1:]` computes
/// them (last exactly 1.0). Edges are computed, not looked up, so that binning is a short run
/// of arithmetic and selects, done four scores at a time with AVX2 ([`EvenEdges::bin4`]).
#[derive(Debug, Clone)]
pub struct EvenEdges {
    pub b: usize,
    bf: f64,
    step: f64,
}

impl EvenEdges {
    pub fn new(b: usize) -> Self {
        EvenEdges { b, bf: b as f64, step: 1.0 / b as f64 }
    }

    /// Upper edge `u_j` for j in 1..=B (`u_B` = 1.0 exactly). Also used, unclamped, for
    /// j = 0 (0.0) and j = B+1 (> 1) by [`EvenEdges::bin`], which clamps its result instead.
    #[inline(always)]
    fn edge(&self, j: f64) -> f64 {
        if j == self.bf {
            1.0
        } else {
            j * self.step
        }
    }

    /// Bin of score `s` in 0..=B (B is the extra bin of scores >= 1.0; NaN goes to bin 0).
    /// Branch-free: a guess g by multiply-and-truncate, corrected by one comparison on each
    /// side against the exact edges u_g and u_{g+1}, then clamped to 0..=B (which covers
    /// negative scores, scores above 1 and infinities).
    #[inline(always)]
    pub fn bin(&self, s: f64) -> usize {
        let t = s * self.bf;
        let t = if t > 0.0 { t } else { 0.0 }; // negatives and NaN
        let t = if t < self.bf { t } else { self.bf };
        // t is in [0, B] and B <= MAX_BINS fits in i32: the (saturating) conversion is exact.
        // `to_int_unchecked` gained nothing measurable: the hot vector kernels use `bin4`,
        // and the per-row scalar uses (`toplabel::stats`) are bound by their table updates.
        let g = t as i32;
        let gf = g as f64;
        let up = (s >= self.edge(gf + 1.0)) as i32;
        let down = (s < self.edge(gf)) as i32;
        (g + up - down).clamp(0, self.b as i32) as usize
    }

    /// [`EvenEdges::bin`] of four scores, as i32 lanes (register operations only).
    ///
    /// # Safety
    /// Outside AVX2 code, only callable once AVX2 is known to be available.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    pub fn bin4(&self, s: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m128i {
        use std::arch::x86_64::*;
        let bf = _mm256_set1_pd(self.bf);
        let step = _mm256_set1_pd(self.step);
        let (zero, one) = (_mm256_setzero_pd(), _mm256_set1_pd(1.0));
        let edge = |j: __m256d| _mm256_blendv_pd(_mm256_mul_pd(j, step), one, _mm256_cmp_pd(j, bf, _CMP_EQ_OQ));
        // max(t, 0) returns 0 for NaN t (the second operand), as `bin` does.
        let t = _mm256_min_pd(_mm256_max_pd(_mm256_mul_pd(s, bf), zero), bf);
        let g = _mm256_round_pd(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        let up = _mm256_and_pd(_mm256_cmp_pd(s, edge(_mm256_add_pd(g, one)), _CMP_GE_OQ), one);
        let down = _mm256_and_pd(_mm256_cmp_pd(s, edge(g), _CMP_LT_OQ), one);
        let bin = _mm256_min_pd(_mm256_max_pd(_mm256_sub_pd(_mm256_add_pd(g, up), down), zero), bf);
        _mm256_cvttpd_epi32(bin)
    }

    /// The first upper edge u_1 (1.0 when B = 1): scores below it are in bin 0.
    #[inline(always)]
    pub fn first_edge(&self) -> f64 {
        self.edge(1.0)
    }

    /// Number of bins including the extra one for 1.0.
    pub fn num_bins(&self) -> usize {
        self.b + 1
    }

    /// Bin boundaries for reports: 0, u_1, ..., u_B = 1.0, and 1.0 again closing the extra bin.
    pub fn boundaries(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.b + 2);
        v.push(0.0);
        v.extend((1..=self.b).map(|j| self.edge(j as f64)));
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
        v.extend(std::iter::repeat_n(f64::NAN, b - 1));
    } else {
        v.extend_from_slice(edges);
    }
    v.push(1.0);
    v
}
