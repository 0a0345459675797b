"""Property tests: the native path (``calibkit.gce``, ``calibkit.calibration_bins``) equals the
NumPy oracle (``calibkit.reference``) on random inputs built to hit the hard cases.

Inputs cover random shapes (N 1..5000, K 1..200, with N*K capped so the oracle stays quick),
float32 and float64, ties (values from a small set), values exactly on even edges
(``j / B`` and ``np.linspace`` edges, in both dtypes), exact 0.0 and 1.0, values just outside
[0, 1] within the validator's tolerance, N < num_bins, 1-D and (N, 1) binary input, and every
combination of binning x max_prob x class_conditional x norm (l1, l2, max), several thresholds
and bin counts. Every row is a valid probability vector by construction.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import calibkit
from calibkit import reference

TOL = 1e-12
NORMS = ("l1", "l2", "max")
GROUPINGS = list(itertools.product(["even", "adaptive"], [True, False], [True, False]))
THRESHOLDS = [0.0, 0.0, 0.01, 0.1, 0.25, 0.3, 1 / 3, 0.5, 0.7, 0.9]
BIN_COUNTS = [1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 64, 100]
MAX_CELLS = 20_000  # cap on N * K per example (the oracle is deliberately simple)


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def _edge_values(num_bins: int) -> np.ndarray:
    """Scores sitting exactly on even edges: j / B and linspace's j * (1 / B), plus 0 and 1."""
    b = num_bins
    return np.unique(
        np.concatenate(
            [np.arange(b + 1) / b, np.linspace(0.0, 1.0, b + 1), [0.0, 1.0, 0.5]]
        )
    )


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    zero = x.sum(axis=1) == 0
    x[zero, 0] = 1.0
    return x / x.sum(axis=1, keepdims=True)


def make_probs(kind: str, n: int, k: int, num_bins: int, rng: np.random.Generator) -> np.ndarray:
    """An (n, k) float64 array of probability rows (or 1-D / (n, 1) for the binary kinds)."""
    if kind == "random":
        sharp = rng.choice([1.0, 3.0, 10.0])
        return _normalise(rng.random((n, k)) ** sharp)
    if kind == "ties":
        # small integer weights: many equal maxima, exact 0.0, 1.0, 0.5, 1/3, ...
        return _normalise(rng.integers(0, 4, size=(n, k)).astype(np.float64))
    if kind == "onehot":
        p = _normalise(rng.random((n, k)) ** 4)
        hot = rng.random(n) < 0.5
        p[hot] = 0.0
        p[hot, rng.integers(0, k, size=int(hot.sum()))] = 1.0
        return p
    if kind == "edges":
        # one entry on an edge value e, the rest (1 - e) spread evenly: a valid row by design
        e = rng.choice(_edge_values(num_bins), size=n)
        if k == 1:
            return e  # binary P(y=1)
        col = rng.integers(0, k, size=n)
        p = np.repeat(((1.0 - e) / (k - 1))[:, None], k, axis=1)
        p[np.arange(n), col] = e
        return p
    if kind == "jitter":
        # the imdb quirk: values off [0, 1] and row sums off 1 by ~1e-5 (within tolerance)
        p = _normalise(rng.integers(0, 3, size=(n, k)).astype(np.float64))
        return p + rng.choice([0.0, 1e-5, -1e-5], size=(n, k)) * (p > 0.5)
    raise AssertionError(kind)


