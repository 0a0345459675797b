# Stub of the private Rust extension module calibkit._native (rust/py/mod.rs).
# tests/test_native_stub.py checks that it matches the compiled module's signatures.
# Inputs must already be validated structurally by calibkit._validate: labels int64 (N,),
# probs C-contiguous float32/float64 (N, K). Value errors raise calibkit.errors classes.

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

RANGE_TOL: float
ROW_SUM_TOL: float
MAX_BINS: int
UNIT: float

# Exact cell sums (rust/py/units.rs)
def weight_scale(max_weight: float) -> float:
    """The power of two weights are lifted by: 1 when the largest weight is at least 1/2, else
    the one bringing it into [1/2, 1) (the sums' and the adaptive edges' lift)."""
def units_add(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The exact sum of two tables' score units, each (G, nb, 2) int64 [high, low] words."""
def units_value(u: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Each cell's exact unit sum rounded once to float64 (G, nb): the kernels' sum_score."""
def units_sum_at(
    words: npt.NDArray[np.int64], cells: npt.NDArray[np.int64], num_cells: int
) -> npt.NDArray[np.int64]:
    """The exact sums of (M, 2) unit words by cell: int64 (1, num_cells, 2)."""
def units_sum_parts(parts: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """The exact sum of unit sums given as int64 (n,) or (n, 2) words: int64 (n, 2)."""

# The selection pass of calibkit.dask (rust/py/select.rs). A plan is (threshold, regions int64
# (R, 5) rows [group, kind (0 grid, 1 buckets, 2 fetch, 3 grid tabled per super-bucket),
# bounds start, bounds length, slot or target id], bounds int64, size); plans sorted by
# threshold. A kind-3 region's slot is its first super-bucket's (16 grid buckets a table), its
# buckets' counts at 16 * slot. Per plan: (counts (size,), outcome counts (size,), score units
# (size,) or (size, 2), grid bucket counts uint32 (16 * slot + buckets of the last kind-3
# region), fetched ids int64, fetched scores (the input dtype), fetched outcomes bool); counts
# and outcome counts int32 or int64 (``calibkit.scale.select.unpack_tables``).
def select_scan(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    max_prob: bool,
    class_conditional: bool,
    plans: list[tuple[float, npt.NDArray[np.int64], npt.NDArray[np.int64], int]],
) -> list[tuple[Any, ...]]: ...
def select_scan_pairs(
    confidence: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    correct: npt.NDArray[np.uint8],
    predicted: npt.NDArray[np.int64] | None,
    num_classes: int,
    class_conditional: bool,
    plans: list[tuple[float, npt.NDArray[np.int64], npt.NDArray[np.int64], int]],
) -> list[tuple[Any, ...]]: ...
def select_keys(scores: npt.NDArray[np.float32] | npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """The selection's order-preserving int64 key of each score (its bit pattern)."""
MAX_TABLE_CELLS: int

def gce(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    binning: str,
    max_prob: bool,
    class_conditional: bool,
    threshold: float,
    norm: str,
    num_bins: int,
    check_row_sums: bool = True,
) -> float: ...
def bin_stats(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    binning: str,
    max_prob: bool,
    class_conditional: bool,
    threshold: float,
    num_bins: int,
    check_row_sums: bool = True,
    units: bool = False,
) -> tuple[Any, ...]: ...
    # (counts, sum_score, sum_outcome, edges), and with units=True the exact score units
    # (int64 (G, nb, 2) [high, low] words, or None)
def evaluate(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    specs: list[tuple[str, bool, bool, float, str]],
    num_bins: list[int],
    check_row_sums: bool = True,
) -> npt.NDArray[np.float64]: ...

def reduce_table(
    counts: npt.NDArray[np.float64],
    sum_score: npt.NDArray[np.float64],
    sum_outcome: npt.NDArray[np.float64],
    norm: str,
    class_conditional: bool,
) -> float:
    """The metric of one per-(group, bin) table: the one reduction (rust/kernels/core/reduce.rs).

    ``counts``, ``sum_score`` and ``sum_outcome`` are C-contiguous float64 arrays of one shape
    (G, nb), G >= 1 and nb >= 1, as ``bin_stats`` returns them (its int64 counts converted to
    float64). With gap = mean outcome - mean score of a bin, a group's error over its non-empty
    bins is the count-weighted mean of ``|gap|`` (``"l1"``) or ``gap**2`` (``"l2"``), or the
    largest ``|gap|`` (``"max"``), 0 for an empty group; with ``class_conditional`` the groups'
    errors are averaged (a pooled table, not ``class_conditional``, has one group); l2 takes one
    square root at the end. On the table of ``bin_stats(...)`` it is bitwise the float
    ``gce(...)`` returns for the same arguments. Raises ShapeMismatchError (shapes differ, not
    2-D, empty, not C-contiguous, a pooled table of several groups), InputTypeError (not a
    float64 array) or InvalidParameterError (unknown norm; counts not finite and >= 0, sums not
    finite).
    """
    ...

# Binning-free estimators (rust/py/binning_free.rs)
def toplabel_pairs(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    check_row_sums: bool = True,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]: ...
def check_values(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    check_row_sums: bool = True,
) -> None: ...
def check_pairs(
    confidence: npt.NDArray[np.float64],
    correct: npt.NDArray[np.uint8],
    predicted: npt.NDArray[np.int64] | None,
    num_classes: int,
) -> None: ...
def smooth_grid(
    scores: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64] | None,
    m: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def ks_error(
    scores: npt.NDArray[np.float64],
    outcomes: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64] | None = None,
) -> float: ...
def isotonic_fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.float64]: ...

