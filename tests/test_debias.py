"""Debiased l2 (Kumar et al. 2019), ece_sweep (Roelofs et al. 2022), the signed error and
num_bins="auto"."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit.errors import FewSamplesWarning, InvalidParameterError


def _data(seed, n=600, k=4):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.8, size=n)
    y = np.array([rng.choice(k, p=np.clip(row ** 1.3 / (row ** 1.3).sum(), 0, 1)) for row in p])
    return y, p


def _debiased_by_hand(scores, outcomes, edges_upper):
    """Direct NumPy: bins by the left-closed rule, then Kumar's per-bin correction."""
    b = np.searchsorted(edges_upper, scores, side="right")
    n = scores.size
    tot = 0.0
    for j in np.unique(b):
        m = b == j
        nb = m.sum()
        if nb < 2:
            continue
        acc = outcomes[m].mean()
        tot += nb / n * ((acc - scores[m].mean()) ** 2 - acc * (1 - acc) / (nb - 1))
    return max(tot, 0.0)


def test_debiased_top_label_matches_direct_formula():
    y, p = _data(0)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(float)
    for b in (3, 10, 25):
        got = calibkit.gce(y, p, norm="l2", num_bins=b, debias=True)
        want = np.sqrt(_debiased_by_hand(conf, correct, np.linspace(0, 1, b + 1)[1:]))
        assert got == pytest.approx(want, abs=1e-12)


def test_debiased_is_below_plugin_and_rmsce_keyword():
    y, p = _data(1)
    for b in (5, 15):
        assert calibkit.rmsce(y, p, num_bins=b, debias=True) <= calibkit.rmsce(y, p, num_bins=b)
    t = calibkit.calibration_bins(y, p, binning="adaptive", num_bins=15)
    assert t.error("l2", debias=True) == calibkit.rmsce(y, p, num_bins=15, debias=True)


def test_negative_estimate_clips_to_zero_and_single_bins_count_zero():
    # perfectly calibrated-looking tiny bins: the variance term dominates
    from calibkit.binned.debias import debiased_l2

    assert debiased_l2([[4, 4]], [[1.2, 2.8]], [[1, 3]], False) == 0.0
    # a single-prediction bin contributes 0 but keeps its weight
    v = debiased_l2([[1, 3]], [[0.9, 0.6]], [[0, 3]], False)
    assert v == pytest.approx(np.sqrt(0.75 * ((1 - 0.2) ** 2 - 0.0)))


@pytest.mark.parametrize("norm", ["l1", "max"])
def test_debias_refused_for_l1_and_max(norm):
    y, p = _data(2, n=50)
    with pytest.raises(InvalidParameterError, match="l2"):
        calibkit.gce(y, p, norm=norm, debias=True)
    with pytest.raises(InvalidParameterError):
        calibkit.calibration_bins(y, p).error(norm, debias=True)
    with pytest.raises(InvalidParameterError):
        calibkit.gce(y, p, norm="l2", debias="yes")


def _vc():
    return requires("calibration", "verified_calibration: pip install uncertainty-calibration")


@pytest.mark.parametrize("seed", range(4))
def test_matches_verified_calibration_even_bins(seed):
    """Same binning: continuous scores never sit on an edge, so verified_calibration's
    right-closed bins i/B hold the same predictions as calibkit's left-closed ones."""
    vc = _vc()
    y, p = _data(seed, n=800)
    for b in (5, 10, 15):
        ours = calibkit.gce(y, p, binning="even", max_prob=True, norm="l2", num_bins=b, debias=True)
        theirs = vc.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=b,
                                           binning_scheme=vc.get_equal_prob_bins, mode="top-label")
        assert ours == pytest.approx(theirs, abs=1e-12)
        # marginal = calibkit's class-conditional all-probabilities l2 (paper index 9)
        ours_m = calibkit.gce(y, p, binning="even", max_prob=False, class_conditional=True,
                              norm="l2", num_bins=b, debias=True)
        theirs_m = vc.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=b,
                                             binning_scheme=vc.get_equal_prob_bins, mode="marginal")
        assert ours_m == pytest.approx(theirs_m, abs=1e-12)