@st.composite
def datasets(draw, max_n: int = 5000, max_k: int = 200):
    """(labels, probs, num_bins, description) with probs of any supported shape and dtype."""
    size = draw(st.sampled_from(["tiny", "small", "medium", "large"]))
    if size == "tiny":
        n, k = draw(st.integers(1, 12)), draw(st.integers(1, 4))
    elif size == "small":
        n, k = draw(st.integers(1, 80)), draw(st.integers(1, 8))
    elif size == "medium":
        n, k = draw(st.integers(1, 600)), draw(st.integers(1, 40))
    else:
        n, k = draw(st.integers(1, max_n)), draw(st.integers(1, max_k))
    k = max(1, min(k, MAX_CELLS // max(n, 1)))
    num_bins = draw(st.sampled_from(BIN_COUNTS))
    kind = draw(st.sampled_from(["random", "ties", "onehot", "edges", "jitter"]))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    layout = draw(st.sampled_from(["2d", "2d", "fortran", "binary1d", "column"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    full = make_probs(kind, n, 2 if layout in ("binary1d", "column") else k, num_bins, rng)
    if full.ndim == 1:
        full = np.stack([1.0 - full, full], axis=1)
    if layout in ("binary1d", "column"):
        p1 = np.clip(full[:, 1], 0.0, 1.0)  # the binary column itself must be a probability
        full = np.stack([1.0 - p1, p1], axis=1)
        probs = p1 if layout == "binary1d" else p1[:, None]
    else:
        probs = full
    probs = probs.astype(dtype)
    if layout == "fortran":
        probs = np.asfortranarray(probs)
    k_eff = full.shape[1]

    labels = rng.integers(0, k_eff, size=n)
    if draw(st.booleans()):  # mostly-correct labels: high accuracy, like a trained model
        keep = rng.random(n) < 0.8
        labels[keep] = np.argmax(full, axis=1)[keep]
    small_int = np.uint8 if k_eff <= 255 else np.int16
    label_dtype = draw(st.sampled_from([np.int64, np.int32, small_int]))
    labels = labels.astype(label_dtype)
    desc = f"N={n} K={k_eff} kind={kind} dtype={np.dtype(dtype).name} layout={layout} seed={seed}"
    return labels, probs, num_bins, desc


def repro(labels, probs, **kw) -> str:
    """A copy-pasteable minimal reproduction, attached to failures via ``note``."""
    return (
        f"labels = np.array({np.asarray(labels).tolist()!r})\n"
        f"probs = np.array({np.asarray(probs).tolist()!r}, dtype=np.{np.asarray(probs).dtype})\n"
        f"calibkit.gce(labels, probs, **{kw!r})"
    )


def _small_enough_to_print(probs) -> bool:
    return np.asarray(probs).size <= 60


# ---------------------------------------------------------------------------------------------
# gce == reference.gce
# ---------------------------------------------------------------------------------------------


@given(data=datasets(), threshold=st.sampled_from(THRESHOLDS))
def test_gce_equals_reference_every_combination(data, threshold):
    labels, probs, num_bins, desc = data
    note(desc)
    for binning, max_prob, cc in GROUPINGS:
        kw = dict(binning=binning, max_prob=max_prob, class_conditional=cc,
                  threshold=threshold, num_bins=num_bins)
        want = reference.bin_table(labels, probs, **kw)
        for norm in NORMS:
            got = calibkit.gce(labels, probs, norm=norm, **kw)
            expected = want.error(norm)
            if abs(got - expected) > TOL and _small_enough_to_print(probs):
                note(repro(labels, probs, norm=norm, **kw))
            assert got == pytest.approx(expected, abs=TOL), (kw, norm)


@given(data=datasets(max_n=400, max_k=30), threshold=st.sampled_from(THRESHOLDS))
def test_bins_table_equals_reference(data, threshold):
    labels, probs, num_bins, desc = data
    note(desc)
    for binning, max_prob, cc in GROUPINGS:
        kw = dict(binning=binning, max_prob=max_prob, class_conditional=cc,
                  threshold=threshold, num_bins=num_bins)
        got = calibkit.calibration_bins(labels, probs, **kw)
        want = reference.bin_table(labels, probs, **kw)
        assert got.counts.shape == want.counts.shape, kw
        np.testing.assert_array_equal(got.counts, want.counts, err_msg=str(kw))
        np.testing.assert_allclose(got.sum_score, want.sum_score, rtol=TOL, atol=TOL,
                                   err_msg=str(kw))
        np.testing.assert_allclose(got.sum_outcome, want.sum_outcome, rtol=TOL, atol=TOL,
                                   err_msg=str(kw))
        np.testing.assert_array_equal(got.edges, want.edges, err_msg=str(kw))
        assert got.num_classes == want.num_classes
        for norm in NORMS:
            assert got.error(norm) == pytest.approx(want.error(norm), abs=TOL), (kw, norm)


@given(data=datasets(max_n=2000, max_k=50))
def test_float32_input_equals_its_float64_widening(data):
    # SPEC: float32 is widened exactly to float64 before any comparison or sum (2-D input; a
    # 1-D binary float32 input computes 1 - p in float32 first, see reference.prepare).
    labels, probs, num_bins, desc = data
    note(desc)
    if probs.dtype != np.float32 or probs.ndim != 2 or probs.shape[1] == 1:
        return
    wide = probs.astype(np.float64)
    for binning, max_prob, cc in GROUPINGS:
        kw = dict(binning=binning, max_prob=max_prob, class_conditional=cc, num_bins=num_bins)
        for norm in NORMS:
            a = calibkit.gce(labels, probs, norm=norm, **kw)
            b = calibkit.gce(labels, wide, norm=norm, **kw)
            assert a == pytest.approx(b, abs=TOL), (kw, norm)


@given(data=datasets(max_n=1000, max_k=30))
def test_named_metrics_equal_reference(data):
    labels, probs, num_bins, desc = data
    note(desc)
    for name in ("ece", "cce", "sce", "ace", "tace", "rmsce", "mce"):
        got = getattr(calibkit, name)(labels, probs, num_bins=num_bins)
        want = getattr(reference, name)(labels, probs, num_bins=num_bins)
        assert got == pytest.approx(want, abs=TOL), name


# ---------------------------------------------------------------------------------------------
# Deterministic sweep: every combination on fixed hard inputs, whatever hypothesis draws
# ---------------------------------------------------------------------------------------------


def _fixed_cases():
    rng = np.random.default_rng(20240601)
    cases = {}
    for kind in ("random", "ties", "onehot", "edges", "jitter"):
        for n, k, b in ((7, 3, 10), (200, 5, 15), (40, 12, 3), (3, 2, 30)):
            for dtype in (np.float64, np.float32):
                p = make_probs(kind, n, k, b, rng)
                labels = rng.integers(0, k, size=n)
                cases[f"{kind}-{n}x{k}-B{b}-{np.dtype(dtype).name}"] = (labels, p.astype(dtype), b)
    # binary, on the edges, 1-D
    e = _edge_values(10)
    cases["binary1d-edges"] = (rng.integers(0, 2, size=e.size), e, 10)
    return cases


FIXED = _fixed_cases()


@pytest.mark.parametrize("binning,max_prob,class_conditional", GROUPINGS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("threshold", [0.0, 0.01, 0.5])
def test_every_combination_on_fixed_inputs(binning, max_prob, class_conditional, norm,
                                           threshold):
    for name, (labels, probs, b) in FIXED.items():
        for num_bins in (b, 1, 2):
            kw = dict(binning=binning, max_prob=max_prob, class_conditional=class_conditional,
                      threshold=threshold, norm=norm, num_bins=num_bins)
            got = calibkit.gce(labels, probs, **kw)
            want = reference.gce(labels, probs, **kw)
            assert got == pytest.approx(want, abs=TOL), (name, kw)


def test_large_shapes_once():
    # The top of the stated ranges: N = 5000 with K = 10, and K = 200 with N = 300.
    rng = np.random.default_rng(7)
    for n, k in ((5000, 10), (300, 200)):
        probs = make_probs("random", n, k, 15, rng)
        labels = rng.integers(0, k, size=n)
        for binning, max_prob, cc in GROUPINGS:
            kw = dict(binning=binning, max_prob=max_prob, class_conditional=cc, num_bins=15)
            want = reference.bin_table(labels, probs, **kw)
            for norm in NORMS:
                got = calibkit.gce(labels, probs, norm=norm, **kw)
                assert got == pytest.approx(want.error(norm), abs=TOL), (n, k, kw, norm)


# ---------------------------------------------------------------------------------------------
# Inputs larger than one kernel chunk (2**17 entries): the chunked / multi-threaded paths
# ---------------------------------------------------------------------------------------------

# Counts and edges must match exactly. Sums are compared with a relative tolerance of 1e-10:
# the oracle sums exactly (math.fsum) while the kernels accumulate in float64 in chunk order,
# whose rounding grows with the number of scores in a bin (about 1e-12 relative at 1e5 scores).
BIG_RTOL = 1e-10


def _check_big(labels, probs, num_bins, threshold):
    for binning, max_prob, cc in GROUPINGS:
        kw = dict(binning=binning, max_prob=max_prob, class_conditional=cc,
                  threshold=threshold, num_bins=num_bins)
        got = calibkit.calibration_bins(labels, probs, **kw)
        want = reference.bin_table(labels, probs, **kw)
        np.testing.assert_array_equal(got.counts, want.counts, err_msg=str(kw))
        np.testing.assert_array_equal(got.edges, want.edges, err_msg=str(kw))
        np.testing.assert_allclose(got.sum_score, want.sum_score, rtol=BIG_RTOL, atol=TOL)
        np.testing.assert_allclose(got.sum_outcome, want.sum_outcome, rtol=BIG_RTOL, atol=TOL)
        for norm in NORMS:
            value = calibkit.gce(labels, probs, norm=norm, **kw)
            assert value == pytest.approx(want.error(norm), abs=BIG_RTOL), (kw, norm)


@pytest.mark.parametrize(
    "n,k,kind,dtype,num_bins,threshold",
    [
        (40_000, 10, "ties", np.float32, 15, 0.0),
        (15_000, 30, "edges", np.float64, 10, 0.01),
        (150_000, 2, "jitter", np.float64, 3, 0.5),
    ],
)
def test_multi_chunk_inputs(n, k, kind, dtype, num_bins, threshold):
    rng = np.random.default_rng(n + k)
    probs = make_probs(kind, n, k, num_bins, rng).astype(dtype)
    labels = rng.integers(0, k, size=n)
    _check_big(labels, probs, num_bins, threshold)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,dtype,n,k",
    [
        ("random", np.float32, 60_000, 10),
        ("onehot", np.float64, 60_000, 10),
        ("ties", np.float64, 20_000, 100),
        ("jitter", np.float32, 20_000, 100),
        ("edges", np.float64, 300_000, 2),
        ("ties", np.float32, 300_000, 2),
        ("random", np.float64, 1_000, 1000),
        ("edges", np.float32, 1_000, 1000),
    ],
)
def test_multi_chunk_inputs_sweep(kind, dtype, n, k):
    rng = np.random.default_rng(zlib.crc32(f"{kind}-{n}-{k}".encode()))
    for num_bins, threshold in ((3, 0.0), (100, 0.01)):
        probs = make_probs(kind, n, k, num_bins, rng).astype(dtype)
        labels = rng.integers(0, k, size=n)
        _check_big(labels, probs, num_bins, threshold)
        if k == 2:  # the binary 1-D form of the same size
            _check_big(labels, np.clip(probs[:, 1], 0, 1), num_bins, threshold)
