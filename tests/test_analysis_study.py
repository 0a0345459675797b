"""The whole study in quick mode: every table and figure, and its numbers against direct gce calls."""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pytest
from scipy import stats

import calibkit
from calibkit.analysis import (
    ModelSplits,
    Predictions,
    StudyConfig,
    evaluate_methods,
    run_study,
    write_report,
)
from calibkit.space import metric_space

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    result = run_study(config=StudyConfig.quick_config(random_state=0))
    files = write_report(result, out)
    return result, files, out


def test_quick_study_shape(study):
    result, _, _ = study
    from calibkit.recalibration import PAPER_METHODS

    cfg = result.config
    assert cfg.quick and cfg.label_noise is True
    assert [m.name for m in result.models] == ["softmax-regression"]
    m = result.models[0]
    assert m.methods == [name for name, _ in PAPER_METHODS] and len(m.methods) == 8
    assert m.num_bins == tuple(sorted(set(cfg.num_bins) | {15}))
    assert m.values.shape == (8, 32, len(m.num_bins))
    assert m.uncalibrated.shape == (32, len(m.num_bins))
    assert np.all(np.isfinite(m.values)) and np.all((m.values >= 0) & (m.values <= 1))
    assert result.label_noise.levels.size == cfg.noise_levels
    assert result.version == calibkit.__version__


def test_values_equal_direct_gce(study):
    result, _, _ = study
    m = result.models[0]
    space = metric_space()
    rng = np.random.default_rng(0)
    picks = [(int(a), int(j), int(b)) for a, j, b in zip(rng.integers(0, 8, 24), rng.integers(0, 32, 24),
                                                       rng.integers(0, len(m.num_bins), 24))]
    picks += [(3, 4, m.num_bins.index(15)), (0, 24, 0), (7, 31, len(m.num_bins) - 1)]
    for a, j, b in picks:
        p = m.probs[m.methods[a]]
        direct = calibkit.gce(m.labels, p, **space[j].kwargs(), num_bins=m.num_bins[b])
        assert m.values[a, j, b] == pytest.approx(direct, abs=1e-12), (m.methods[a], j, m.num_bins[b])
    for j in (0, 4, 8, 21, 24, 26):
        assert m.uncalibrated[j, 0] == pytest.approx(
            calibkit.gce(m.labels, calibkit.softmax(m.logits), **space[j].kwargs(), num_bins=m.num_bins[0]),
            abs=1e-12)


def test_rank_order_and_correlations_follow_the_values(study):
    result, _, _ = study
    m = result.models[0]
    b = m.num_bins.index(15)
    t = m.rank_order()
    for j, col in enumerate(t.columns):
        order = t.column(col)
        errs = m.values[:, j, b]
        assert sorted(order) == list(range(8))
        assert np.all(np.diff(errs[order]) >= 0)  # first = lowest error
    assert t.cell("Ranked First", "4") == int(np.argmin(m.values[:, 4, b]))
    for i, j in [(4, 24), (0, 31), (8, 21)]:
        assert m.corr_spearman[i, j] == pytest.approx(
            stats.spearmanr(m.values[:, i, b], m.values[:, j, b]).statistic, abs=1e-12, nan_ok=True)
        assert m.corr_kendall[i, j] == pytest.approx(
            stats.kendalltau(m.values[:, i, b], m.values[:, j, b]).statistic, abs=1e-12, nan_ok=True)
    sweep = [m.num_bins.index(x) for x in m.sweep_bins]
    for j in (4, 24):
        rs = [stats.spearmanr(m.values[:, j, p], m.values[:, j, q]).statistic
              for p, q in itertools.combinations(sweep, 2)]
        rs = [r for r in rs if np.isfinite(r)]
        assert m.sensitivity_spearman[j] == pytest.approx(np.mean(rs), abs=1e-12)
    bs = result.bin_sensitivity_table()
    col = "softmax-regression Spearman"
    assert bs.cell("Adaptive binning scheme", col) == pytest.approx(
        np.nanmean(m.sensitivity_spearman[16:]), abs=1e-12)