def test_matches_verified_calibration_equal_mass_when_b_divides_n():
    """Equal-mass bins agree when B divides n (both split the sorted scores into n/B blocks);
    otherwise verified_calibration uses np.array_split sizes ([4, 3, 3] for n=10, B=3) and
    midpoint edges, calibkit SPEC's round-half-even positions ([3, 4, 3])."""
    vc = _vc()
    y, p = _data(7, n=600)
    for b in (4, 10, 15):
        ours = calibkit.rmsce(y, p, num_bins=b, debias=True)
        theirs = vc.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=b,
                                           binning_scheme=vc.get_equal_bins, mode="top-label")
        assert ours == pytest.approx(theirs, abs=1e-12)
        # and the plug-in l2 too
        assert calibkit.rmsce(y, p, num_bins=b) == pytest.approx(
            vc.lower_bound_scaling_ce(p, y, p=2, debias=False, num_bins=b,
                                      binning_scheme=vc.get_equal_bins, mode="top-label"),
            abs=1e-12)


# --- ece_sweep ---------------------------------------------------------------------------

def _sweep_by_hand(y, p, norm):
    conf = p.max(axis=1)
    best = None
    for b in range(1, len(y) + 1):
        t = calibkit.calibration_bins(y, p, binning="adaptive", num_bins=b)
        c = t.counts[0]
        acc = t.sum_outcome[0][c > 0] / c[c > 0]
        if b > 1 and np.any(np.diff(acc) < 0):
            break
        best = b
    assert conf.size
    return best


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_sweep_picks_largest_monotone_count(norm):
    y, p = _data(3, n=400)
    r = calibkit.ece_sweep(y, p, norm=norm)
    b = _sweep_by_hand(y, p, norm)
    assert r.num_bins == b
    assert r.value == pytest.approx(calibkit.gce(y, p, binning="adaptive", norm=norm,
                                                 num_bins=b), abs=1e-15)
    # the next count breaks monotonicity
    t = calibkit.calibration_bins(y, p, binning="adaptive", num_bins=b + 1)
    c = t.counts[0]
    assert np.any(np.diff(t.sum_outcome[0][c > 0] / c[c > 0]) < 0)


def _sweep_by_tables(y, p, **kw):
    """The sweep's definition, one calibration_bins table per bin count (the old loop)."""
    n = len(y)
    top = kw.pop("max_bins", n)
    chosen = 1
    for b in range(2, top + 1):
        t = calibkit.calibration_bins(y, p, num_bins=b, class_conditional=False, **kw)
        c = t.counts[0]
        if np.any(np.diff(t.sum_outcome[0][c > 0] / c[c > 0]) < 0):
            break
        chosen = b
    return chosen


@pytest.mark.parametrize("seed", range(24))
def test_sweep_without_tables_chooses_as_the_tables_do(seed):
    """The unweighted sweep reads each bin count's bins off the sorted scores (prefix sums),
    and skips to the end when the finest bins are monotone: the same bin count as a table
    per count, and the value is gce's at that count. Ties (rounded scores), thresholds, pooled
    scores, even bins (scores of 1.0 in their extra bin) and nearly separable data that sweeps
    far."""
    r = np.random.default_rng(seed)
    n, k = int(r.integers(1, 300)), int(r.integers(1, 5))
    p = r.dirichlet(np.ones(k) * r.uniform(0.2, 3), n)
    if seed % 3 == 0:
        p = np.round(p * 4) / 4
        p /= p.sum(1, keepdims=True)
    y = r.integers(0, k, n)
    if seed % 4 == 1:  # right iff confident, a defect or two: sweeps to many bins
        top, pred = p.max(1), p.argmax(1)
        y = np.where(top > np.median(top), pred, (pred + 1) % k)
        y = np.where(r.uniform(size=n) < 0.01, (y + 1) % k, y)
    for kw in [dict(binning="adaptive"), dict(binning="even"), dict(binning="adaptive", max_prob=False),
               dict(binning="even", threshold=0.3), dict(binning="adaptive", threshold=0.5),
               dict(binning="adaptive", max_bins=7)]:
        got = calibkit.ece_sweep(y, p, **kw)
        b = _sweep_by_tables(y, p, **kw)
        assert got.num_bins == b, kw
        spec = {k_: v for k_, v in kw.items() if k_ != "max_bins"}
        table = calibkit.calibration_bins(y, p, num_bins=b, class_conditional=False, **spec)
        assert got.value == table.error("l1"), kw  # the chosen count's table, as before
        assert got.value == pytest.approx(calibkit.gce(y, p, num_bins=b, **spec), abs=1e-15)


