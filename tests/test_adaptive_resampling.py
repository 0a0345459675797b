"""Bootstrap resamples of adaptive metrics from one sorted order (issue 29, item 1).

``_native.resample_bootstrap_grouped`` sorts each group once and finds each resample's
equal-mass edges from cumulative weights. Each resample must be the weighted primitive's table
of the same weights (``grouped_bin_stats``, which sorts per call): the same edges, counts,
outcome and score sums (exact cell sums, whatever the order), so the same value bit for bit.
Chunks of resamples (``first=``) are the resamples of one call.
"""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit import _native
from calibkit.trust.cells import row_cells, triples


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


@pytest.mark.parametrize("name", ["ACE", "TACE"])
@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("weights", ["poisson", "multinomial"])
def test_each_resample_is_the_primitives_table(name, seed, weights):
    spec, rc, tr, n = _case(name, seed=seed)
    args = (tr.group, np.ascontiguousarray(tr.score, dtype=np.float64), tr.outcome, tr.row, None, n,
            tr.num_groups, "adaptive", tr.num_bins, spec.norm, spec.class_conditional, weights, 5)
    star = _native.resample_bootstrap_grouped(*args, 12)
    w = _native.bootstrap_weights(weights, 5, 0, 12, n)
    for r in range(12):
        c, s, o, _ = _native.grouped_bin_stats(tr.group, np.asarray(tr.score, dtype=np.float64),
                                               tr.outcome, w[r][tr.row], tr.num_groups,
                                               "adaptive", tr.num_bins)
        want = calibkit.reduce_bins(c, s, o, norm=spec.norm,
                                    class_conditional=spec.class_conditional)
        assert star[r] == want
    parts = [_native.resample_bootstrap_grouped(*args, m, first=f) for f, m in ((0, 5), (5, 1), (6, 6))]
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
