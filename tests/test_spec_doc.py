"""docs/spec.md and the code agree: its worked example, index formula and named metrics."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import requires
from spec_doc import SPEC_PATH, num_bins, spec_text, table_32, worked_example

import calibkit
from calibkit import reference
from calibkit.space import MetricSpec, metric_space

TOL = 1e-12


def test_document_holds_the_example_and_all_32_rows():
    labels, probs = worked_example()
    assert probs.shape == (10, 3) and labels.shape == (10,)
    assert [i for i, _, _ in table_32()] == list(range(32))
    assert num_bins() == 3


def test_index_columns_follow_the_index_formula():
    # the five property columns of each row must be the metric at that paper index
    for i, kw, _ in table_32():
        formula = (16 * (kw["binning"] == "adaptive") + 8 * (not kw["max_prob"])
                   + 4 * (not kw["class_conditional"]) + 2 * (kw["threshold"] == 0.01)
                   + (kw["norm"] == "l2"))
        assert formula == i
        assert MetricSpec(**kw) == MetricSpec.from_index(i) == metric_space()[i]


def test_evaluate_equals_the_documented_values():
    labels, probs = worked_example()
    rows = table_32()
    ev = calibkit.evaluate(labels, probs, space=[MetricSpec(**kw) for _, kw, _ in rows],
                           num_bins=num_bins())
    np.testing.assert_allclose(ev.values[:, 0], [v for _, _, v in rows], rtol=0, atol=TOL)


@pytest.mark.parametrize("impl", [calibkit, reference], ids=["calibkit", "reference"])
def test_single_metrics_equal_the_documented_values(impl):
    labels, probs = worked_example()
    for i, kw, want in table_32():
        got = impl.gce(labels, probs, **kw, num_bins=num_bins())
        assert abs(got - want) <= TOL, (i, got, want)


def test_named_values_in_the_text():
    labels, probs = worked_example()
    b = num_bins()
    text = spec_text()
    m = re.search(r"The named ones, for reference: (.*?)\n\n", text, re.S)
    assert m
    named = dict(re.findall(r"\b([A-Z]+) (?:\(outside the 32\) )?([0-9.]+\d)", m.group(1)))
    assert set(named) == {"CCE", "ECE", "SCE", "RMSCE", "ACE", "TACE", "MCE"}
    fns = {"CCE": calibkit.cce, "ECE": calibkit.ece, "SCE": calibkit.sce, "RMSCE": calibkit.rmsce,
           "ACE": calibkit.ace, "TACE": calibkit.tace, "MCE": calibkit.mce}
    for name, value in named.items():
        assert abs(fns[name](labels, probs, num_bins=b) - float(value)) <= TOL, name


def test_documented_tolerances_and_limits_are_the_kernels():
    from calibkit import _native

    text = spec_text()
    for name in ("RANGE_TOL", "ROW_SUM_TOL"):
        m = re.search(rf"`{name}` = ([0-9.e-]+)", text)
        assert m and float(m.group(1)) == getattr(_native, name), name
    m = re.search(r"an integer in \[1, ([0-9 ]+)\]", text)
    assert m and int(m.group(1).replace(" ", "")) == _native.MAX_BINS
    assert _native.MAX_TABLE_CELLS == 2**25 and "2^25" in text


def test_no_file_cites_the_old_spec_name():
    root = SPEC_PATH.parent.parent
    stale = []
    for path in [*root.glob("python/**/*.py"), *root.glob("rust/**/*.rs"),
                 *root.glob("tests/*.py"), root / "README.md"]:
        if path.name == "test_spec_doc.py":
            continue
        if "SPEC.md" in path.read_text(encoding="utf-8"):
            stale.append(str(path.relative_to(root)))
    assert not stale, f"these files still cite SPEC.md instead of docs/spec.md: {stale}"


def test_scikit_learn_bins_are_right_closed_as_documented():
    # docs/spec.md: calibration_curve closes bins on the right, calibkit on the left
    calibration = requires("sklearn.calibration")
    scores = np.array([0.25, 0.5, 0.75])
    y = np.array([0, 1, 1])
    prob_true, prob_pred = calibration.calibration_curve(y, scores, n_bins=2)
    assert prob_pred[0] == pytest.approx(0.375)  # 0.5 joined the lower bin [0, 0.5]
    t = calibkit.calibration_bins(y, scores, max_prob=False, class_conditional=True, num_bins=2)
    assert t.counts[1].tolist() == [1, 2, 0]  # 0.5 opens the upper bin [0.5, 1) here
    assert t.mean_confidence[1, 0] == pytest.approx(0.25)
