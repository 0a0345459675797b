//! The machinery every reading shares: the element types ([`score`]) and input view
//! ([`inputs`]), what one metric is ([`spec`]), the input checks ([`validate`], with the
//! errors of [`error`]), bin edges ([`edges`]), sort keys of scores and their radix sort ([`order`]), the per-(group, bin) table ([`stats`]) and the
//! one reduction of a table to a number ([`reduce`]); and the execution layer: fixed row chunks
//! folded in order ([`chunks`]), short work shared with the calling thread ([`share`]), and the
//! one SIMD dispatch ([`simd`]). Nothing here imports a reading (`gce`, `weighted`, `binfree`).

pub mod chunks;
pub mod edges;
pub mod error;
pub mod inputs;
pub mod order;
pub mod reduce;
pub mod score;
pub mod share;
pub(crate) mod simd;
pub mod spec;
pub mod stats;
pub mod units;
pub mod validate;
