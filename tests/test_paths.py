"""One result per metric whatever the entry point (the table of paths in rust/kernels/mod.rs
and docs/architecture.md).

``gce`` (and the named metrics), ``evaluate``, ``calibration_bins(...).error(norm)`` and
``confidence_interval(...).value`` for all 32 metrics of the paper's space, float32 and
float64, short (K <= 16) and long rows, with 1 and 2 threads: bitwise equal for every metric
(one kernel path, or paths whose sums are exact or add in the same order, and one reduction,
the Rust ``reduce_table``). Also the sums at 10M repeated scores: ``evaluate`` equals ``gce``
and both are within 1e-12 of the exact value.

``gce(sample_weight=ones)`` goes through the weighted table builder
(``rust/kernels/weighted/grouped.rs``): bitwise ``gce`` too, since every builder keeps exact
cell sums in grid units (docs/spec.md, "Cell sums"), whatever the order it adds them in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from _softmax_rows import PROGRAM_HEADER

import calibkit

BINS = [1, 3, 10, 15, 25, 120]

_PROGRAM = PROGRAM_HEADER + r"""
import json, sys
import numpy as np
import calibkit

from _softmax_rows import data

bins = json.loads(sys.argv[1])
out = {}
space = calibkit.metric_space()
for n, k in [(3000, 3), (40000, 10), (3000, 17), (2000, 64)]:
    for dtype in (np.float64, np.float32):
        y, p = data(n, k, dtype, n + k)
        ev = np.asarray(calibkit.evaluate(y, p, space=space, num_bins=bins).values)
        for m, (binning, max_prob, cc, thr, norm) in enumerate(space.to_tuples()):
            for j, b in enumerate(bins):
                g = calibkit.gce(y, p, binning=binning, max_prob=max_prob, class_conditional=cc,
                                 threshold=thr, norm=norm, num_bins=b)
                tb = calibkit.calibration_bins(y, p, binning=binning, max_prob=max_prob,
                                               class_conditional=cc, threshold=thr, num_bins=b)
                table = [np.asarray(a, dtype=np.float64).ravel().tolist()
                         for a in (tb.counts, tb.sum_score, tb.sum_outcome)]
                key = f"{n}x{k} {np.dtype(dtype).name} {m} {binning} {max_prob} {cc} {thr} {norm} {b}"
                others = [tb.error(norm)]
                if n <= 3000 and b in (3, 15):  # the slower entry points on a subset
                    spec = calibkit.MetricSpec(binning, max_prob, cc, thr, norm)
                    others.append(calibkit.confidence_interval(y, p, spec, num_bins=b,
                                                               n_resamples=1).value)
                    others.append(calibkit.gce(y, p, binning=binning, max_prob=max_prob,
                                               class_conditional=cc, threshold=thr, norm=norm,
                                               num_bins=b, sample_weight=np.ones(n)))
                out[key] = [float(g).hex(), float(ev[m, j]).hex(), table,
                            [float(v).hex() for v in others]]