def test_sweep_of_separable_scores_skips_to_the_end(monkeypatch):
    """Right exactly when confident: every binning is monotone, so the sweep runs to N bins.
    It used to build a table per bin count (minutes at 100k rows); it now builds two tables (one
    bin, and the chosen count), checks the first bin counts boundary by boundary, and sees from
    the runs of equal scores that no binning beyond them can break monotonicity."""
    import calibkit.trust.sweep as sweep

    tables, checked = [], []
    real_table, real_failing = sweep.calibration_bins, sweep._Sweep.failing

    def counting_table(*args, **kwargs):
        tables.append(kwargs["num_bins"])
        return real_table(*args, **kwargs)

    def recording_failing(self, bs, *rest):
        checked.append(int(np.max(bs)))
        return real_failing(self, bs, *rest)

    monkeypatch.setattr(sweep, "calibration_bins", counting_table)
    monkeypatch.setattr(sweep._Sweep, "failing", recording_failing)
    c = np.linspace(0.5, 1.0, 100_000)
    p = np.c_[c, 1 - c]
    y = np.where(c > 0.75, 0, 1)
    r = calibkit.ece_sweep(y, p)
    assert r.num_bins == 100_000
    assert r.value == pytest.approx(calibkit.gce(y, p, binning="adaptive", num_bins=100_000), abs=1e-15)
    assert tables == [1, 100_000]
    assert max(checked) <= sweep._FIRST  # nothing beyond the first bin counts was visited
    with pytest.raises(calibkit.errors.ParameterTypeError, match="max_bins must be an integer, got 2.5"):
        calibkit.ece_sweep(y, p, max_bins=2.5)


def test_sweep_rejects_max_norm():
    with pytest.raises(InvalidParameterError):
        calibkit.ece_sweep([0, 1], [0.3, 0.8], norm="max")


# --- signed error ------------------------------------------------------------------------

def test_signed_ece_and_masses():
    y, p = _data(4)
    for cc in (False, True):
        t = calibkit.calibration_bins(y, p, num_bins=10, class_conditional=cc)
        over, under = t.overconfidence(), t.underconfidence()
        assert over >= 0 and under >= 0
        assert over + under == pytest.approx(t.error("l1"), abs=1e-12)
        s = calibkit.signed_ece(y, p, num_bins=10, class_conditional=cc)
        assert s == pytest.approx(over - under, abs=1e-15)
    # pooled, top-label: signed ECE = mean confidence - accuracy (weights n_b/n telescope)
    conf = p.max(axis=1)
    acc = (p.argmax(axis=1) == y).mean()
    assert calibkit.signed_ece(y, p, num_bins=10) == pytest.approx(conf.mean() - acc, abs=1e-12)


def test_signed_ece_sign():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.5, 1.0, 4000)
    over = (rng.uniform(size=4000) < p - 0.1).astype(int)
    under = (rng.uniform(size=4000) < np.minimum(p + 0.05, 1)).astype(int)
    # binary 1-D probs: the top label is the larger of p and 1 - p, here p (class 1)
    assert calibkit.signed_ece(over, p) > 0.05
    assert calibkit.signed_ece(under, p) < -0.02


# --- num_bins="auto" ---------------------------------------------------------------------

def test_auto_bins_rule_and_warning():
    from calibkit.binned.auto_bins import auto_num_bins

    y, p = _data(6, n=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewSamplesWarning)
        v = calibkit.ece(y, p, num_bins="auto")
    assert v == pytest.approx(calibkit.ece(y, p, num_bins=auto_num_bins(1000)), abs=1e-12)
    assert calibkit.calibration_bins(y, p, num_bins="auto").counts.shape == (1, 11)
    with pytest.warns(FewSamplesWarning, match="predictions on average"):
        calibkit.ece(y[:60], p[:60], num_bins="auto")
    with pytest.raises(InvalidParameterError):
        calibkit.ece(y, p, num_bins="many")
    assert issubclass(FewSamplesWarning, UserWarning)


def test_evaluate_takes_auto():
    y, p = _data(8, n=1000)
    ev = calibkit.evaluate(y, p, space=["ECE", "ACE"], num_bins="auto")
    assert ev.num_bins == (10,)
