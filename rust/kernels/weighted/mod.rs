//! Weighted readings of grouped scores: the weighted binning primitive ([`grouped`]:
//! `(group, score, outcome, weight)` rows -> per-(group, bin) table), each entry's cell of a
//! table ([`cells`]), and resampling on the same table ([`resample`]: bootstrap resamples as
//! weights; [`consistency`]: labels redrawn; both with the counter-based draws of [`draws`];
//! [`adaptive`]: bootstrap resamples of adaptive bins from one sorted order), and the
//! weighted even tables of a probability matrix in one pass ([`matrix`]). Every table's
//! sums are exact sums of grid units ([`sums`]), so they do not depend on the order of the
//! rows.

pub mod adaptive;
pub mod cells;
pub mod consistency;
pub mod draws;
pub mod grouped;
pub mod hits;
pub mod matrix;
pub mod matrix_adaptive;
pub mod resample;
pub mod sums;
