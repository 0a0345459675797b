"""Bootstrap resamples of adaptive metrics from one sorted order (issue 29, item 1).

``_native.AdaptiveBootstrap`` sorts the kept entries of a cell table once and finds each
resample's equal-mass edges from cumulative weights. Each resample must be the weighted
primitive's table of the same weights (``grouped_bin_stats``, which sorts per call): the same
edges, counts, outcome and score sums (exact cell sums, whatever the order), so the same value
bit for bit (with fractional base weights, to rounding: ``rust/kernels/weighted/adaptive.rs``).
Blocks of resamples (``first=``) are the resamples of one call. That the cell table's order is
the triples' order, field for field, is a Rust test
(``adaptive.rs::sorted_from_cells_is_sorted_from_its_triples``).
"""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit import _native
from calibkit.trust.cells import DROPPED, row_cells, triples


def _case(name, n=400, k=7, seed=3, sample_weight=None):
    rng = np.random.default_rng(seed)
    p = calibkit.softmax(rng.normal(size=(n, k)) * 2.0)
    if seed % 2:
        p = np.round(p, 2)  # ties on the edges
        p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    spec = calibkit.metric_space()[name]
    rc = row_cells(y, p, spec, 10)
    return spec, rc, triples(rc), n


def _primitive(spec, tr, w_rows):
    """The metric of the triples ``tr`` under per-row weights, by the weighted primitive."""
    c, s, o, _ = _native.grouped_bin_stats(tr.group, np.asarray(tr.score, dtype=np.float64),
                                           tr.outcome, w_rows[tr.row], tr.num_groups,
                                           "adaptive", tr.num_bins)
    return calibkit.reduce_bins(c, s, o, norm=spec.norm, class_conditional=spec.class_conditional)


@pytest.mark.parametrize("name", ["ACE", "TACE"])
@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("weights", ["poisson", "multinomial"])
def test_each_resample_is_the_primitives_table(name, seed, weights):
    spec, rc, tr, n = _case(name, seed=seed)
    boot = _native.AdaptiveBootstrap(rc.cell, rc.score, rc.hit, rc.groups, rc.nb)
    star = boot.resample(None, rc.num_bins, spec.norm, spec.class_conditional, weights, 5, 12)
    w = _native.bootstrap_weights(weights, 5, 0, 12, n)
    for r in range(12):
        assert star[r] == _primitive(spec, tr, w[r])
    parts = [boot.resample(None, rc.num_bins, spec.norm, spec.class_conditional, weights, 5, m,
                           first=f) for f, m in ((0, 5), (5, 1), (6, 6))]
    assert np.array_equal(np.concatenate(parts), star)


def test_interval_of_ace_uses_the_sorted_resamples():
    y = np.random.default_rng(0).integers(0, 5, 300)
    p = calibkit.softmax(np.random.default_rng(1).normal(size=(300, 5)))
    a = calibkit.confidence_interval(y, p, "ACE", n_resamples=64, random_state=2,
                                     return_resamples=True)
    b = calibkit.confidence_interval(y, p, "ACE", n_resamples=64, random_state=2,
                                     return_resamples=True)
    assert np.array_equal(a.resamples, b.resamples) and np.isfinite(a.resamples).all()


def test_progress_bar_blocks_give_the_same_interval(capsys):
    """With a bar shown, the adaptive bootstrap runs in blocks of resamples (so the bar can
    count them); the resamples are those of one call, bit for bit."""
    import calibkit
    from calibkit.trust import intervals

    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(5), 400)
    y = rng.integers(0, 5, 400)
    kw = dict(n_resamples=2 * intervals.PROGRESS_CHUNK + 7, random_state=1,
              return_resamples=True)
    for metric in ("ACE", "TACE"):
        quiet = calibkit.confidence_interval(y, p, metric, progress=False, **kw)
        shown = calibkit.confidence_interval(y, p, metric, progress=True, **kw)
        assert np.array_equal(quiet.resamples, shown.resamples), metric
        assert (quiet.low, quiet.high) == (shown.low, shown.high)


