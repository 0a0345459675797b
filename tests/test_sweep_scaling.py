"""ece_sweep without a table per bin count (issue 25, items 1 and 5): weighted and unweighted
sweeps choose the bin count the table-per-bin-count sweep chooses, integer weights are the
repeated rows, and the sweeps that were quadratic (hours at 1M rows) are near-linear.
Timings: benches/bench_sweep.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibkit
from calibkit.trust import sweep as sweep_module


def _rises(t) -> bool:
    c, o = t.counts[0], t.sum_outcome[0]
    nz = c > 0
    return bool(np.all(np.diff(o[nz] / c[nz]) >= 0))


def brute_force(labels, probs, *, binning, max_prob=True, sample_weight=None, threshold=0.0,
                top):
    """The sweep as defined: one table per bin count, stop before the first non-monotone."""
    chosen = 1
    for b in range(2, top + 1):
        t = calibkit.calibration_bins(labels, probs, binning=binning, max_prob=max_prob,
                                      num_bins=b, sample_weight=sample_weight,
                                      threshold=threshold)
        if not _rises(t):
            break
        chosen = b
    return chosen


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_integer_weights_are_repeated_rows(binning):
    """Item 1: the bin limit follows the total weight (was: 2 bins and 0.254 vs 5 and 0.406)."""
    r = calibkit.ece_sweep([0, 1], [0.55, 0.81], sample_weight=[3, 2], binning=binning)
    rep = calibkit.ece_sweep([0, 0, 0, 1, 1], [0.55] * 3 + [0.81] * 2, binning=binning)
    assert (r.num_bins, r.value) == (rep.num_bins, rep.value)
    if binning == "even":
        assert (r.num_bins, round(r.value, 12)) == (5, 0.406)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_integer_weights_random(binning):
    rng = np.random.default_rng(3)
    p = rng.choice(np.linspace(0.5, 1.0, 9), 40)
    y = (rng.uniform(size=40) < p**2).astype(int)
    w = rng.integers(0, 4, 40)
    w[0] = 1
    r = calibkit.ece_sweep(y, p, sample_weight=w, binning=binning)
    rep = calibkit.ece_sweep(np.repeat(y, w), np.repeat(p, w), binning=binning)
    assert r.num_bins == rep.num_bins
    assert r.value == pytest.approx(rep.value, abs=1e-12)


def test_weighted_sweep_builds_no_table_per_bin_count(monkeypatch):
    """Item 5, weighted: the old sweep built one full table per bin count (16k rows: 13-39 s);
    now at most two (bin count 1 and the chosen one), however far the sweep runs."""
    calls = []
    real = sweep_module.calibration_bins
    monkeypatch.setattr(sweep_module, "calibration_bins",
                        lambda *a, **k: calls.append(k["num_bins"]) or real(*a, **k))
    rng = np.random.default_rng(0)
    n = 2000
    p = np.sort(rng.uniform(0.5, 1.0, n))
    y = (np.arange(n) >= n // 2).astype(int)
    y[n // 2 - 1], y[n // 2] = 1, 0  # one swapped pair: the sweep runs to ~N bins
    r = calibkit.ece_sweep(y, p, sample_weight=rng.uniform(0.5, 2.0, n))
    assert r.num_bins > n // 4
    assert len(calls) <= 2


def test_million_row_sweeps_finish():
    """Item 5: at 1M rows the old sweep took about an hour (monotone data, one swapped pair);
    run in a child process with a limit hundreds of times the new sweep's few seconds."""
    code = textwrap.dedent("""
        import numpy as np, calibkit
        n = 1_000_000
        p = np.sort(np.random.default_rng(0).uniform(0.5, 1.0, n))
        y = (np.arange(n) >= n // 2).astype(np.int64)
        y[n // 2 - 1], y[n // 2] = 1, 0
        for binning in ("adaptive", "even"):
            print(calibkit.ece_sweep(y, p, binning=binning).num_bins)
        w = np.random.default_rng(1).uniform(0.1, 2.0, n)
        print(calibkit.ece_sweep((np.arange(n) >= n // 2), p, sample_weight=w).num_bins)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    adaptive, even, weighted = map(int, out.stdout.split())
    assert adaptive > 100_000 and even > 100_000 and weighted == 1_000_000


def test_max_bins_bounded():
    with pytest.raises(calibkit.InvalidParameterError, match="max_bins"):
        calibkit.ece_sweep([0, 1], [0.3, 0.8], max_bins=10**12)


@st.composite
def sweep_inputs(draw):
    n = draw(st.integers(1, 60))
    grid = draw(st.sampled_from([None, 5, 11]))  # None: distinct scores; else ties
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = rng.uniform(0.5, 1.0, n) if grid is None else rng.choice(np.linspace(0.5, 1, grid), n)
    if draw(st.booleans()):  # nearly monotone: sorted, separable, a few swaps
        p = np.sort(p)
        y = (np.arange(n) >= draw(st.integers(0, n))).astype(int)
        for _ in range(draw(st.integers(0, 3))):
            i = int(rng.integers(0, max(n - 1, 1)))
            y[[i, min(i + 1, n - 1)]] = y[[min(i + 1, n - 1), i]]
    else:
        y = (rng.uniform(size=n) < p ** draw(st.sampled_from([1, 2, 4]))).astype(int)
    kind = draw(st.sampled_from(["none", "int", "float", "small"]))
    w = None
    if kind == "int":
        w = rng.integers(0, 4, n).astype(float)
    elif kind in ("float", "small"):
        w = rng.uniform(0, 2, n) * (rng.uniform(size=n) > 0.2)
        if kind == "small" and w.sum():  # normalised: lifted for the adaptive ranks
            w = w / w.sum()
    if w is not None and not w.sum():
        w[0] = 1.0
    return y, p, w, draw(st.sampled_from(["even", "adaptive"])), draw(st.sampled_from([0.0, 0.7]))


@settings(max_examples=200, deadline=None)
@given(sweep_inputs(), st.sampled_from([2, 5, sweep_module._FIRST]))
def test_sweep_equals_table_per_bin_count(case, first):
    """The sweep family: the chosen bin count is the table-per-bin-count sweep's, weighted or
    not, ties, thresholds and zero weights included; the value is gce's at that bin count.
    ``first``: where the boundary-by-boundary start hands over to the isotonic blocks."""
    y, p, w, binning, threshold = case
    with mock.patch.object(sweep_module, "_FIRST", first):
        r = calibkit.ece_sweep(y, p, binning=binning, sample_weight=w, threshold=threshold)
    if w is None:
        top = len(y)
    elif np.all(w == np.floor(w)):
        top = int(w.sum())
    else:
        top = int(np.count_nonzero(w))
    assert r.num_bins == max(1, brute_force(y, p, binning=binning, sample_weight=w,
                                            threshold=threshold, top=min(top, r.num_bins + 1)))
    assert r.value == calibkit.gce(y, p, binning=binning, num_bins=r.num_bins, sample_weight=w,
                                   threshold=threshold)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 80), st.integers(2, 5), st.integers(0, 2**32 - 1), st.booleans())
def test_sweep_all_probabilities(n, k, seed, weighted):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.5), n)
    labels = rng.integers(0, k, n)
    w = rng.integers(1, 3, n).astype(float) if weighted else None
    for binning in ("even", "adaptive"):
        with mock.patch.object(sweep_module, "_FIRST", 2):
            r = calibkit.ece_sweep(labels, probs, binning=binning, max_prob=False,
                                   sample_weight=w)
        top = n if w is None else int(w.sum())
        assert r.num_bins == brute_force(labels, probs, binning=binning, max_prob=False,
                                         sample_weight=w, top=min(top, r.num_bins + 1))


def test_sweep_edges_are_the_engines():
    """The vectorised edge rules the sweep uses (one native call per bin count would make it
    quadratic) are the engine's, bit for bit: ``even_edges`` against ``even_boundaries``,
    ``even_bin_of`` against the kernels' even tables, ``adaptive_ranks`` (through the sweep's
    edge rows) against ``adaptive_positions``."""
    from calibkit.binned.table import (
        adaptive_positions,
        even_bin_of,
        even_boundaries,
        even_edges,
        grouped_bin_stats,
    )
    from calibkit.trust.sweep import _Sweep

    rng = np.random.default_rng(5)
    counts = np.r_[np.arange(1, 300), rng.integers(300, 10**6, 40)]
    for b in counts:
        b = int(b)
        j = np.arange(1, b + 1)
        assert np.array_equal(even_edges(np.full(b, b), j), even_boundaries(b)[1:b + 1]), b
    s = np.sort(np.r_[rng.uniform(size=3000), np.linspace(0, 1, 101), [0.0, 1.0]])
    for b in (1, 2, 3, 7, 10, 15, 33, 100, 999):
        got = even_bin_of(s, np.full(s.size, b))
        c = grouped_bin_stats(None, s, np.zeros(s.size), binning="even", num_bins=b)[0][0]
        assert np.array_equal(np.bincount(got, minlength=b + 1), c), b
    for n in (5, 17, 1000, 3001):
        sw = _Sweep(np.arange(n, dtype=float), np.arange(n + 1.0), None, None, None, "adaptive")
        for b in (2, 3, 7, 15, min(n, 100), n):
            j = np.arange(1, b)
            assert np.array_equal(sw._position(np.full(b - 1, b), j), adaptive_positions(n, b)), (n, b)
