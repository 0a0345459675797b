"""Tests of calibkit.streaming.Accumulator: exactness for any batching, merge, pickling, the
bounded-memory sketch mode (its documented rank-error bound) and bad input (state unchanged)."""

from __future__ import annotations

import doctest
import itertools
import pickle

import numpy as np
import pytest
from conftest import load_shared
from hypothesis import given
from hypothesis import strategies as st

import calibkit
import calibkit.binned.groups
import calibkit.scale.streaming
from calibkit.errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from calibkit.scale.streaming import Accumulator, IncompatibleAccumulatorError
from calibkit.space import Evaluation, MetricSpec, evaluate, metric_space

SPECS = list(metric_space(thresholds=(0.0, 0.01, 0.3), norms=("l1", "l2", "max")))
EVEN = [s for s in SPECS if s.binning == "even"]
ADAPTIVE = [s for s in SPECS if s.binning == "adaptive"]


def make_data(seed: int, n: int, k: int, kind: str, dtype=np.float64):
    """Labels and probabilities with the awkward cases: ties, exact 0 and 1, values on edges."""
    rng = np.random.default_rng(seed)
    if kind == "dirichlet":
        p = rng.dirichlet(np.full(k, 0.4), size=n)
    elif kind == "grid":  # multiples of 1/10: exact 0.0 and 1.0, many ties, values near edges
        p = rng.multinomial(10, np.ones(k) / k, size=n) / 10.0
    elif kind == "ties":  # a handful of distinct rows
        rows = rng.dirichlet(np.ones(k), size=3)
        p = rows[rng.integers(0, 3, size=n)]
    elif kind == "binary":  # 1-D P(y=1)
        p = rng.random(n)
        return rng.integers(0, 2, size=n), p.astype(dtype)
    else:  # pragma: no cover
        raise AssertionError(kind)
    return rng.integers(0, k, size=n), p.astype(dtype)


def batches(n: int, cuts):
    """Split range(n) at ``cuts`` (repeated cuts give empty batches)."""
    edges = [0] + sorted(min(max(c, 0), n) for c in cuts) + [n]
    return [(a, b) for a, b in itertools.pairwise(edges)]


def feed(acc: Accumulator, labels, probs, cuts):
    for a, b in batches(len(labels), cuts):
        acc.update(labels[a:b], probs[a:b])
    return acc


data_args = {
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(1, 160),
    "k": st.integers(2, 6),
    "kind": st.sampled_from(["dirichlet", "grid", "ties", "binary"]),
    "dtype": st.sampled_from([np.float64, np.float32]),
    "cuts": st.lists(st.integers(0, 160), max_size=8),
    "num_bins": st.integers(1, 25),
}


# ----------------------------------------------------------------------------------------------
# Exactness for any batching
# ----------------------------------------------------------------------------------------------


@given(spec=st.sampled_from(EVEN), **data_args)
def test_even_equals_one_shot_for_any_batching(spec, seed, n, k, kind, dtype, cuts, num_bins):
    labels, probs = make_data(seed, n, k, kind, dtype)
    acc = feed(Accumulator(spec, num_bins=num_bins), labels, probs, cuts)
    expected = calibkit.gce(labels, probs, **spec.kwargs(), num_bins=num_bins)
    assert acc.compute() == pytest.approx(expected, abs=1e-12, rel=0)
    assert acc.n_samples == n