def test_temperature_and_conditionality_numbers(study):
    result, _, _ = study
    m = result.models[0]
    tr = m.temperature
    for j in (4, 8, 24):
        p = calibkit.softmax(m.logits / tr.temperatures[j])
        assert tr.test_ece[j] == pytest.approx(calibkit.ece(m.labels, p, num_bins=15), abs=1e-9)
    tt = result.temperature_table()
    assert tt.cell("Class conditional", "softmax-regression ECE") == pytest.approx(
        tr.test_ece[[i for i in range(32) if not i & 4]].mean(), abs=1e-12)
    c = m.conditionality
    for k, name in enumerate(c.probs):
        assert c.values[1, k] == pytest.approx(calibkit.cce(m.labels, c.probs[name]), abs=1e-12)


def test_every_table_and_figure_is_written(study):
    result, files, out = study
    names = [t.name for t in result.tables()]
    assert len(names) == len(set(names))
    for t in result.tables():
        assert (out / "tables" / f"{t.name}.csv").stat().st_size > 0
    expected = ["reliability_softmax-regression", "metric_correlation_softmax-regression",
                "bin_sensitivity", "temperature_curves_softmax-regression", "label_noise"]
    for name in expected:
        data = (out / "figures" / f"{name}.png").read_bytes()
        assert data[:8] == PNG and len(data) > 5000, name
    assert sorted(p.name for p in files["figures"]) == sorted(f"{n}.png" for n in expected)
    md = (out / "report.md").read_text()
    in_md = ("methods_", "rank_order_softmax-regression_15bins", "first_counts_", "bin_sensitivity",
             "temperature_by_property", "class_conditionality_", "label_noise")
    shown = [t for t in result.tables() if t.name.startswith(in_md) and "per_metric" not in t.name]
    assert len(shown) == 7
    for t in shown:
        assert t.title in md and t.to_markdown() in md, t.name
    for name in expected:
        assert f"figures/{name}.png" in md
    assert f"| calibkit version | {calibkit.__version__} |" in md
    assert "| random_state (--seed) | 0 |" in md and "quick mode | True" in md
    assert "squares d" in md or "d^2" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(expected)
    assert 'src="figures/' not in html  # self-contained
    assert "<table" in html and calibkit.__version__ in html


def test_raw_numbers_in_json_and_csv(study):
    result, files, out = study
    m = result.models[0]
    res = json.loads((out / "results.json").read_text())
    assert res["calibkit_version"] == calibkit.__version__
    assert res["settings"]["random_state"] == 0 and res["settings"]["quick"] is True
    jm = res["models"][0]
    assert np.array_equal(np.array(jm["values"]), m.values)
    assert jm["metrics"][26] == {"index": 26, "name": "TACE", "binning": "adaptive", "max_prob": False,
                                 "class_conditional": True, "threshold": 0.01, "norm": "l1"}
    assert res["label_noise"]["levels"] == result.label_noise.levels.tolist()
    with open(out / "metric_values.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 9 * 32 * len(m.num_bins)
    row = next(r for r in rows if r["method"] == m.methods[2] and r["metric_index"] == "21"
               and r["num_bins"] == "30")
    assert float(row["value"]) == m.values[2, 21, m.num_bins.index(30)]
    with open(out / "tables" / "bin_sensitivity.csv", newline="") as fh:
        bs = list(csv.reader(fh))
    assert bs[0] == ["Property", "softmax-regression Spearman", "softmax-regression Kendall"]
    assert len(bs) == 11


def test_evaluate_methods_is_reproducible():
    rng = np.random.default_rng(2)

    def split(n):
        y = rng.integers(0, 3, size=n)
        return Predictions(y, 2.5 * (np.eye(3)[y] + rng.normal(size=(n, 3))), "logits", "synthetic")

    ms = ModelSplits("tiny", split(150), split(150))
    a = evaluate_methods(ms, num_bins=(5, 10), random_state=1)
    b = evaluate_methods(ms, num_bins=(5, 10), random_state=1)
    assert a[1].shape == (8, 32, 2)
    assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])


