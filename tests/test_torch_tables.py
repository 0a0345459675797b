"""calibkit.torch.tables: the tables torch ops build on a device equal the engine's tables.

Counts (and unweighted outcome sums, which are integers) bitwise; score sums and weighted sums
to 1e-12 (the device sums in another order). Run on CPU tensors: the very code a GPU runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared, requires

torch = requires("torch")


import calibkit  # noqa: E402
from calibkit.torch import tables as tables_module  # noqa: E402
from calibkit.torch.tables import Scores, adaptive_table, even_table  # noqa: E402

GROUPINGS = [(True, False), (True, True), (False, False), (False, True)]
THRESHOLDS = (0.0, 0.01, 0.3)
BINS = (1, 3, 10, 15)


def _ties(n=600, seed=0):
    """Scores on the even edges and repeated values (ties at adaptive edges), exact 0 and 1."""
    rng = np.random.default_rng(seed)
    rows = np.array([[0.3, 0.7, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5],
                     [0.1, 0.1, 0.8], [0.0, 0.6, 0.4], [0.4, 0.3, 0.3], [0.25, 0.25, 0.5]])
    p = rows[rng.integers(0, len(rows), n)]
    return rng.integers(0, 3, n), p


def _data(name):
    if name == "ties":
        return _ties()
    d = load_shared(name)
    return d["labels"][:1500], d["probs"][:1500]


DATA = ["ties", "netcal__densenet-bc-100-cifar-100.npz", "label_errors__20news.npz",
        "label_errors__imdb.npz"]


def _engine(y, p, binning, mp, cc, t, b, w=None):
    tab = calibkit.calibration_bins(y, p, binning=binning, max_prob=mp, class_conditional=cc,
                                    threshold=t, num_bins=b, sample_weight=w)
    return np.asarray(tab.counts, dtype=np.float64), tab.sum_score, tab.sum_outcome


def _check(got, want, exact=True):
    """Unweighted tables are the engine's bit for bit (counts, outcome sums and the score sums'
    exact units, docs/spec.md "Cell sums"); weighted ones to 1e-12 (float sums of w * s)."""
    c, s, o = (np.asarray(x.cpu().numpy() if hasattr(x, "cpu") else x) for x in got)
    wc, ws, wo = want
    assert c.shape == wc.shape
    if exact:
        for a, b in ((c, wc), (s, ws), (o, wo)):
            np.testing.assert_array_equal(a.view(np.int64), np.asarray(b, np.float64).view(np.int64))
    else:
        for a, b in ((c, wc), (s, ws), (o, wo)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bincount", [True, False])  # small tables by bincount / index_add_
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("data", DATA)
def test_even_tables_equal_the_engine(data, dtype, bincount, monkeypatch):
    monkeypatch.setattr(tables_module, "BINCOUNT_ROWS", 0 if bincount else 1 << 62)
    y, p = _data(data)
    p = p.astype(dtype)
    sc = Scores.of_matrix(torch.from_numpy(p), torch.from_numpy(y))
    for mp, cc in GROUPINGS:
        for t in THRESHOLDS:
            for b in BINS:
                got = even_table(sc, max_prob=mp, class_conditional=cc, threshold=t, num_bins=b)
                _check(got, _engine(y, p, "even", mp, cc, t, b))


@pytest.mark.parametrize("bincount", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("data", DATA)
def test_adaptive_tables_equal_the_engine(data, dtype, bincount, monkeypatch):
    monkeypatch.setattr(tables_module, "BINCOUNT_ROWS", 0 if bincount else 1 << 62)
    y, p = _data(data)
    p = p.astype(dtype)
    sc = Scores.of_matrix(torch.from_numpy(p), torch.from_numpy(y))
    for mp, cc in GROUPINGS:
        got = adaptive_table(sc, max_prob=mp, class_conditional=cc, thresholds=THRESHOLDS,
                             num_bins=BINS)
        assert got.keys() == {(t, b) for t in THRESHOLDS for b in BINS}
        for t in THRESHOLDS:
            # one threshold > 0 alone: a matrix's scores <= t are left out before the sort
            alone = adaptive_table(sc, max_prob=mp, class_conditional=cc, thresholds=[t],
                                   num_bins=BINS)
            for b in BINS:
                want = _engine(y, p, "adaptive", mp, cc, t, b)
                _check(got[(t, b)], want)
                _check(alone[(t, b)], want)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_weighted_tables_equal_the_engine(binning):
    y, p = _data("netcal__densenet-bc-100-cifar-100.npz")
    w = np.random.default_rng(4).uniform(0, 3, y.shape[0])
    w[::7] = 0.0  # weight 0 drops a row
    sc = Scores.of_matrix(torch.from_numpy(p), torch.from_numpy(y), torch.from_numpy(w))
    for mp, cc in GROUPINGS:
        for t in (0.0, 0.01):
            for b in (3, 15):
                want = _engine(y, p, binning, mp, cc, t, b, w)
                if binning == "even":
                    got = even_table(sc, max_prob=mp, class_conditional=cc, threshold=t,
                                     num_bins=b)
                else:
                    got = adaptive_table(sc, max_prob=mp, class_conditional=cc, thresholds=[t],
                                         num_bins=[b])[(t, b)]
                _check(got, want, exact=False)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_top_label_pairs_keep_every_confidence_at_threshold_zero(binning):
    # The pair form keeps an exact 0.0 confidence at threshold 0 (calibkit._toplabel).
    rng = np.random.default_rng(2)
    conf = rng.choice([0.0, 0.2, 0.5, 0.5, 1.0, 0.73], size=300)
    ok = rng.integers(0, 2, 300).astype(bool)
    pred = rng.integers(0, 4, 300)
    sc = Scores.of_pairs(torch.from_numpy(conf), torch.from_numpy(ok), torch.from_numpy(pred), 4)
    for cc in (False, True):
        for t in (0.0, 0.2):
            for b in (2, 5):
                tab = calibkit.calibration_bins(
                    confidence=conf, correct=ok, predicted=pred if cc else None,
                    num_classes=4 if cc else None, binning=binning, class_conditional=cc,
                    threshold=t, num_bins=b)
                want = (np.asarray(tab.counts, dtype=np.float64), tab.sum_score, tab.sum_outcome)
                if binning == "even":
                    got = even_table(sc, max_prob=True, class_conditional=cc, threshold=t,
                                     num_bins=b)
                else:
                    got = adaptive_table(sc, max_prob=True, class_conditional=cc,
                                         thresholds=[t], num_bins=[b])[(t, b)]
                _check(got, want)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("equal", [False, True])
def test_group_search_is_searchsorted_within_each_group(dtype, right, equal):
    # Groups of one size take torch.searchsorted on a (G, n) view, others a vectorised binary
    # search: both the same rule as NumPy's searchsorted within each group.
    rng = np.random.default_rng(7)
    for _ in range(20):
        g = int(rng.integers(1, 6))
        sizes = (np.full(g, int(rng.integers(0, 9))) if equal
                 else rng.integers(0, 30, g)).astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        vals = [np.sort(rng.choice([0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0], size=n)) for n in sizes]
        v = torch.from_numpy(np.concatenate(vals + [np.empty(0)])).to(dtype)
        x = rng.choice([-1.0, 0.0, 0.1, 0.3, 0.5, 1.0, np.inf], size=(g, 4))
        got = tables_module._group_search(v, starts, sizes, torch.from_numpy(x).to(dtype),
                                          right).numpy()
        side = "right" if right else "left"
        want = np.stack([starts[i] + np.searchsorted(vals[i].astype(v.numpy().dtype),
                                                     x[i].astype(v.numpy().dtype), side=side)
                         for i in range(g)])
        np.testing.assert_array_equal(got, want)


def test_unit_halves_are_the_engines_units():
    # round(s * 2^50), ties to even, split hi * 2^25 + lo; unit_value rounds a sum once.
    s = torch.tensor([0.0, 1.0, -1e-4, 0.5 * 2.0 ** -50, 1.5 * 2.0 ** -50, 2.5 * 2.0 ** -50,
                      1.0 + 1e-4, 1e-300, 0.3], dtype=torch.float64)
    hi, lo = tables_module.unit_halves(s)
    assert bool(((lo >= 0) & (lo < 2 ** 25)).all())
    units = [int(h) * 2 ** 25 + int(lo_) for h, lo_ in zip(hi, lo)]
    assert units[:8] == [0, 2 ** 50, round(-1e-4 * 2 ** 50), 0, 2, 2,
                         round((1.0 + 1e-4) * 2 ** 50), 0]
    assert units[8] == round(0.3 * 2 ** 50)
    total = sum(units)
    got = tables_module.unit_value(hi.double().sum(), lo.double().sum())
    assert float(got) == float(total) * 2.0 ** -50


@pytest.mark.parametrize("bincount", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_small_random_tables_equal_the_engine(seed, bincount, monkeypatch):
    # Few rows, many ties, classes never predicted or never above a threshold, one row: every
    # table of every grouping bit for bit, through both ways of summing.
    monkeypatch.setattr(tables_module, "BINCOUNT_ROWS", 0 if bincount else 1 << 62)
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(1, 40)), int(rng.integers(2, 7))
    grid = rng.choice([0.0, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0], size=(n, k))
    grid[:, 0] += 1e-3  # no all-zero rows
    p = grid / grid.sum(1, keepdims=True)
    if seed % 2:
        p = p.astype(np.float32)
        p = (p / p.sum(1, keepdims=True, dtype=np.float64)).astype(np.float32)
    y = rng.integers(0, k, n)
    sc = Scores.of_matrix(torch.from_numpy(p), torch.from_numpy(y))
    for mp, cc in GROUPINGS:
        got = adaptive_table(sc, max_prob=mp, class_conditional=cc, thresholds=(0.0, 0.2),
                             num_bins=(1, 2, 7))
        for t in (0.0, 0.2):
            for b in (1, 2, 7):
                _check(got[(t, b)], _engine(y, p, "adaptive", mp, cc, t, b))
                _check(even_table(sc, max_prob=mp, class_conditional=cc, threshold=t,
                                  num_bins=b), _engine(y, p, "even", mp, cc, t, b))


def test_deterministic_mode_sums_by_index_add(monkeypatch):
    # CUDA's weighted bincount raises under torch.use_deterministic_algorithms: the sums then
    # take index_add_ (the same bits).
    monkeypatch.setattr(tables_module, "BINCOUNT_ROWS", 0)
    calls = []
    real = torch.bincount
    monkeypatch.setattr(torch, "bincount", lambda *a, **k: calls.append(1) or real(*a, **k))
    y, p = _ties()
    sc = Scores.of_matrix(torch.from_numpy(p), torch.from_numpy(y))
    want = even_table(sc, max_prob=True, class_conditional=False, threshold=0.0, num_bins=5)
    assert calls
    calls.clear()
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        got = even_table(sc, max_prob=True, class_conditional=False, threshold=0.0, num_bins=5)
    finally:
        torch.use_deterministic_algorithms(was)
    assert not calls
    for a, b in zip(got, want):
        assert torch.equal(a, b)

