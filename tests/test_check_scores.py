"""One validation layer: the callers that run no metric kernel (recalibrators, diagnostics,
multilabel input, the file reader) check values with calibkit._validate, whose probability
checks are the metric kernels' own pass, so they refuse exactly what the metrics refuse."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import calibkit
from calibkit import recalibration as R
from calibkit._validate import as_labels, check_scores
from calibkit.binned.diagnostics import ignored_important_fraction
from calibkit.binned.multilabel import validate_multilabel
from calibkit.errors import InvalidLabelsError, InvalidParameterError, InvalidProbabilitiesError

PACKAGE = Path(calibkit.__file__).resolve().parent

#: Rows at the edges of the range and row-sum tolerances (1e-4 and 1e-3, both inclusive).
EDGE_ROWS = [
    [0.6, 0.4, 0.0],
    [1.00005, 0.0, -0.00005],      # inside the range tolerance
    [1.00015, 0.0, -0.00015],      # outside it
    [0.4995, 0.5, 0.0],            # |sum - 1| = 5e-4
    [0.499, 0.5, 0.0],             # |sum - 1| just over 1e-3 in float64
    [0.6, 0.3, 0.101005],          # 1.001005: within numpy's allclose, outside the rule
    [0.7, 0.2, 0.1009],            # within
]


def _metric_accepts(row) -> bool:
    try:
        calibkit.ece([0], np.array([row]))
        return True
    except InvalidProbabilitiesError:
        return False


@pytest.mark.parametrize("row", EDGE_ROWS)
def test_check_scores_is_the_metric_rule(row):
    p = np.array([row])
    ok = _metric_accepts(row)
    if ok:
        check_scores(p)
        with pytest.raises(InvalidParameterError, match="X looks like probabilities"):
            check_scores(p, "logits", name="X")  # probabilities declared as logits
    else:
        with pytest.raises(InvalidProbabilitiesError) as info:
            check_scores(p, name="X", fix="do this instead")
        msg = str(info.value)
        assert msg.startswith(("X[0, ", "row 0 of X ")) and msg.endswith("; do this instead")
        check_scores(p, "logits")  # not probabilities: fine as logits
    # the recalibrators with input="probs" accept exactly these rows too
    rng = np.random.default_rng(0)
    est = R.TemperatureScaling(input="probs").fit(
        calibkit.softmax(rng.normal(size=(200, 3))), rng.integers(0, 3, 200))
    if ok:
        est.predict_proba(p)
    else:
        with pytest.raises(InvalidProbabilitiesError, match=r"X was declared as probabilities"):
            est.predict_proba(p)


def test_rows_need_not_sum_where_they_need_not():
    """Diagnostics and multilabel input: the range rule without row sums, the same tolerance."""
    inside = np.array([[1.00005, 0.3, -0.00005]])
    outside = np.array([[1.00015, 0.3, 0.2]])
    assert 0.0 <= ignored_important_fraction(inside) <= 1.0
    validate_multilabel(np.array([[1, 0, 0]]), inside)
    with pytest.raises(InvalidProbabilitiesError, match=r"probs\[0, 0\] is 1.00015, outside \[0, 1\]"):
        ignored_important_fraction(outside)
    with pytest.raises(InvalidProbabilitiesError, match=r"outside \[0, 1\].*apply a sigmoid"):
        validate_multilabel(np.array([[1, 0, 0]]), outside)


def test_non_finite_values_name_count_and_place():
    z = np.zeros((4, 3))
    z[2, 1], z[3, 0] = np.nan, -np.inf
    for kind in ("probs", "logits"):
        with pytest.raises(InvalidProbabilitiesError,
                           match=r"X contains 2 NaN/inf value\(s\) \(first: NaN at row 2, column 1\)"):
            check_scores(z, kind, name="X")
    check_scores(np.array([5.0, -3.0]), "logits")  # a binary logit column: anything finite


def test_as_labels_range_for_callers_without_a_kernel():
    assert as_labels([0, 2, 1], num_classes=3).tolist() == [0, 2, 1]
    with pytest.raises(InvalidLabelsError, match=r"label 3 at row 1 is out of range: y must hold "
                                                 r"class indices in \[0, 3\)"):
        as_labels([0, 3, 1], "y", num_classes=3)
    with pytest.raises(InvalidLabelsError, match=r"y\[1\] is 0.5, not an integer: labels must be "
                                                 r"class indices$"):
        as_labels([0, 0.5], "y")  # the "labels come first" hint is for the metric functions


def test_no_module_restates_the_value_rules():
    """Outside _validate, _params and the oracle (reference.py), no module compares values with
    the tolerances or sums rows to check them (the kernels do, through _validate)."""
    allowed = {"_validate.py", "_params.py", "reference.py"}
    # reduce_bins bounds a *table's* sums by the range tolerance (scores up to 1 + RANGE_TOL),
    # not input values
    table_checks = {("bins.py", "RANGE_TOL")}
    compared = 0
    for path in PACKAGE.rglob("*.py"):
        if path.name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                found = {t for t in names & {"ROW_SUM_TOL", "RANGE_TOL"}
                         if (path.name, t) not in table_checks}
                compared += bool(names & {"ROW_SUM_TOL", "RANGE_TOL"})
                assert not found, (path, node.lineno)
            is_allclose = isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "allclose"
            assert not is_allclose, (path, node.lineno)
    assert compared >= 1  # the scan does see a comparison with a tolerance (reduce_bins')
