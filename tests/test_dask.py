"""Tests of calibkit.dask: exact equality with the in-memory metrics for any chunking (even:
one map-reduce; adaptive: distributed selection whose bucket tables give the bins), bad input, and a real
two-process dask.distributed cluster."""

from __future__ import annotations

import doctest
import itertools
import pickle

import numpy as np
import pytest
from conftest import count_passes, load_shared, requires
from hypothesis import given
from hypothesis import strategies as st

import calibkit
import calibkit.scale.dask as cdask
import calibkit.scale.select as _select
from calibkit.errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from calibkit.scale.streaming import Accumulator
from calibkit.space import Evaluation, evaluate, metric_space

dask = requires("dask")
da = requires("dask.array")

SYNC = {"scheduler": "synchronous"}
SPECS = list(metric_space(thresholds=(0.0, 0.01, 0.3), norms=("l1", "l2", "max")))


def make_data(seed, n, k, kind, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if kind == "dirichlet":
        p = rng.dirichlet(np.full(k, 0.4), size=n)
    elif kind == "grid":  # exact 0.0 / 1.0, many ties, values next to the even edges
        p = rng.multinomial(10, np.ones(k) / k, size=n) / 10.0
    elif kind == "ties":
        p = rng.dirichlet(np.ones(k), size=3)[rng.integers(0, 3, size=n)]
    else:  # binary, 1-D
        return rng.integers(0, 2, size=n), rng.random(n).astype(dtype)
    return rng.integers(0, k, size=n), p.astype(dtype)


def chunks_from_cuts(n, cuts):
    edges = [0] + sorted(min(max(c, 0), n) for c in cuts) + [n]
    return tuple(b - a for a, b in itertools.pairwise(edges))  # zeros = empty chunks


def as_dask(labels, probs, row_chunks, label_chunks=None, col_chunks=None):
    pc = (row_chunks,) if probs.ndim == 1 else (row_chunks, col_chunks or (probs.shape[1],))
    return (da.from_array(labels, chunks=(label_chunks or row_chunks,)),
            da.from_array(probs, chunks=pc))


# ----------------------------------------------------------------------------------------------
# Exactness for any chunking
# ----------------------------------------------------------------------------------------------


@given(spec=st.sampled_from(SPECS), seed=st.integers(0, 2**32 - 1), n=st.integers(1, 120),
       k=st.integers(2, 5), kind=st.sampled_from(["dirichlet", "grid", "ties", "binary"]),
       dtype=st.sampled_from([np.float64, np.float32]),
       cuts=st.lists(st.integers(0, 120), max_size=5),
       label_cuts=st.lists(st.integers(0, 120), max_size=3),
       num_bins=st.integers(1, 20))
def test_gce_equals_in_memory_for_any_chunking(spec, seed, n, k, kind, dtype, cuts, label_cuts,
                                               num_bins):
    labels, probs = make_data(seed, n, k, kind, dtype)
    dl, dp = as_dask(labels, probs, chunks_from_cuts(n, cuts), chunks_from_cuts(n, label_cuts))
    got = cdask.gce(dl, dp, **spec.kwargs(), num_bins=num_bins, **SYNC)
    want = calibkit.gce(labels, probs, **spec.kwargs(), num_bins=num_bins)
    assert got == pytest.approx(want, abs=1e-12, rel=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rows, chunks", [
    (10_000, (10_000,)),                       # one chunk
    (10_000, (1337,) * 7 + (0, 641)),          # uneven, with an empty chunk
    (10_000, (0, 5000, 0, 0, 5000, 0)),        # several empty chunks
    (300, (7,) * 42 + (6,)),                   # chunks smaller than every bin count
])
def test_evaluate_whole_space_on_real_data(dtype, rows, chunks):
    d = load_shared("netcal__lenet-5-cifar-10.npz")
    labels, probs = d["labels"][:rows], d["probs"][:rows].astype(dtype)
    space = metric_space(norms=("l1", "l2", "max"))
    bins = (5, 15, 40)
    dl, dp = as_dask(labels, probs, chunks, col_chunks=(4, 6))  # columns get rechunked
    got = cdask.evaluate(dl, dp, space=space, num_bins=bins, **SYNC)
    want = evaluate(labels, probs, space=space, num_bins=bins)
    assert isinstance(got, Evaluation) and got.space == want.space
    assert got.n_samples == rows and got.num_classes == 10
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)


def test_numpy_inputs_and_defaults():
    labels, probs = make_data(1, 500, 4, "dirichlet")
    got = cdask.evaluate(labels, probs, **SYNC)  # plain arrays; the paper's 32 at 5 bin counts
    want = evaluate(labels, probs)
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)
    assert cdask.gce(labels, probs, **SYNC) == pytest.approx(calibkit.ece(labels, probs),
                                                            abs=1e-12)
    single = cdask.evaluate(labels, probs, space="ACE", num_bins=9, **SYNC)
    assert single.get("ACE") == pytest.approx(calibkit.ace(labels, probs, num_bins=9), abs=1e-12)


