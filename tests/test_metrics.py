"""The public metric API: named metrics, accepted input forms, determinism across threads."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import calibkit
from calibkit import reference


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(3000, 12)) * 3
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = rng.integers(0, 12, size=3000)
    return y, p


NAMED = {
    "ece": dict(binning="even", max_prob=True, class_conditional=False, threshold=0.0, norm="l1"),
    "cce": dict(binning="even", max_prob=True, class_conditional=True, threshold=0.0, norm="l1"),
    "sce": dict(binning="even", max_prob=False, class_conditional=True, threshold=0.0, norm="l1"),
    "ace": dict(binning="adaptive", max_prob=False, class_conditional=True, threshold=0.0, norm="l1"),
    "tace": dict(binning="adaptive", max_prob=False, class_conditional=True, threshold=0.01, norm="l1"),
    "rmsce": dict(binning="adaptive", max_prob=True, class_conditional=False, threshold=0.0, norm="l2"),
    "mce": dict(binning="even", max_prob=True, class_conditional=False, threshold=0.0, norm="max"),
}


@pytest.mark.parametrize("name", sorted(NAMED))
@pytest.mark.parametrize("num_bins", [5, 15, 30])
def test_named_metric_is_its_gce_setting(data, name, num_bins):
    y, p = data
    got = getattr(calibkit, name)(y, p, num_bins=num_bins)
    assert got == calibkit.gce(y, p, num_bins=num_bins, **NAMED[name])
    assert got == pytest.approx(reference.gce(y, p, num_bins=num_bins, **NAMED[name]), abs=1e-12)


def test_defaults_are_documented_values(data):
    y, p = data
    assert calibkit.ece(y, p) == calibkit.gce(y, p, num_bins=15)
    assert calibkit.tace(y, p) == calibkit.gce(y, p, **NAMED["tace"], num_bins=15)


def test_float32_is_widened_exactly(data):
    y, p = data
    p32 = p.astype(np.float32)
    for name in NAMED:
        f = getattr(calibkit, name)
        assert f(y, p32) == f(y, p32.astype(np.float64))


def test_non_contiguous_and_fortran_inputs(data):
    y, p = data
    wide = np.zeros((p.shape[0], 2 * p.shape[1]))
    wide[:, ::2] = p
    view = wide[:, ::2]
    fortran = np.asfortranarray(p)
    for name in NAMED:
        f = getattr(calibkit, name)
        assert f(y, view) == f(y, p) == f(y, fortran)
        assert f(y[::1].copy(), p) == f(np.asarray(y, dtype=np.int8), p)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
def test_any_integer_label_width(data, dtype):
    y, p = data
    assert calibkit.ace(y.astype(dtype), p) == calibkit.ace(y, p)


def test_binary_1d_and_column_inputs():
    rng = np.random.default_rng(3)
    q = rng.uniform(size=500)
    y = (rng.uniform(size=500) < q).astype(int)
    two = np.stack([1 - q, q], axis=1)
    for name in NAMED:
        f = getattr(calibkit, name)
        assert f(y, q) == f(y, q[:, None]) == f(y, two)


# boolean labels with a 1-D probs below 0.5 may be (correct, confidence) pairs: calibkit warns
# (issue 31) and still reads them as binary labels, which is what this test checks
@pytest.mark.filterwarnings("ignore::calibkit.BinaryReadingWarning")
def test_boolean_labels_for_binary():
    q = np.array([0.2, 0.9, 0.6])
    assert calibkit.ece(np.array([False, True, True]), q) == calibkit.ece([0, 1, 1], q)


def test_lists_are_accepted():
    assert calibkit.ece([0, 1], [[0.9, 0.1], [0.2, 0.8]]) == pytest.approx(0.15)


def test_single_row_and_column_means_binary():
    # An (N, 1) array is P(y=1): [[1.0]] predicts class 1 with certainty.
    assert calibkit.ece([1, 1], [[1.0], [1.0]]) == 0.0
    assert calibkit.ece([0, 0], [[1.0], [1.0]]) == 1.0
    assert calibkit.ace([1], [[0.3, 0.7]]) == pytest.approx(reference.ace([1], [[0.3, 0.7]]))


def test_results_in_unit_interval(data):
    y, p = data
    space = calibkit.evaluate(y, p)
    assert np.all((space.values >= 0) & (space.values <= 1))


def test_calibration_bins_table_matches_metric(data):
    y, p = data
    for kw in NAMED.values():
        kw = dict(kw)
        norm = kw.pop("norm")
        t = calibkit.calibration_bins(y, p, num_bins=10, **kw)
        assert t.error(norm) == pytest.approx(calibkit.gce(y, p, num_bins=10, norm=norm, **kw), abs=1e-12)
        assert int(t.counts.sum()) == int(t.group_sizes.sum())
        assert t.edges.shape == (t.counts.shape[0], t.counts.shape[1] + 1)
        df = t.to_pandas()
        assert len(df) == t.counts.size


_DETERMINISM = r"""
import numpy as np, calibkit
rng = np.random.default_rng(11)
out = []
for n, k in [(300_000, 10), (20_000, 300)]:
    z = rng.normal(size=(n, k)) * 2
    p = np.exp(z - z.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
    y = rng.integers(0, k, size=n)
    ev = calibkit.evaluate(y, p, num_bins=(7, 15))
    out.extend(ev.values.ravel().tolist())
    out.append(calibkit.ece(y, p.astype(np.float32)))
    # Single-metric kernels too, incl. a short input split across threads (10k x 10).
    for f in (calibkit.ece, calibkit.cce, calibkit.sce, calibkit.tace):
        out.extend([f(y, p), f(y[:10_000], p[:10_000])])
print(repr([float(v).hex() for v in out]))
"""


def test_bitwise_identical_for_any_thread_count():
    results = []
    for threads in ("1", "2", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        r = subprocess.run([sys.executable, "-c", _DETERMINISM], capture_output=True, text=True,
                           env=env, check=True)
        results.append(r.stdout)
    assert results[0] == results[1] == results[2]
