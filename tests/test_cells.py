"""The trust layer's per-entry cells come from the kernel (``_native.table_cells``): they equal
the kernel's binning, i.e. their counts and sums are the table ``calibration_bins`` returns, and
each cell is SPEC's left-closed bin of its score (restated here, in the test, as the
independent check) -- on scores exactly on bin edges, at exactly 1.0 and exactly at the
threshold, for every grouping and both binnings, matrix and top-label pair input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import calibkit
from calibkit import _native
from calibkit._toplabel import resolve
from calibkit.errors import CalibkitError
from calibkit.space import MetricSpec
from calibkit.trust.cells import DROPPED, pair_cells, row_cells


def _edgy(n: int, k: int, b: int, threshold: float, seed: int):
    """Rows whose entries sit on the even edges j/B (and the float64 edges j * (1/B)), at
    exactly 1.0 and exactly at the threshold, plus a few random ones; labels at random."""
    rng = np.random.default_rng(seed)
    special = np.concatenate([np.arange(b + 1) / b, np.arange(b + 1) * (1.0 / b),
                              [1.0, threshold, 0.0, 0.5]])
    p = np.empty((n, k))
    for i in range(n):
        c = rng.integers(k)
        top = special[rng.integers(special.size)] if rng.random() < 0.8 else rng.random()
        top = max(top, 1.0 / k)
        p[i] = (1.0 - top) / max(k - 1, 1)
        p[i, c] = top if k > 1 else 1.0
        if rng.random() < 0.1:
            p[i] = 1.0 / k  # all tied: argmax 0, every entry on 1/k
    return rng.integers(k, size=n), p


def _spec_bins(scores, edges_row, binning, b):
    """SPEC's bin (left-closed: the number of upper edges <= s), written here independently."""
    if binning == "even":
        upper = np.linspace(0, 1, b + 1)[1:]
    else:
        upper = edges_row[1:-1]
    return np.searchsorted(upper, scores, side="right")


SPECS = [MetricSpec(b, mp, cc, t, "l1")
         for b, mp, cc, t in itertools.product(["even", "adaptive"], [True, False], [False, True],
                                               [0.0, 0.01, 0.3, 0.5])]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.canonical_name)
@pytest.mark.parametrize("b", [1, 3, 10])
def test_matrix_cells_are_the_kernel_binning(spec, b):
    y, p = _edgy(300, 4, b, spec.threshold, seed=b)
    rc = row_cells(y, p, spec, b)
    t = calibkit.calibration_bins(y, p, num_bins=b, binning=spec.binning, max_prob=spec.max_prob,
                                  class_conditional=spec.class_conditional,
                                  threshold=spec.threshold)
    nb = t.counts.shape[1]
    cell = rc.cell.reshape(-1)
    score = rc.score.reshape(-1)
    kept = cell != DROPPED
    # kept exactly when score > threshold (entries at the threshold dropped)
    assert np.array_equal(kept, score > spec.threshold)
    # the cells' counts and score sums are the kernel's table
    counts = np.bincount(cell[kept], minlength=t.counts.size).reshape(t.counts.shape)
    assert np.array_equal(counts, t.counts)
    sums = np.bincount(cell[kept], weights=score[kept], minlength=t.counts.size)
    np.testing.assert_allclose(sums.reshape(t.counts.shape), t.sum_score, rtol=1e-12, atol=1e-12)
    # each cell is SPEC's bin of its score in its group
    group, col = cell[kept] // nb, cell[kept] % nb
    if spec.max_prob:
        want_group = np.argmax(p, axis=1)[kept[:]] if spec.class_conditional else 0
    else:
        want_group = np.tile(np.arange(p.shape[1]), p.shape[0])[kept] if spec.class_conditional else 0
    assert np.array_equal(group, np.broadcast_to(want_group, group.shape))
    for g in np.unique(group):
        m = group == g
        assert np.array_equal(col[m], _spec_bins(score[kept][m], t.edges[g], spec.binning, b))


@pytest.mark.parametrize("spec", [s for s in SPECS if s.max_prob], ids=lambda s: s.canonical_name)
def test_pair_cells_equal_the_matrix_cells(spec):
    b = 10
    y, p = _edgy(400, 5, b, spec.threshold, seed=3)
    pred = np.argmax(p, axis=1)
    pairs = resolve(None, None, p.max(axis=1), pred == y, pred, 5)
    a = pair_cells(pairs, spec, b)
    m = row_cells(y, p, spec, b)
    assert np.array_equal(a.cell, m.cell)
    assert np.array_equal(a.hit, m.hit)


def test_table_cells_binding_edges_ones_and_thresholds():
    b = 10
    s = np.concatenate([np.arange(b + 1) / b, np.arange(b + 1) * (1.0 / b), [1.0, 0.3]])
    cells = _native.table_cells(s, None, 1, b)
    assert np.array_equal(cells, _spec_bins(s, None, "even", b))
    assert cells[-2] == b  # exactly 1.0: the extra bin
    cut = _native.table_cells(s, None, 1, b, None, 0.3)
    assert np.array_equal(cut == DROPPED, s <= 0.3)
    edges = np.array([[0.0, 0.2, 0.2, 0.7, 1.0]])
    cells = _native.table_cells(s, None, 1, 4, edges)
    assert np.array_equal(cells, np.searchsorted([0.2, 0.2, 0.7], s, side="right"))
    g = np.arange(s.size, dtype=np.int64) % 2
    two = np.array([[0.0, 0.5, 1.0], [0.0, 0.1, 1.0]])
    cells = _native.table_cells(s, g, 2, 2, two)
    assert np.array_equal(cells, g * 2 + np.where(g == 0, s >= 0.5, s >= 0.1))
    # by_column: the flattened (N, 2) matrix's columns are the groups (here, g = index % 2)
    assert np.array_equal(_native.table_cells(s, None, 2, 2, two, None, True), cells)


@pytest.mark.parametrize("args", [
    (np.array([0.5]), np.array([1]), 1, 3),                 # group out of range
    (np.array([0.5]), None, 0, 3),                          # no group
    (np.array([0.5]), None, 1, 0),                          # no bin
    (np.array([0.5]), None, 1, 10**7),                      # beyond the bin limit
    (np.array([0.5]), None, 10**6, 10**6),                  # beyond the table limit
    (np.array([np.nan]), None, 1, 3),                       # NaN has no bin
    (np.array([0.5]), None, 1, 3, np.array([[0.0, 0.6, 0.2, 1.0]])),  # decreasing edges
    (np.array([0.5]), None, 1, 3, np.array([[0.0, 0.6, 1.0]])),       # wrong shape
    (np.array([0.5, 0.6, 0.7]), None, 2, 3, None, None, True),  # not rows of 2 columns
    (np.array([0.5]), np.array([0]), 1, 3, None, None, True),   # ids and by_column together
])
def test_table_cells_refuses_bad_arguments(args):
    with pytest.raises(CalibkitError):
        _native.table_cells(*args)


def test_histogram_recalibrator_bins_are_the_kernel_rule():
    from calibkit.recalibration.binning import _assign, apply_histogram

    edges = np.array([0.0, 0.2, 0.2, 0.5, 0.9, 1.0])
    x = np.array([[0.0, 0.2, 0.19999999999999998], [0.5, 0.9, 1.0], [0.95, 0.49, 0.3]])
    want = np.searchsorted(edges[1:-1], x, side="right")  # SPEC's left-closed rule
    assert np.array_equal(_assign(x, edges), want)
    values = np.arange(5.0)
    assert np.array_equal(apply_histogram(x, edges, values), values[want])