def test_run_study_on_user_models_skips_label_noise_by_default():
    rng = np.random.default_rng(4)

    def split(n):
        y = rng.integers(0, 4, size=n)
        return Predictions(y, 3.0 * (np.eye(4)[y] + rng.normal(size=(n, 4))), "logits", "synthetic")

    val, test = split(200), split(200)
    val = Predictions(val.labels, calibkit.softmax(val.scores), "probs", "probabilities")
    ms = ModelSplits("user", val, test)  # mixed kinds: every method then works from probabilities
    r = run_study(ms, StudyConfig.quick_config(num_bins=(10, 20), temperatures=(0.5, 1.0, 2.0)))
    assert r.label_noise is None and r.config.label_noise is False
    m = r.models[0]
    assert m.name == "user" and np.all(np.isfinite(m.values))
    assert m.uncalibrated[4, 0] == pytest.approx(
        calibkit.ece(test.labels, calibkit.softmax(test.scores), num_bins=10), abs=1e-12)
    with pytest.raises(ValueError, match="empty"):
        run_study([], StudyConfig.quick_config())


@pytest.mark.parametrize("kw,match", [({"num_bins": (10,)}, "at least two distinct"),
                                      ({"num_bins": (10, 10)}, "repeats a bin count"),
                                      ({"report_bins": 0}, "report_bins"),
                                      ({"noise_levels": 0}, "noise_levels"),
                                      ({"max_noise": 1.5}, "max_noise"),
                                      ({"temperature_starts": 0}, "temperature_starts"),
                                      ({"importance_threshold": 1.0}, "importance_threshold")])
def test_study_config_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        StudyConfig(**kw)


def test_report_files_carry_intervals_and_pvalues(study):
    """report.md/html, results.json and the CSV hold each method's ECE interval and p-value,
    equal to direct confidence_interval / calibration_test calls with the study's seed."""
    result, _, out = study
    m = result.models[0]
    t = m.intervals
    assert t.name == f"intervals_{m.name}"
    assert list(t.index) == list(m.probs) and len(t.index) == 9
    md = (out / "report.md").read_text()
    assert t.title in md and t.to_markdown() in md
    assert t.title in (out / "report.html").read_text()
    jm = json.loads((out / "results.json").read_text())["models"][0]["intervals"]
    assert jm["methods"] == list(m.probs) and jm["num_bins"] == m.report_bins
    for i, name in enumerate(list(m.probs)[:3]):
        ci = calibkit.confidence_interval(m.labels, m.probs[name], "ECE", num_bins=m.report_bins,
                                          n_resamples=200, random_state=result.config.random_state)
        test = calibkit.calibration_test(m.labels, m.probs[name], "ECE", num_bins=m.report_bins,
                                         n_resamples=200, random_state=result.config.random_state)
        assert jm["value"][i] == pytest.approx(
            calibkit.ece(m.labels, m.probs[name], num_bins=m.report_bins), abs=1e-12)
        assert (jm["low"][i], jm["high"][i], jm["pvalue"][i]) == pytest.approx(
            (ci.low, ci.high, test.pvalue), abs=1e-12)
        # the estimate printed with the interval lies inside it (issue 26, item 6)
        assert jm["bias_corrected"][i] == pytest.approx(ci.estimate, abs=1e-12)
        assert jm["low"][i] <= jm["bias_corrected"][i] <= jm["high"][i]
        assert jm["low"][i] <= jm["high"][i] and 0 < jm["pvalue"][i] <= 1
    with open(out / "tables" / f"{t.name}.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 10 and rows[0][1:] == ["value", "bias-corrected", "90% low", "90% high",
                                             "p (calibrated)"]
