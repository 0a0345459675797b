"""The label-noise experiment (calibkit.analysis.label_noise)."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.analysis import label_noise_study, load_digits_split, noise_levels, noisy_labels
from calibkit.analysis.digits import train_softmax_regression


def test_noise_levels():
    assert noise_levels().tolist() == pytest.approx(np.linspace(0, 0.05, 11).tolist())
    assert noise_levels(1).tolist() == [0.0]
    assert noise_levels(5, 0.2)[-1] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="num_levels"):
        noise_levels(0)
    with pytest.raises(ValueError, match="max_level"):
        noise_levels(3, 1.5)


def test_noisy_labels_fraction_nesting_and_seed():
    y = np.repeat(np.arange(10), 100)
    assert np.array_equal(noisy_labels(y, 0.0, 10), y)
    lo = noisy_labels(y, 0.02, 10, random_state=4)
    hi = noisy_labels(y, 0.05, 10, random_state=4)
    changed_lo, changed_hi = lo != y, hi != y
    assert changed_hi.sum() <= 50  # round(0.05 * 1000) reassigned, some to their own class
    assert changed_hi.sum() > 30
    assert np.all(changed_hi[changed_lo])  # nested: lower-level noise kept at the higher level
    assert np.array_equal(noisy_labels(y, 0.05, 10, random_state=4), hi)
    assert not np.array_equal(noisy_labels(y, 0.05, 10, random_state=5), hi)
    full = noisy_labels(y, 1.0, 10, random_state=0)
    assert 0.8 < np.mean(full != y) < 0.97  # about (K - 1) / K change
    with pytest.raises(ValueError, match="level"):
        noisy_labels(y, -0.1, 10)


def test_label_noise_study_matches_direct_recomputation():
    d = load_digits_split(0)
    r = label_noise_study(d.X_fit, d.y_fit, d.X_test, d.y_test, num_levels=2, max_level=0.05,
                          num_bins=10, importance_threshold=0.1, random_state=3)
    assert r.levels.tolist() == [0.0, 0.05]
    # recompute the 0.05 level by hand
    y_noisy = noisy_labels(d.y_fit, 0.05, 10, random_state=3)
    probs = train_softmax_regression(d.X_fit, y_noisy, random_state=3).predict_proba(d.X_test)
    assert r.columns["ECE"][1] == pytest.approx(calibkit.ece(d.y_test, probs, num_bins=10), abs=1e-12)
    assert r.columns["ACE"][1] == pytest.approx(calibkit.ace(d.y_test, probs, num_bins=10), abs=1e-12)
    assert r.columns["SCE"][1] == pytest.approx(calibkit.sce(d.y_test, probs, num_bins=10), abs=1e-12)
    assert r.columns["accuracy"][1] == pytest.approx(np.mean(probs.argmax(1) == d.y_test))
    assert r.columns["mean max confidence"][1] == pytest.approx(probs.max(1).mean())
    important = probs > 0.1
    top = np.zeros_like(important)
    top[np.arange(len(probs)), probs.argmax(1)] = True
    assert r.columns["ignored important fraction"][1] == pytest.approx(
        (important & ~top).sum() / important.sum()
    )
    assert r.columns["labels changed"][0] == 0.0
    assert r.columns["labels changed"][1] == pytest.approx(np.mean(y_noisy != d.y_fit))
    t = r.table()
    assert t.shape == (2, 7) and t.index == ["0.0000", "0.0500"]
    assert r.settings["importance_threshold"] == 0.1


def test_label_noise_bad_levels():
    d = load_digits_split(0)
    with pytest.raises(ValueError, match="levels"):
        label_noise_study(d.X_fit, d.y_fit, d.X_test, d.y_test, levels=[0.0, 2.0])