@pytest.mark.parametrize("name", ["ACE", "TACE", "RMSCE", "CCE"])
@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("weights", ["poisson", "multinomial"])
@pytest.mark.parametrize("base", ["none", "whole", "fractional", "small"])
def test_sample_weighted_resamples_are_the_primitives(name, seed, weights, base):
    """With sample weights as base weights, each resample is the primitive's metric under
    multiplicity times base weight: bitwise with whole base weights, to rounding with
    fractional ones (the primitive rounds each product of a multiplicity and a weight's units
    once, a resample the weight's units). And blocks are one call. CCE is even-binned in the
    paper's space; taken here with adaptive bins."""
    spec, rc, tr, n = _case(name, seed=seed)
    rng = np.random.default_rng(seed)
    sw = None if base == "none" else rng.integers(0, 4, n).astype(np.float64)
    if base == "fractional":
        sw[0] = 1.5  # a fractional base weight: the general path
    if base == "small":  # normalised to sum to 1: each group's weights lifted for the edges
        sw = (sw + 0.5) / (sw + 0.5).sum()
    boot = _native.AdaptiveBootstrap(rc.cell, rc.score, rc.hit, rc.groups, rc.nb)
    got = boot.resample(sw, rc.num_bins, spec.norm, spec.class_conditional, weights, 5, 19)
    w = _native.bootstrap_weights(weights, 5, 0, 19, n)
    want = np.array([_primitive(spec, tr, w[r] if sw is None else w[r] * sw) for r in range(19)])
    if base in ("fractional", "small"):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    else:
        assert np.array_equal(got, want)
    parts = [boot.resample(sw, rc.num_bins, spec.norm, spec.class_conditional, weights, 5, m,
                           first=f) for f, m in ((0, 9), (9, 1), (10, 9))]
    assert np.array_equal(np.concatenate(parts), got)


def test_progress_blocks_sort_once(monkeypatch):
    """A progress bar runs the adaptive bootstrap in blocks; the groups are sorted once."""
    from calibkit.trust import intervals

    made = []
    real = _native.AdaptiveBootstrap

    def counting(*args):
        made.append(1)
        return real(*args)

    monkeypatch.setattr(intervals._native, "AdaptiveBootstrap", counting)
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(5), 400)
    y = rng.integers(0, 5, 400)
    calibkit.confidence_interval(y, p, "ACE", n_resamples=3 * intervals.PROGRESS_CHUNK,
                                 random_state=1, progress=True)
    assert len(made) == 1


def test_adaptive_bootstrap_refuses_bad_input():
    spec, rc, tr, n = _case("ACE")
    good = (rc.cell, rc.score, rc.hit, rc.groups, rc.nb)
    boot = _native.AdaptiveBootstrap(*good)
    cell = rc.cell.copy()
    cell[3, 2] = rc.groups * rc.nb  # past the table
    with pytest.raises(calibkit.errors.CalibkitError, match="outside the"):
        _native.AdaptiveBootstrap(cell, rc.score, rc.hit, rc.groups, rc.nb)
    score = rc.score.copy()
    i, c = np.argwhere(rc.cell != DROPPED)[7]  # a kept entry (a dropped one is never read)
    score[i, c] = np.nan
    with pytest.raises(calibkit.errors.CalibkitError, match=rf"score\[{i}, {c}\] is NaN"):
        _native.AdaptiveBootstrap(rc.cell, score, rc.hit, rc.groups, rc.nb)
    with pytest.raises(calibkit.errors.CalibkitError, match="entries"):
        _native.AdaptiveBootstrap(rc.cell[:-1], rc.score, rc.hit, rc.groups, rc.nb)
    with pytest.raises(calibkit.errors.CalibkitError, match="contiguous"):
        _native.AdaptiveBootstrap(rc.cell[:, ::2], rc.score[:, ::2], rc.hit, rc.groups, rc.nb)
    with pytest.raises(calibkit.errors.CalibkitError, match="base weights must have"):
        boot.resample(np.ones(n - 1), rc.num_bins, "l1", True, "poisson", 1, 3)
    with pytest.raises(calibkit.errors.CalibkitError, match="base weights"):
        boot.resample(np.full(n, -1.0), rc.num_bins, "l1", True, "poisson", 1, 3)
    with pytest.raises(calibkit.errors.CalibkitError, match="norm"):
        boot.resample(None, rc.num_bins, "l3", True, "poisson", 1, 3)
    with pytest.raises(calibkit.errors.CalibkitError, match="num_bins|bins"):
        boot.resample(None, 0, "l1", True, "poisson", 1, 3)