def test_even_binning_is_one_map_reduce(monkeypatch):
    calls = count_passes(monkeypatch)
    labels, probs = make_data(2, 2000, 5, "dirichlet")
    dl, dp = as_dask(labels, probs, (400,) * 5)
    ev = cdask.evaluate(dl, dp, space=metric_space().select(binning="even"), num_bins=(10, 20),
                        **SYNC)
    assert len(calls) == 1
    assert ev.values.shape == (16, 2)


def test_adaptive_metrics_share_few_passes(monkeypatch):
    calls = count_passes(monkeypatch)
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    dl, dp = as_dask(d["labels"], d["probs"], (2500,) * 4)
    space = metric_space()  # 16 adaptive + 16 even metrics, 5 bin counts
    got = cdask.evaluate(dl, dp, space=space, **SYNC)
    want = evaluate(d["labels"], d["probs"], space=space)
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)
    assert len(calls) <= 4  # grid pass, refine/fetch pass(es); no counting pass


@pytest.mark.parametrize("kind", ["dirichlet", "ties", "grid"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_deep_refinement_stays_exact(monkeypatch, kind, dtype):
    """With no fetching and tiny bucket budgets the selection must refine down to single keys."""
    monkeypatch.setattr(_select, "FETCH_MAX", 0)
    monkeypatch.setattr(_select, "BUCKET_BUDGET", 64)
    calls = count_passes(monkeypatch)
    labels, probs = make_data(3, 400, 3, kind, dtype)
    dl, dp = as_dask(labels, probs, (150, 0, 250))
    space = ["ACE", "TACE", "RMSCE", "gce(adaptive,top,classwise,0.0,l1)"]
    got = cdask.evaluate(dl, dp, space=space, num_bins=(3, 16), **SYNC)
    want = evaluate(labels, probs, space=space, num_bins=(3, 16))
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)
    if kind == "dirichlet":
        assert len(calls) > 4  # many narrowing passes actually happened


def test_partial_results_do_not_grow_with_the_chunk():
    """What a chunk sends back is bounded by the bucket budget, not by its number of rows: in
    pass 1, 4 bytes per grid bucket (its count) and 16 per super-bucket of 16 (count, outcome
    count, exact score sum, packed); later, 16 per bucket and the fetched scores."""
    sizes = []
    for rows in (20_000, 200_000):
        labels, probs = make_data(4, rows, 10, "dirichlet")
        sel = _select.Selection(10, np.float64, (15,))
        plan = sel.plan()
        assert plan["size"] <= 2 * _select.BUCKET_BUDGET
        job = {"even": [], "validate": True, "scan": {(False, True, 0.0): plan}}
        sizes.append(len(pickle.dumps(cdask._chunk_task(labels, probs, job))))
        assert sizes[-1] <= (16 + 4 * _select.SUPER) * plan["size"] + 10_000
    assert abs(sizes[1] - sizes[0]) < 100  # the same tables (a row count differs)


def test_plans_carry_everything_the_workers_need(monkeypatch):
    """A worker's module settings must not matter: the plan fixes every bucket bound."""
    labels, probs = make_data(7, 3000, 4, "dirichlet")
    sel = _select.Selection(4, np.float64, (15,))
    plan = sel.plan()
    job = {"even": [], "validate": True, "scan": {(False, True, 0.0): plan}}
    reference = cdask._chunk_task(labels, probs, job)["scan"][(False, True, 0.0)]
    monkeypatch.setattr(_select, "BUCKET_BUDGET", 64)  # a "worker" configured otherwise
    other = cdask._chunk_task(labels, probs, job)["scan"][(False, True, 0.0)]
    for a, b in zip(_select.unpack_tables(reference[0]), _select.unpack_tables(other[0])):
        np.testing.assert_array_equal(a, b)
    sel.advance((*_select.unpack_tables(other[0]), *(np.concatenate(x) for x in other[1:])))
    assert sel.sizes.sum() == probs.size


def test_changing_inputs_are_detected():
    counter = itertools.count()

    def block(n):
        rng = np.random.default_rng(next(counter))  # different data on every read
        return rng.dirichlet(np.ones(4), size=n)

    parts = [da.from_delayed(dask.delayed(block)(500), shape=(500, 4), dtype=np.float64)
             for _ in range(3)]
    dp = da.concatenate(parts)
    dl = da.from_array(np.zeros(1500, dtype=np.int64), chunks=500)
    with pytest.raises(cdask.SelectionError, match="changed between passes"):
        cdask.gce(dl, dp, binning="adaptive", max_prob=False, class_conditional=True, **SYNC)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def test_bad_values_raise_the_in_memory_errors():
    labels, probs = make_data(5, 300, 3, "dirichlet")
    bad = probs.copy()
    bad[250, 0] = np.nan
    dl, dp = as_dask(labels, bad, (100, 100, 100))
    for kw in ({}, {"binning": "adaptive"}):
        with pytest.raises(calibkit.InvalidProbabilitiesError, match="NaN"):
            cdask.gce(dl, dp, **kw, **SYNC)
    wrong = labels.copy()
    wrong[10] = 3
    dl, dp = as_dask(wrong, probs, (100, 100, 100))
    with pytest.raises(calibkit.InvalidLabelsError, match="outside"):
        cdask.gce(dl, dp, binning="adaptive", **SYNC)


@pytest.mark.parametrize("labels, probs, exc, match", [
    (np.zeros(5, int), np.full((4, 2), 0.5), ShapeMismatchError, "5 entries but probs has 4"),
    (np.zeros((4, 1), int), np.full((4, 2), 0.5), ShapeMismatchError, "labels must be 1-D"),
    (np.zeros(4, int), np.full((4, 2, 1), 0.5), ShapeMismatchError, "2-D"),
    (np.zeros(0, int), np.zeros((0, 3)), ShapeMismatchError, "empty"),
    (np.zeros(2, int), np.zeros((2, 0)), ShapeMismatchError, "0 columns"),
    (np.zeros(2, int), np.array([["a", "b"], ["c", "d"]]), InputTypeError, "real numbers"),
    (np.zeros(2, int), "probs", InputTypeError, "dask array"),
])
def test_bad_shapes_and_types(labels, probs, exc, match):
    with pytest.raises(exc, match=match):
        cdask.gce(labels, probs, **SYNC)


def test_unknown_chunk_sizes_and_bad_parameters():
    labels, probs = make_data(6, 100, 3, "dirichlet")
    dl, dp = as_dask(labels, probs, (50, 50))
    masked = dp[dp[:, 0] >= 0]  # unknown row chunk sizes
    with pytest.raises(ShapeMismatchError, match="compute_chunk_sizes"):
        cdask.gce(dl, masked, **SYNC)
    with pytest.raises(InvalidParameterError, match="num_bins"):
        cdask.gce(dl, dp, num_bins=0, **SYNC)
    with pytest.raises(InvalidParameterError, match="binning"):
        cdask.gce(dl, dp, binning="equal", **SYNC)
    with pytest.raises(InvalidParameterError, match="split_every"):
        cdask.gce(dl, dp, split_every=1, **SYNC)
    with pytest.raises(InvalidParameterError, match="repeats a bin count"):
        cdask.evaluate(dl, dp, num_bins=(5, 5), **SYNC)
    with pytest.raises(InputTypeError, match="num_bins"):
        cdask.evaluate(dl, dp, num_bins="15", **SYNC)
    with pytest.raises(InvalidParameterError, match="unknown metric"):
        cdask.evaluate(dl, dp, space=["ECE", "NOPE"], **SYNC)


def test_docstring_examples():
    for mod in (cdask, _select):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0
    assert doctest.testmod(cdask).attempted > 0


# ----------------------------------------------------------------------------------------------
# A real cluster: two worker processes
# ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_local_cluster_two_processes():
    distributed = requires("dask.distributed")
    d = load_shared("netcal__lenet-5-cifar-10.npz")
    labels, probs = d["labels"], d["probs"].astype(np.float32)
    dl, dp = as_dask(labels, probs, (2000,) * 4 + (1000, 0, 1000))
    space = ["ECE", "SCE", "CCE", "ACE", "TACE", "RMSCE"]
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        ev = cdask.evaluate(dl, dp, space=space, num_bins=(10, 15))  # the client's scheduler
        ace = cdask.gce(dl, dp, binning="adaptive", max_prob=False, class_conditional=True)
        # Accumulator states built in the worker processes, merged there and sent back
        parts = client.map(
            lambda i: Accumulator(space, num_bins=(10, 15)).update(labels[i::3], probs[i::3]),
            range(3))
        merged = client.submit(lambda a, b, c: a.merge(b).merge(c), *parts).result()
    want = evaluate(labels, probs, space=space, num_bins=(10, 15))
    np.testing.assert_allclose(ev.values, want.values, rtol=0, atol=1e-12)
    assert ace == pytest.approx(calibkit.ace(labels, probs), abs=1e-12)
    assert merged.n_samples == len(labels)
    np.testing.assert_allclose(merged.compute().values, want.values, rtol=0, atol=1e-12)