# Top-label pairs (rust/py/pairs.rs): confidence contiguous float32/float64 (N,), correct uint8
# (N,) 0/1, predicted int64 (N,) or None, num_classes >= 1 (1 when only pooled metrics).
def pairs_gce(
    confidence: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    correct: npt.NDArray[np.uint8],
    predicted: npt.NDArray[np.int64] | None,
    num_classes: int,
    binning: str,
    class_conditional: bool,
    threshold: float,
    norm: str,
    num_bins: int,
) -> float: ...
def pairs_bin_stats(
    confidence: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    correct: npt.NDArray[np.uint8],
    predicted: npt.NDArray[np.int64] | None,
    num_classes: int,
    binning: str,
    class_conditional: bool,
    threshold: float,
    num_bins: int,
    units: bool = False,
) -> tuple[Any, ...]: ...
    # (counts, sum_score, sum_outcome, edges), and with units=True the exact score units
    # (int64 (G, nb, 2) [high, low] words, or None)
def pairs_evaluate(
    confidence: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    correct: npt.NDArray[np.uint8],
    predicted: npt.NDArray[np.int64] | None,
    num_classes: int,
    specs: list[tuple[str, bool, bool, float, str]],
    num_bins: list[int],
) -> npt.NDArray[np.float64]: ...

# Weighted grouped statistics (rust/py/grouped.rs)
def grouped_bin_stats(
    groups: npt.NDArray[np.int64] | None,
    scores: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    outcomes: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64] | None,
    num_groups: int,
    binning: str,
    num_bins: int,
    units: bool = False,
) -> tuple[Any, ...]: ...
    # (counts, sum_score, sum_outcome, edges), and with units=True the exact score units
    # (int64 (G, nb, 2) [high, low] words, or None)
def weighted_matrix_stats(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    binning: str,
    class_conditional: Sequence[bool],
    threshold: float,
    num_bins: Sequence[int],
) -> list[list[tuple[Any, ...]]]: ...
    # per grouping, per bin count: grouped_bin_stats(..., units=True) of the all-probabilities
    # grouping's kept triples, each weighted by its row's weight, from the matrix
def adaptive_positions(n: int, num_bins: int) -> npt.NDArray[np.int64]: ...
def adaptive_positions_of(sizes: npt.NDArray[np.int64], num_bins: int) -> npt.NDArray[np.int64]: ...
def resample_bootstrap(
    cell: npt.NDArray[np.uint32],
    score: npt.NDArray[np.float64],
    hit: npt.NDArray[np.uint32],
    base: npt.NDArray[np.float64] | None,
    groups: int,
    nb: int,
    norm: str,
    class_conditional: bool,
    weights: str,
    seed: int,
    n_resamples: int,
) -> npt.NDArray[np.float64]: ...
def resample_consistency(
    cell: npt.NDArray[np.uint32],
    score: npt.NDArray[np.float64],
    hit: npt.NDArray[np.uint32],
    base: npt.NDArray[np.float64] | None,
    groups: int,
    nb: int,
    norm: str,
    class_conditional: bool,
    seed: int,
    n_resamples: int,
) -> npt.NDArray[np.float64]: ...
class AdaptiveBootstrap:
    """The sorted order of a cell table's kept entries (calibkit.trust.cells' layout), built
    once; ``resample`` runs any block of adaptive bootstrap resamples on it."""

    def __init__(
        self,
        cell: npt.NDArray[np.uint32],
        score: npt.NDArray[np.float64],
        hit: npt.NDArray[np.uint32],
        groups: int,
        nb: int,
    ) -> None: ...
    def resample(
        self,
        base: npt.NDArray[np.float64] | None,
        num_bins: int,
        norm: str,
        class_conditional: bool,
        weights: str,
        seed: int,
        n_resamples: int,
        first: int = 0,
    ) -> npt.NDArray[np.float64]:
        """Resamples ``first..first + n_resamples`` (those of one call), (n_resamples,)."""

def score_rows(
    labels: npt.NDArray[np.int64],
    probs: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    max_prob: bool,
    class_conditional: bool,
    threshold: float,
    check_row_sums: bool = True,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
]: ...
def bootstrap_weights(
    weights: str, seed: int, r0: int, count: int, n: int
) -> npt.NDArray[np.float64]: ...
def consistency_draws(
    score: npt.NDArray[np.float64], seed: int, r0: int, count: int
) -> npt.NDArray[np.int64]:
    """The labels of consistency resamples ``r0..r0 + count``, shape (count, N): a class per
    row of an (N, K) C-contiguous probability matrix (the draws ``resample_consistency`` makes
    for all-probability cells), or 1 = correct for (N, 1) top-label confidences (its draws for
    top-label cells). A top-label metric of a matrix redraws only "correct": the same law as
    a drawn class equal to the prediction, not the same draw. Non-finite scores are an
    InvalidProbabilitiesError."""
def grouped_bin_stats_at(
    groups: npt.NDArray[np.int64] | None,
    scores: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    outcomes: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64] | None,
    num_groups: int,
    edges: npt.NDArray[np.float64],
    units: bool = False,
) -> tuple[Any, ...]: ...
    # (counts, sum_score, sum_outcome, edges), and with units=True the exact score units
    # (int64 (G, nb, 2) [high, low] words, or None)

# Per-entry cells of a table (rust/py/cells.rs)
def table_cells(
    scores: npt.NDArray[np.float64],
    groups: npt.NDArray[np.int64] | None,
    num_groups: int,
    num_bins: int,
    edges: npt.NDArray[np.float64] | None = None,
    threshold: float | None = None,
    by_column: bool = False,
) -> npt.NDArray[np.uint32]: ...
# The SIMD layer (rust/py/simd.rs): "portable", "avx2" or "avx512", the instruction set the
# kernels dispatch on (this CPU's, capped by CALIBKIT_SIMD, read once per process).
def simd_level() -> str: ...
