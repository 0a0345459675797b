"""Rank correlations, rank-order tables, bin sensitivity and property grouping (calibkit.analysis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from calibkit.analysis import (
    Table,
    bin_sensitivity,
    bin_sensitivity_table,
    group_by_property,
    kendall_tau,
    metric_rank_correlations,
    property_groups,
    rank_correlation,
    rank_methods,
    rank_order,
    rank_order_table,
    spearman_rho,
)
from calibkit.space import metric_space

# Hand-made orderings: (x, y) pairs without and with ties.
ORDERINGS = [
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]),
    ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]),
    ([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 6, 5, 8, 7]),
    ([0.31, 0.02, 0.4, 0.11, 0.25, 0.07, 0.5, 0.09], [3, 8, 1, 2, 7, 5, 4, 6]),
    ([1, 2, 3], [1, 3, 2]),
    ([0.1, 0.2, 0.2, 0.4, 0.5], [1, 3, 2, 5, 4]),  # tie in x
    ([1, 1, 2, 2, 3, 3], [3, 3, 2, 1, 1, 2]),  # ties in both
]


@pytest.mark.parametrize("x,y", ORDERINGS)
def test_spearman_matches_scipy(x, y):
    assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize("x,y", ORDERINGS)
def test_kendall_matches_scipy(x, y):
    assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_spearman_standard_formula_by_hand():
    # d = (0, -1, 1, 0, 0) -> 1 - 6 * 2 / (5 * 24) = 0.9
    assert spearman_rho([1, 2, 3, 4, 5], [1, 3, 2, 4, 5]) == pytest.approx(0.9, abs=1e-15)


def test_paper_formula_differs_from_standard_and_is_not_bounded():
    # full reversal of 4 items: d = (-3, -1, 1, 3); sum d^2 = 20 -> -1; sum |d| = 8 -> 0.2
    x, y = [1, 2, 3, 4], [4, 3, 2, 1]
    assert spearman_rho(x, y) == pytest.approx(-1.0, abs=1e-15)
    assert spearman_rho(x, y, formula="paper") == pytest.approx(1 - 6 * 8 / (4 * 15), abs=1e-15)
    # where every |d| <= 1 the two agree
    assert spearman_rho([1, 2, 3, 4], [2, 1, 4, 3], formula="paper") == pytest.approx(
        spearman_rho([1, 2, 3, 4], [2, 1, 4, 3]), abs=1e-15
    )


def test_rank_correlation_is_invariant_to_monotone_transforms():
    rng = np.random.default_rng(3)
    x, y = rng.random(8), rng.random(8)
    for method in ("spearman", "kendall"):
        assert rank_correlation(x, y, method) == pytest.approx(
            rank_correlation(np.exp(5 * x), y ** 3, method), abs=1e-12
        )


def test_constant_ordering_is_nan():
    assert np.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))
    assert np.isnan(kendall_tau([1, 2, 3], [2, 2, 2]))


@pytest.mark.parametrize(
    "x,y,match",
    [
        ([1, 2, 3], [1, 2], "same items"),
        ([1], [1], "at least 2"),
        ([1, np.nan, 3], [1, 2, 3], "NaN"),
        ([[1, 2], [3, 4]], [[1, 2], [3, 4]], "1-D"),
    ],
)
def test_correlation_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        spearman_rho(x, y)
    with pytest.raises(ValueError, match=match):
        kendall_tau(x, y)


def test_correlation_bad_method_and_formula():
    with pytest.raises(ValueError, match="method"):
        rank_correlation([1, 2], [1, 2], "pearson")
    with pytest.raises(ValueError, match="formula"):
        spearman_rho([1, 2], [1, 2], formula="abs")


def test_rank_methods_lower_error_is_better():
    assert rank_methods([0.3, 0.1, 0.2, 0.05]).tolist() == [4, 2, 3, 1]
    assert rank_order([0.3, 0.1, 0.2, 0.05]).tolist() == [3, 1, 2, 0]
    # ties keep the input order
    assert rank_order([0.2, 0.1, 0.2]).tolist() == [1, 0, 2]
    with pytest.raises(ValueError, match="NaN"):
        rank_order([0.1, np.nan])


def test_rank_order_table_orientation_on_known_orders():
    # Build errors from known rankings: metric j ranks the methods in order perms[j].
    perms = [[2, 0, 3, 1], [0, 1, 2, 3], [3, 2, 1, 0]]
    n_methods = 4
    values = np.zeros((n_methods, len(perms)))
    for j, perm in enumerate(perms):
        for rank, method in enumerate(perm):
            values[method, j] = 0.01 * (rank + 1) + 0.1 * j  # best method has the lowest error
    t = rank_order_table(values, method_labels=[0, 1, 2, 3], metric_labels=["a", "b", "c"])
    assert t.index == ["Ranked First", "Ranked Second", "Ranked Third", "Ranked Fourth"]
    assert t.columns == ["a", "b", "c"]
    for j, perm in enumerate(perms):
        assert t.column("abc"[j]) == perm
    assert t.cell("Ranked First", "a") == 2  # method 2 had the lowest error under metric a


def test_rank_order_table_labels_and_shape_errors():
    t = rank_order_table([[0.2], [0.1]], method_labels=["TS", "HB"])
    assert t.column("0") == ["HB", "TS"]
    with pytest.raises(ValueError, match="labels"):
        rank_order_table([[0.2], [0.1]], method_labels=["only one"])
    with pytest.raises(ValueError, match="2-D"):
        rank_order_table([0.1, 0.2])


def test_metric_rank_correlations_matches_scipy_pairwise():
    rng = np.random.default_rng(0)
    v = rng.random((8, 8))
    v[:, 5] = v[:, 0] * 2  # same ordering as metric 0
    v[:, 6] = np.round(v[:, 1] * 3)  # ties
    v[[0, 1, 2], 7] = 0.5  # ties
    for method, ref, own in (("spearman", stats.spearmanr, spearman_rho),
                             ("kendall", stats.kendalltau, kendall_tau)):
        c = metric_rank_correlations(v, method)
        assert c.shape == (8, 8)
        assert np.allclose(c, c.T)
        assert c[0, 5] == pytest.approx(1.0)
        for i, j in itertools.combinations(range(8), 2):
            assert c[i, j] == pytest.approx(ref(v[:, i], v[:, j]).statistic, abs=1e-12)
            assert c[i, j] == pytest.approx(own(v[:, i], v[:, j]), abs=1e-12)


def test_metric_rank_correlations_constant_column_and_bad_input():
    v = np.array([[0.1, 0.3, 0.2], [0.2, 0.3, 0.1], [0.3, 0.3, 0.3]])
    for method in ("spearman", "kendall"):
        c = metric_rank_correlations(v, method)
        assert np.isnan(c[1]).all() and np.isnan(c[:, 1]).all()
        assert c[0, 0] == 1.0
    with pytest.raises(ValueError, match="finite"):
        metric_rank_correlations([[0.1, np.nan], [0.2, 0.3]])
    with pytest.raises(ValueError, match="at least 2 items"):
        metric_rank_correlations([[0.1, 0.2]])
    with pytest.raises(ValueError, match="method"):
        metric_rank_correlations([[0.1, 0.2], [0.3, 0.4]], "pearson")


def test_bin_sensitivity_against_explicit_pairs():
    rng = np.random.default_rng(1)
    v = rng.random((8, 3, 5))
    v[:, 1, :] = v[:, 1, :1]  # metric 1: the same ordering at every bin count -> 1
    v[:, 2, 1::2] = -v[:, 2, 0:1]  # metric 2: alternately reversed
    v[:, 2, 0::2] = v[:, 2, 0:1]
    v[:4, 0, 3] = 0.25  # ties in one bin count
    rho = bin_sensitivity(v)
    tau = bin_sensitivity(v, "kendall")
    pairs = list(itertools.combinations(range(5), 2))
    for j in range(3):
        exp_r = np.mean([stats.spearmanr(v[:, j, a], v[:, j, b]).statistic for a, b in pairs])
        exp_t = np.mean([stats.kendalltau(v[:, j, a], v[:, j, b]).statistic for a, b in pairs])
        assert rho[j] == pytest.approx(exp_r, abs=1e-12)
        assert tau[j] == pytest.approx(exp_t, abs=1e-12)
    assert rho[1] == pytest.approx(1.0)
    # 4 same-parity pairs (rho 1) and 6 opposite pairs (rho -1) -> -0.2
    assert rho[2] == pytest.approx((4 - 6) / 10)


def test_bin_sensitivity_skips_undefined_pairs_and_checks_shape():
    v = np.zeros((3, 1, 3))
    v[:, 0, 1] = [1, 2, 3]
    v[:, 0, 2] = [1, 2, 3]
    # bin 0 is constant (undefined correlations): only the pair (1, 2) counts
    assert bin_sensitivity(v)[0] == pytest.approx(1.0)
    assert np.isnan(bin_sensitivity(np.zeros((3, 1, 2)))[0])
    with pytest.raises(ValueError, match="3-D"):
        bin_sensitivity(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="at least 2 bin counts"):
        bin_sensitivity(np.zeros((3, 2, 1)))


def test_property_groups_of_the_paper_space():
    space = metric_space()
    groups = property_groups(space)
    assert [g.label for g in groups] == [
        "Even binning scheme", "Adaptive binning scheme", "Max probs True", "Max probs False",
        "Class conditional", "Class unconditional", "Thresholded (0.01)", "Unthresholded",
        "L1 norm", "L2 norm",
    ]
    for g in groups:
        assert len(g.members) == 16
        for i in g.members:
            assert getattr(space[i], g.prop) == g.value
    assert property_groups(space)[0].members == tuple(range(16))


def test_group_by_property_means():
    space = metric_space()
    x = np.arange(32, dtype=float)
    x[3] = np.nan  # left out of its groups' means
    t = group_by_property({"v": x, "w": 2 * x}, space)
    assert t.shape == (10, 2)
    for g in property_groups(space):
        sel = x[list(g.members)]
        assert t.cell(g.label, "v") == pytest.approx(np.nanmean(sel))
        assert t.cell(g.label, "w") == pytest.approx(2 * np.nanmean(sel))
    with pytest.raises(ValueError, match="one number per metric"):
        group_by_property(np.arange(5.0), space)


def test_bin_sensitivity_table_groups_the_per_metric_values():
    space = metric_space()
    rng = np.random.default_rng(5)
    v = rng.random((8, 32, 4))
    t = bin_sensitivity_table(v, space)
    per = bin_sensitivity(v)
    assert t.columns == ["Spearman", "Kendall"]
    assert t.cell("Adaptive binning scheme", "Spearman") == pytest.approx(per[16:].mean())
    assert t.cell("Max probs True", "Spearman") == pytest.approx(
        per[[i for i in range(32) if not i & 8]].mean()
    )
    assert "squared" in t.note


def test_table_renderers_roundtrip(tmp_path):
    t = Table("demo", "Demo table", ["a", "b"], ["x", "y"], [[0.5, "s"], [float("nan"), 3]],
              index_name="row", note="a note")
    md = t.to_markdown()
    assert md.splitlines()[0] == "| row | x | y |"
    assert "| b | n/a | 3 |" in md
    text = t.to_csv(tmp_path / "demo.csv")
    assert (tmp_path / "demo.csv").read_text() == text
    assert text.splitlines()[1] == "a,0.5,s"
    assert text.splitlines()[2] == "b,,3"
    assert "<caption>Demo table</caption>" in t.to_html()
    d = t.to_dict()
    assert d["data"][1][0] is None and d["data"][0][0] == 0.5
    df = t.to_pandas()
    assert df.loc["a", "x"] == 0.5
    assert "Demo table" in repr(t)
    assert t.to_text().splitlines()[0].split() == ["row", "x", "y"]
    with pytest.raises(ValueError, match="columns"):
        Table("bad", "Bad", ["a"], ["x", "y"], [[1]])
    with pytest.raises(ValueError, match="rows"):
        Table("bad", "Bad", ["a", "b"], ["x"], [[1]])
