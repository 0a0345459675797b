//! Per-(group, bin) sufficient statistics: count, sum of scores, sum of outcomes.

/// Statistics of `groups` groups of `nb` bins each, group-major.
#[derive(Debug, Clone, PartialEq)]
pub struct BinStats {
    pub groups: usize,
    pub nb: usize,
    pub count: Vec<f64>,
    pub sum_score: Vec<f64>,
    pub sum_outcome: Vec<f64>,
    /// `groups * (nb + 1)` bin boundaries (see `edges::EvenEdges::boundaries`).
    pub edges: Vec<f64>,
}

impl BinStats {
    pub fn zeros(groups: usize, nb: usize) -> Self {
        BinStats {
            groups,
            nb,
            count: vec![0.0; groups * nb],
            sum_score: vec![0.0; groups * nb],
            sum_outcome: vec![0.0; groups * nb],
            edges: Vec::new(),
        }
    }

    /// Adds another table of the same shape, element by element.
    pub fn add(&mut self, other: &BinStats) {
        debug_assert_eq!(self.count.len(), other.count.len());
        for (a, b) in self.count.iter_mut().zip(&other.count) {
            *a += b;
        }
        for (a, b) in self.sum_score.iter_mut().zip(&other.sum_score) {
            *a += b;
        }
        for (a, b) in self.sum_outcome.iter_mut().zip(&other.sum_outcome) {
            *a += b;
        }
    }

    /// Adds one kept score with its outcome to (group, bin), with Neumaier compensation of the
    /// score sum in `comp` (same layout; fold it in with [`BinStats::apply_compensation`]), so
    /// that long sequential sums (millions of rows into one bin) stay accurate to ~1 ulp.
    #[inline(always)]
    pub fn push_compensated(&mut self, comp: &mut [f64], group: usize, bin: usize, score: f64, outcome: f64) {
        let i = group * self.nb + bin;
        self.count[i] += 1.0;
        let s = self.sum_score[i];
        let t = s + score;
        // Both candidates computed, then selected: no data-dependent branch.
        let a = (s - t) + score;
        let b = (score - t) + s;
        comp[i] += if s.abs() >= score.abs() { a } else { b };
        self.sum_score[i] = t;
        self.sum_outcome[i] += outcome;
    }

    /// Adds the compensation terms gathered by [`BinStats::push_compensated`].
    pub fn apply_compensation(&mut self, comp: &[f64]) {
        for (a, c) in self.sum_score.iter_mut().zip(comp) {
            *a += c;
        }
    }
}