@given(spec=st.sampled_from(ADAPTIVE), **data_args)
def test_adaptive_exact_equals_one_shot_for_any_batching(spec, seed, n, k, kind, dtype, cuts,
                                                         num_bins):
    labels, probs = make_data(seed, n, k, kind, dtype)
    acc = feed(Accumulator(spec, num_bins=num_bins), labels, probs, cuts)
    expected = calibkit.gce(labels, probs, **spec.kwargs(), num_bins=num_bins)
    assert acc.compute() == pytest.approx(expected, abs=1e-12, rel=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("batch", [1, 3, 14, 999, 10_000])
def test_whole_space_on_real_data(dtype, batch):
    """48 metrics x 3 bin counts on a real network's outputs, batches smaller than num_bins too."""
    d = load_shared("netcal__lenet-5-cifar-10.npz")
    n = 10_000 if batch >= 999 else 600  # keep the 1-row batches quick
    labels, probs = d["labels"][:n], d["probs"][:n].astype(dtype)
    space = metric_space(norms=("l1", "l2", "max"))
    acc = Accumulator(space, num_bins=(5, 15, 40))
    feed(acc, labels, probs, range(batch, n, batch))
    acc.update(labels[:0], probs[:0])  # an empty batch changes nothing
    got = acc.compute()
    want = evaluate(labels, probs, space=space, num_bins=(5, 15, 40))
    assert isinstance(got, Evaluation)
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-12)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 150),
       cuts=st.lists(st.integers(0, 150), max_size=4),
       mode=st.sampled_from(["exact", "sketch"]))
def test_shared_state_across_thresholds(seed, n, cuts, mode):
    """One accumulator for thresholds 0, 0.01 and 0.3 (the thresholded metrics reuse stored
    scores), on scores lying exactly on the thresholds (multiples of 0.1)."""
    labels, probs = make_data(seed, n, 3, "grid")
    acc = feed(Accumulator(SPECS, num_bins=(2, 7), adaptive=mode), labels, probs, cuts)
    want = evaluate(labels, probs, space=SPECS, num_bins=(2, 7))
    np.testing.assert_allclose(acc.compute().values, want.values, rtol=0, atol=1e-12)