@pytest.mark.parametrize("groups, nb", [(0, 0), (0, 10), (2, 0)])
def test_cell_resamplers_refuse_an_empty_table_shape(groups, nb):
    """A table of no groups or no bins is an error naming both, not NaN or 0 resamples, in
    every resampler on cells (they share the cells' check)."""
    spec, rc, tr, n = _case("ACE")
    with pytest.raises(calibkit.errors.InvalidParameterError, match="at least 1"):
        _native.AdaptiveBootstrap(rc.cell, rc.score, rc.hit, groups, nb)
    args = (rc.cell, rc.score, rc.hit, None, groups, nb, "l1", True)
    with pytest.raises(calibkit.errors.InvalidParameterError, match="at least 1"):
        _native.resample_bootstrap(*args, "poisson", 1, 3)
    with pytest.raises(calibkit.errors.InvalidParameterError, match="at least 1"):
        _native.resample_consistency(*args, 1, 3)


@pytest.mark.parametrize("n_resamples", [2**32, 2**62])
def test_every_resampler_refuses_a_count_it_cannot_hold(n_resamples):
    """A resample count past the native limit (2^32 - 1 a call) is an error naming it, before
    any work: not an aborted process (an allocation failure) nor hours of resampling. Every
    resampler's output goes through one reservation (``resample.rs::fill_blocks``); each path
    is reached here: the even bootstrap's lanes and its general loop (a base weight), the
    calibration test's top-label and K-column loops, the adaptive bootstrap's byte path and
    and its general path (base weights)."""
    spec, rc, tr, n = _case("ACE")
    top_spec, top, _, _ = _case("ECE")
    sw = np.ones(n)
    boot = _native.AdaptiveBootstrap(rc.cell, rc.score, rc.hit, rc.groups, rc.nb)
    calls = [
        lambda: _native.resample_bootstrap(top.cell, top.score, top.hit, None, top.groups,
                                           top.nb, "l1", False, "poisson", 1, n_resamples),
        lambda: _native.resample_bootstrap(rc.cell, rc.score, rc.hit, sw, rc.groups, rc.nb,
                                           "l1", True, "multinomial", 1, n_resamples),
        lambda: _native.resample_consistency(top.cell, top.score, top.hit, None, top.groups,
                                             top.nb, "l1", False, 1, n_resamples),
        lambda: _native.resample_consistency(rc.cell, rc.score, rc.hit, None, rc.groups,
                                             rc.nb, "l1", True, 1, n_resamples),
        lambda: boot.resample(None, rc.num_bins, "l1", True, "poisson", 1, n_resamples),
        lambda: boot.resample(sw, rc.num_bins, "l1", True, "poisson", 1, n_resamples),
    ]
    for call in calls:
        with pytest.raises(calibkit.errors.InvalidParameterError,
                           match=f"n_resamples = {n_resamples}: at most 4294967295"):
            call()


def test_a_count_memory_cannot_hold_is_a_memory_budget_error():
    """Below the native bound, an output the process cannot reserve (here 16 GB under an 8 GB
    address-space limit, in a child process) is a MemoryBudgetError naming n_resamples, not
    an aborted process."""
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS bounds allocations on Linux only")
    code = """if True:
        import resource, numpy as np
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        import calibkit
        from calibkit import _native
        from calibkit.trust.cells import row_cells
        rng = np.random.default_rng(0)
        p = calibkit.softmax(rng.normal(size=(50, 3)))
        y = rng.integers(0, 3, 50)
        rc = row_cells(y, p, calibkit.metric_space()["ECE"], 10)
        try:
            _native.resample_bootstrap(rc.cell, rc.score, rc.hit, None, rc.groups, rc.nb,
                                       "l1", False, "poisson", 1, 2**31)
        except calibkit.errors.MemoryBudgetError as e:
            print("refused:", e)
    """
    env = {**__import__("os").environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "refused: n_resamples = 2147483648" in run.stdout, run.stdout + run.stderr[-2000:]