print(json.dumps(out))
"""


def _run(threads: str) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=threads)
    r = subprocess.run([sys.executable, "-c", _PROGRAM, json.dumps(BINS)], capture_output=True,
                       text=True, env=env, check=True)
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def runs():
    return {t: _run(t) for t in ("1", "2")}


def test_gce_and_evaluate_take_one_path(runs):
    checked = 0
    for key, (g, ev, *_) in runs["1"].items():
        assert g == ev, f"{key}: gce {float.fromhex(g)!r} != evaluate {float.fromhex(ev)!r}"
        checked += 1
    assert checked == 4 * 2 * 32 * len(BINS)


def test_calibration_bins_error_and_interval_value_equal_gce(runs):
    checked = 0
    for key, (g, _, _, others) in runs["1"].items():
        names = ["calibration_bins(...).error", "confidence_interval(...).value"]
        for name, v in zip(names, others[:2]):
            assert v == g, f"{key}: {name} {float.fromhex(v)!r} != gce {float.fromhex(g)!r}"
            checked += 1
    assert checked == 4 * 2 * 32 * len(BINS) + 3 * 2 * 32 * 2  # 3 shapes of n <= 3000, B in (3, 15)


def test_unit_sample_weights_equal_gce(runs):
    checked = 0
    for key, (g, _, _, others) in runs["1"].items():
        if len(others) == 3:
            assert others[2] == g, f"{key}: gce(sample_weight=ones) {float.fromhex(others[2])!r}"
            checked += 1
    assert checked == 3 * 2 * 32 * 2  # shapes of n <= 3000, f32 and f64, 32 metrics, B in (3, 15)


def test_reduce_bins_gives_the_bits_of_gce(runs):
    for key, (g, _, (counts, sum_score, sum_outcome), _) in runs["1"].items():
        *_, cc, _thr, norm, b = key.split()
        g = float.fromhex(g)
        nb = len(counts) // (1 if cc == "False" else int(key.split()[0].split("x")[1]))
        v = calibkit.reduce_bins(np.reshape(counts, (-1, nb)), np.reshape(sum_score, (-1, nb)),
                                 np.reshape(sum_outcome, (-1, nb)), norm=norm,
                                 class_conditional=cc == "True")
        assert v == g, key  # reduce_bins' checks, then the one reduction: gce's bits


def test_every_path_is_bitwise_identical_for_one_and_two_threads(runs):
    assert runs["1"] == runs["2"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "dtype, scores", [(np.float64, (0.9, 0.1)), (np.float32, (0.9, 0.1)), (np.float64, (0.7, 0.3))]
)
def test_many_repeated_scores_are_summed_exactly(dtype, scores):
    """10M rows of one score pair: ``evaluate`` equals ``gce`` and both are within 1e-12 of
    the exact value (computed with fractions), for SCE, ACE and TACE, B = 3."""
    n = 10_000_000
    p = np.empty((n, 2), dtype=dtype)
    p[:, 0], p[:, 1] = scores
    y = np.zeros(n, dtype=np.int64)
    y[::3] = 1
    acc0 = Fraction(int((y == 0).sum()), n)
    exact = float((abs(acc0 - Fraction(float(p[0, 0]))) + abs(1 - acc0 - Fraction(float(p[0, 1])))) / 2)
    ev = calibkit.evaluate(y, p, space=["SCE", "ACE", "TACE"], num_bins=3)
    for i, name in enumerate(["sce", "ace", "tace"]):
        g = getattr(calibkit, name)(y, p, num_bins=3)
        e = float(np.asarray(ev.values)[i, 0])
        assert abs(e - exact) <= 1e-12, (name, e, exact)
        assert abs(g - exact) <= 1e-12, (name, g, exact)
        assert e == g, (name, e, g)


def test_reduce_table_refuses_tables_no_kernel_makes():
    """The binding checks what it is handed (calibkit.reduce_bins checks more, with names)."""
    from calibkit import _native
    from calibkit.errors import InvalidParameterError, ShapeMismatchError

    ok = np.array([[2.0, 2.0]]), np.array([[0.4, 1.6]]), np.array([[0.0, 2.0]])
    assert round(_native.reduce_table(*ok, "l1", False), 12) == 0.2
    bad_count = np.array([[np.nan, 2.0]])
    with pytest.raises(InvalidParameterError, match=r"counts\[0\] is NaN"):
        _native.reduce_table(bad_count, ok[1], ok[2], "l1", False)
    with pytest.raises(InvalidParameterError, match="counts"):
        _native.reduce_table(np.array([[-2.0, 2.0]]), ok[1], ok[2], "l1", False)
    with pytest.raises(InvalidParameterError, match="sum_outcome"):
        _native.reduce_table(ok[0], ok[1], np.array([[np.inf, 0.0]]), "l1", False)
    two = tuple(np.vstack([a, a]) for a in ok)
    with pytest.raises(ShapeMismatchError, match="pooled table"):
        _native.reduce_table(*two, "l1", False)
    assert _native.reduce_table(*two, "l1", True) == _native.reduce_table(*ok, "l1", False)
    with pytest.raises(ShapeMismatchError, match="C-contiguous"):
        _native.reduce_table(*(np.asfortranarray(a) for a in two), "l1", True)
    with pytest.raises(ShapeMismatchError, match="shape"):
        _native.reduce_table(ok[0], ok[1], np.zeros((1, 3)), "l1", False)
    with pytest.raises(InvalidParameterError):
        _native.reduce_table(*ok, "l3", False)


def test_kernels_refuse_fortran_ordered_matrices():
    """A Fortran-ordered matrix is contiguous but not in row order: refused, not misread."""
    from calibkit import _native
    from calibkit.errors import ShapeMismatchError

    y, p = np.array([0, 1, 1]), np.array([[0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    with pytest.raises(ShapeMismatchError, match="C-contiguous"):
        _native.score_rows(y, np.asfortranarray(p), True, False, 0.0)
    with pytest.raises(ShapeMismatchError, match="C-contiguous"):
        _native.consistency_draws(np.asfortranarray(p), 0, 0, 1)


def test_reduce_bins_with_an_overflowing_total_count():
    """The one reduction scales counts whose total overflows float64 (issue 25): the table
    gives the value of the same table scaled down, with no warning."""
    import warnings

    big = ([[1e308, 1e308]], [[5e307, 5e307]], [[1e308, 0.0]])
    small = tuple(np.asarray(t) * 2.0**-900 for t in big)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for norm in ("l1", "l2", "max"):
            assert calibkit.reduce_bins(*big, norm=norm) == calibkit.reduce_bins(*small, norm=norm)
        assert calibkit.reduce_bins(*big) == 0.5


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_evaluate_equals_weighted_gce(dtype):
    """With fractional sample weights, ``evaluate`` is ``gce`` bit for bit for all 32 metrics
    (one weighted table builder, exact cell sums), short and long rows."""
    rng = np.random.default_rng(11)
    space = calibkit.metric_space()
    for n, k in [(1500, 5), (800, 40)]:
        p = calibkit.softmax(rng.normal(size=(n, k)) * 2).astype(dtype)
        y = rng.integers(0, k, n)
        w = rng.uniform(0.0, 3.0, n)
        w[::17] = 0.0
        ev = calibkit.evaluate(y, p, space=space, num_bins=(3, 15), sample_weight=w)
        for spec in space:
            for b in (3, 15):
                g = calibkit.gce(y, p, **spec.kwargs(), num_bins=b, sample_weight=w)
                assert ev.get(spec, b) == g, f"{spec.name} {b} bins, K={k}"