def test_bins_table_matches_calibration_bins():
    labels, probs = make_data(3, 700, 4, "grid")
    acc = feed(Accumulator(["ECE", "ACE", "TACE", "CCE"], num_bins=(4, 9)), labels, probs,
               [100, 100, 350])
    for name, kw in [("ECE", {}), ("CCE", {"class_conditional": True}),
                     ("ACE", {"binning": "adaptive", "max_prob": False, "class_conditional": True}),
                     ("TACE", {"binning": "adaptive", "max_prob": False,
                               "class_conditional": True, "threshold": 0.01})]:
        for b in (4, 9):
            got = acc.bins(name, b)
            want = calibkit.calibration_bins(labels, probs, num_bins=b, **kw)
            np.testing.assert_array_equal(got.counts, want.counts)
            np.testing.assert_allclose(got.sum_score, want.sum_score, rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(got.sum_outcome, want.sum_outcome, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(got.edges, want.edges)


def test_keywords_and_single_metric_forms():
    labels, probs = make_data(5, 300, 3, "dirichlet")
    want = calibkit.tace(labels, probs, num_bins=7)
    forms = [
        Accumulator("TACE", num_bins=7),
        Accumulator(26, num_bins=7),
        Accumulator(MetricSpec("adaptive", False, True, 0.01, "l1"), num_bins=7),
        Accumulator({"binning": "adaptive", "max_prob": False, "class_conditional": True,
                     "threshold": 0.01}, num_bins=7),
        Accumulator(("adaptive", False, True, 0.01, "l1"), num_bins=7),
        Accumulator(binning="adaptive", max_prob=False, class_conditional=True, threshold=0.01,
                    num_bins=7),
    ]
    for acc in forms:
        assert acc.update(labels, probs).compute() == pytest.approx(want, abs=1e-12)
    default = Accumulator().update(labels, probs)
    assert default.compute() == pytest.approx(calibkit.ece(labels, probs), abs=1e-12)
    table = Accumulator(["ECE"], num_bins=7).update(labels, probs).compute()
    assert isinstance(table, Evaluation) and table.get("ECE") == pytest.approx(
        calibkit.ece(labels, probs, num_bins=7), abs=1e-12)


# ----------------------------------------------------------------------------------------------
# Merge and pickling
# ----------------------------------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200), shards=st.integers(1, 5),
       mode=st.sampled_from(["exact", "sketch"]))
def test_merge_of_shards_equals_one_shot(seed, n, shards, mode):
    labels, probs = make_data(seed, n, 4, "dirichlet")
    space = ["ECE", "SCE", "CCE", "ACE", "TACE", "RMSCE", "MCE"]
    parts = np.array_split(np.arange(n), shards)
    accs = [Accumulator(space, num_bins=(3, 10), adaptive=mode, sketch_k=256).update(
        labels[i], probs[i]) for i in parts]
    total = accs[0]
    for a in accs[1:]:
        total.merge(pickle.loads(pickle.dumps(a)))  # states travel between processes
    assert total.n_samples == n
    assert total.is_exact  # n <= 200 < sketch_k: the sketches never compacted
    want = evaluate(labels, probs, space=space, num_bins=(3, 10))
    np.testing.assert_allclose(total.compute().values, want.values, rtol=0, atol=1e-12)


def test_merge_is_order_free_and_leaves_other_unchanged():
    labels, probs = make_data(11, 900, 5, "grid", np.float32)
    a = Accumulator(["ECE", "ACE"], num_bins=10).update(labels[:400], probs[:400])
    b = Accumulator(["ECE", "ACE"], num_bins=10).update(labels[400:], probs[400:])
    b_before = b.copy()
    ab = a.copy().merge(b)
    ba = b.copy().merge(a)
    assert b == b_before
    np.testing.assert_allclose(ab.compute().values, ba.compute().values, rtol=0, atol=1e-12)
    # merging an accumulator that saw nothing, into one and from one
    fresh = Accumulator(["ECE", "ACE"], num_bins=10)
    assert a.copy().merge(fresh) == a
    assert fresh.merge(a) == a


def test_merge_with_itself_counts_twice():
    labels, probs = make_data(12, 300, 3, "dirichlet")
    acc = Accumulator(["SCE", "ACE"], num_bins=6).update(labels, probs)
    acc.merge(acc)
    doubled = Accumulator(["SCE", "ACE"], num_bins=6).update(labels, probs).update(labels, probs)
    assert acc.n_samples == 600
    np.testing.assert_allclose(acc.compute().values, doubled.compute().values, atol=1e-12)


@pytest.mark.parametrize("mode", ["exact", "sketch"])
def test_pickle_round_trip(mode):
    labels, probs = make_data(13, 3000, 6, "dirichlet", np.float32)
    acc = Accumulator(metric_space(), num_bins=(5, 12), adaptive=mode, sketch_k=64)
    feed(acc, labels, probs, [1000, 2000])
    clone = pickle.loads(pickle.dumps(acc))
    assert clone == acc and clone is not acc
    np.testing.assert_array_equal(clone.compute().values, acc.compute().values)
    # the clone is independent (KLL compaction is randomised, so sketch states then drift apart
    # while staying equally accurate)
    clone.update(labels[:10], probs[:10])
    assert clone.n_samples == acc.n_samples + 10
    acc.update(labels[:10], probs[:10])
    if mode == "exact":
        assert clone == acc
    assert acc != Accumulator(metric_space(), num_bins=(5, 12), adaptive=mode, sketch_k=64)


# ----------------------------------------------------------------------------------------------
# Memory
# ----------------------------------------------------------------------------------------------


def test_exact_mode_holds_the_kept_scores_compactly():
    labels, probs = make_data(14, 5000, 8, "dirichlet", np.float32)
    acc = Accumulator("RMSCE").update(labels, probs)
    assert acc.nbytes == 4 * 5000  # float32 top-label scores, outcomes cost nothing
    both = Accumulator(["ACE", "TACE"]).update(labels, probs)
    assert both.nbytes == 4 * int(np.count_nonzero(probs > 0))  # TACE reuses ACE's scores
    p64 = probs.astype(np.float64)
    assert Accumulator("RMSCE").update(labels, p64).nbytes == 8 * 5000
    even = Accumulator(["ECE", "SCE"], num_bins=15).update(labels, probs)
    # tables only, independent of N: int64 counts, exact score sums (two int64 words per cell,
    # docs/spec.md "Cell sums"), float64 outcome sums
    assert even.nbytes == (1 + 8) * 16 * (8 + 16 + 8)
    assert even.update(labels, probs).nbytes == even.nbytes


def test_sketch_mode_memory_is_bounded():
    rng = np.random.default_rng(15)
    acc = Accumulator(["ACE", "RMSCE"], adaptive="sketch", sketch_k=128)
    sizes = []
    for i in range(40):
        probs = calibkit.softmax(rng.normal(size=(5000, 4)) * 2)
        acc.update(rng.integers(0, 4, size=5000), probs)
        if i in (3, 39):
            sizes.append(acc.nbytes)
    assert not acc.is_exact
    assert sizes[1] < 1.3 * sizes[0]  # 10x the data, about the same memory
    exact_bytes = 8 * acc.n_samples * (4 + 1)
    assert sizes[1] < exact_bytes / 20


# ----------------------------------------------------------------------------------------------
# Sketch mode: exact while small, the documented rank-error bound, accuracy on real data
# ----------------------------------------------------------------------------------------------


def test_sketch_mode_is_exact_until_the_sketch_compacts():
    labels, probs = make_data(16, 150, 5, "grid")
    space = ["ACE", "TACE", "RMSCE", "gce(adaptive,all,pooled,0.0,l2)"]
    acc = feed(Accumulator(space, num_bins=(4, 15), adaptive="sketch", sketch_k=1024),
               labels, probs, [40, 90])
    assert acc.is_exact
    np.testing.assert_allclose(acc.compute().values,
                               evaluate(labels, probs, space=space, num_bins=(4, 15)).values,
                               rtol=0, atol=1e-12)


def _true_rank_distance(sorted_values, edges, positions):
    """How far (in ranks) each edge's rank interval [#(< e), #(<= e)) is from its position."""
    lo = np.searchsorted(sorted_values, edges, side="left")
    hi = np.searchsorted(sorted_values, edges, side="right") - 1
    return np.where(positions < lo, lo - positions, np.where(positions > hi, positions - hi, 0))


@pytest.mark.parametrize("k", [32, 200])
def test_sketch_edges_respect_the_documented_rank_error(k):
    """DataSketches documents get_normalized_rank_error(k, False) as the 99th percentile of the
    maximum rank error; each estimated edge must be within eps * n ranks of SPEC's position, and
    each estimated bin's mass within get_normalized_rank_error(k, True) * n of the true mass of
    the same value range. Real data: every probability of a CIFAR-100 network (1M scores)."""
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    labels, probs = d["labels"], d["probs"]
    flat = probs.ravel()
    kept = np.sort(flat[flat > 0])
    n, num_bins = kept.size, 20
    positions = calibkit.binned.groups.adaptive_positions(n, num_bins)
    passed_rank = passed_pmf = 0
    trials = 10
    for trial in range(trials):
        order = np.random.default_rng(trial).permutation(len(labels))
        acc = Accumulator("gce(adaptive,all,pooled,0.0,l1)", num_bins=num_bins,
                          adaptive="sketch", sketch_k=k)
        for start in range(0, len(labels), 2500):
            rows = order[start:start + 2500]
            acc.update(labels[rows], probs[rows])
        assert not acc.is_exact
        eps, eps_pmf = acc.rank_error(), acc.rank_error(pmf=True)
        table = acc.bins()
        edges = table.edges[0, 1:-1]
        assert int(table.counts.sum()) == n  # group sizes are exact
        dist = _true_rank_distance(kept, edges, positions)
        passed_rank += bool(dist.max() <= eps * n)
        true_counts = np.diff(np.searchsorted(kept, np.concatenate([[0.0], edges, [np.inf]]),
                                              side="left"))
        passed_pmf += bool(np.abs(table.counts[0] - true_counts).max() <= eps_pmf * n)
    # 99 % guarantees: allow one miss in ten independent sketches (observed: none).
    assert passed_rank >= trials - 1
    assert passed_pmf >= trials - 1


def test_sketch_accuracy_on_real_data():
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    labels, probs = d["labels"], d["probs"]
    space = ["ACE", "TACE", "RMSCE"]
    acc = Accumulator(space, adaptive="sketch")  # default k
    feed(acc, labels, probs, range(1000, 10_000, 1000))
    want = evaluate(labels, probs, space=space, num_bins=15).values[:, 0]
    got = acc.compute().values[:, 0]
    assert not acc.is_exact
    np.testing.assert_allclose(got, want, rtol=0, atol=3e-3)
    exact = feed(Accumulator(space), labels, probs, range(1000, 10_000, 1000))
    assert acc.nbytes < exact.nbytes


# ----------------------------------------------------------------------------------------------
# Bad input: a clear error and the accumulator left exactly as it was
# ----------------------------------------------------------------------------------------------


def _unchanged_after(acc, action, exc, match):
    before = acc.copy()
    raw = pickle.dumps(acc)
    with pytest.raises(exc, match=match):
        action()
    assert acc == before
    assert pickle.dumps(acc) == raw


@pytest.fixture
def started():
    labels, probs = make_data(21, 200, 4, "dirichlet", np.float32)
    return Accumulator(["ECE", "ACE", "RMSCE"], num_bins=(5, 10)).update(labels, probs)


def test_equality_sees_a_change(started):
    before = started.copy()
    labels, probs = make_data(22, 5, 4, "dirichlet", np.float32)
    started.update(labels, probs)
    assert started != before


def test_batch_with_other_k_is_refused(started):
    labels, probs = make_data(23, 50, 5, "dirichlet", np.float32)
    _unchanged_after(started, lambda: started.update(labels, probs), ShapeMismatchError,
                     r"K=5 .* K=4")
    # an empty batch with the wrong K too
    _unchanged_after(started, lambda: started.update([], np.zeros((0, 3), np.float32)),
                     ShapeMismatchError, "K=3")


def test_mixed_float_dtypes_are_refused(started):
    labels, probs = make_data(24, 50, 4, "dirichlet", np.float64)
    _unchanged_after(started, lambda: started.update(labels, probs), InputTypeError,
                     "float64 but earlier batches were float32")


@pytest.mark.parametrize("case, exc, match", [
    ("nan", calibkit.InvalidProbabilitiesError, "NaN"),
    ("label", calibkit.InvalidLabelsError, r"labels\[7\] is 4"),
    ("rowsum", calibkit.InvalidProbabilitiesError, "sums to"),
    ("logits", calibkit.InvalidProbabilitiesError, "logits"),
    ("length", ShapeMismatchError, "49 entries"),
    ("ndim", ShapeMismatchError, "2-D"),
    ("type", InputTypeError, "array of probabilities"),
])
def test_invalid_batches_are_refused(started, case, exc, match):
    labels, probs = make_data(25, 50, 4, "dirichlet", np.float32)
    if case == "nan":
        probs[3, 1] = np.nan
    elif case == "label":
        labels[7] = 4
    elif case == "rowsum":
        probs[2] *= 0.5
    elif case == "logits":
        probs = (probs * 10 - 3).astype(np.float32)
    elif case == "length":
        labels = labels[:-1]
    elif case == "ndim":
        probs = probs[None]
    else:
        probs = "not an array"
    _unchanged_after(started, lambda: started.update(labels, probs), exc, match)


def test_invalid_first_batch_fixes_nothing():
    acc = Accumulator(["RMSCE"])  # adaptive only: values are still checked by the Rust pass
    labels, probs = make_data(26, 30, 3, "dirichlet")
    labels[0] = -1
    with pytest.raises(calibkit.InvalidLabelsError):
        acc.update(labels, probs)
    assert acc.num_classes is None and acc.dtype is None and acc.n_samples == 0
    acc.update(*make_data(26, 30, 5, "dirichlet", np.float32))  # any K and dtype still welcome
    assert acc.num_classes == 5


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": ["ECE", "SCE"]}, "metrics"),
    ({"num_bins": (5,)}, "num_bins"),
    ({"adaptive": "sketch"}, "adaptive"),
    ({"sketch_k": 64, "adaptive": "sketch"}, "adaptive"),
])
def test_incompatible_merges_are_refused(started, kwargs, match):
    args = {"metric": ["ECE", "ACE", "RMSCE"], "num_bins": (5, 10)}
    args.update(kwargs)
    other = Accumulator(args.pop("metric"), **args)
    other.update(*make_data(27, 40, 4, "dirichlet", np.float32))
    _unchanged_after(started, lambda: started.merge(other), IncompatibleAccumulatorError, match)


