//! Binning-free estimators' per-prediction passes: the Kolmogorov-Smirnov calibration error
//! ([`ks`]), the smooth ECE's grid ([`smooth`]) and isotonic regression for the CORP
//! decomposition ([`isotonic`]).

pub mod isotonic;
pub mod ks;
pub mod smooth;