def test_merge_refuses_other_k_dtype_sketch_k_and_non_accumulators(started):
    space = ["ECE", "ACE", "RMSCE"]
    other_k = Accumulator(space, num_bins=(5, 10)).update(*make_data(28, 40, 3, "dirichlet",
                                                                     np.float32))
    _unchanged_after(started, lambda: started.merge(other_k), IncompatibleAccumulatorError,
                     "K 4 vs 3")
    other_dtype = Accumulator(space, num_bins=(5, 10)).update(*make_data(28, 40, 4, "dirichlet"))
    _unchanged_after(started, lambda: started.merge(other_dtype), IncompatibleAccumulatorError,
                     "dtype float32 vs float64")
    s1 = Accumulator(space, adaptive="sketch", sketch_k=100)
    s2 = Accumulator(space, adaptive="sketch", sketch_k=200).update(*make_data(29, 9, 4,
                                                                              "dirichlet"))
    _unchanged_after(s1, lambda: s1.merge(s2), IncompatibleAccumulatorError, "sketch_k")
    _unchanged_after(started, lambda: started.merge("ECE"), InputTypeError, "Accumulator")
    assert isinstance(IncompatibleAccumulatorError("x"), ValueError)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: Accumulator("NOPE"), InvalidParameterError, "unknown metric name"),
    (lambda: Accumulator(3.5), InputTypeError, "metric"),
    (lambda: Accumulator([]), InvalidParameterError, "at least one metric"),
    (lambda: Accumulator(["ECE", "ece"]), InvalidParameterError, "twice"),
    (lambda: Accumulator("ECE", norm="l2"), InvalidParameterError, "not both"),
    (lambda: Accumulator(nrom="l2"), InvalidParameterError, "unknown keyword"),
    (lambda: Accumulator(norm="l3"), InvalidParameterError, "norm"),
    (lambda: Accumulator(threshold=1.5), InvalidParameterError, "threshold"),
    (lambda: Accumulator(num_bins=0), InvalidParameterError, "num_bins"),
    (lambda: Accumulator(num_bins=2.5), InputTypeError, "num_bins"),
    (lambda: Accumulator(num_bins=(5, 5)), InvalidParameterError, "repeats"),
    (lambda: Accumulator(num_bins=()), InvalidParameterError, "at least one"),
    (lambda: Accumulator(num_bins="15"), InputTypeError, "num_bins"),
    (lambda: Accumulator(adaptive="approx"), InvalidParameterError, "adaptive must be"),
    (lambda: Accumulator(sketch_k=4), InvalidParameterError, "sketch_k"),
    (lambda: Accumulator(sketch_k=True), InvalidParameterError, "sketch_k"),
])
def test_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_compute_and_bins_before_any_data():
    acc = Accumulator(["ECE", "ACE"], num_bins=(5, 10))
    with pytest.raises(ShapeMismatchError, match="seen no predictions"):
        acc.compute()
    acc.update([], np.zeros((0, 3)))
    assert acc.num_classes == 3
    with pytest.raises(ShapeMismatchError, match="seen no predictions"):
        acc.compute()
    acc.update([0], [[0.5, 0.3, 0.2]])
    with pytest.raises(InvalidParameterError, match="name one of"):
        acc.bins()
    with pytest.raises(InvalidParameterError, match="pass num_bins"):
        acc.bins("ECE")
    with pytest.raises(InvalidParameterError, match="was not accumulated"):
        acc.bins("ECE", 7)
    with pytest.raises(InvalidParameterError, match="not in this space"):
        acc.bins("SCE", 5)
    with pytest.raises(ShapeMismatchError, match="labels"):
        acc.update([0, 1], np.zeros((0, 3)))


def test_repr_and_rank_error():
    acc = Accumulator("ACE", adaptive="sketch", sketch_k=200)
    assert "ACE" in repr(acc) and "sketch" in repr(acc)
    assert acc.rank_error() == pytest.approx(0.0133, abs=5e-4)  # DataSketches' figure for k=200
    assert Accumulator("ACE").rank_error() is None


def test_docstring_examples():
    for mod in (calibkit.streaming, calibkit.binned.groups):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0
