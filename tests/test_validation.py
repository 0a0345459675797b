"""Every bad-input case of the core API gets a specific exception naming the problem and the fix."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.errors import (
    CalibkitError,
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
Y = np.array([0, 1, 2])

FUNCS = [calibkit.ece, calibkit.sce, calibkit.ace, calibkit.tace, calibkit.rmsce, calibkit.cce,
         calibkit.mce, calibkit.gce]


@pytest.mark.parametrize("f", FUNCS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_probability(f, bad):
    p = P.copy()
    p[1, 2] = bad
    with pytest.raises(InvalidProbabilitiesError, match=r"probs\[1, 2\].*finite"):
        f(Y, p)


@pytest.mark.parametrize("f", FUNCS)
def test_logits_are_pointed_to_softmax(f):
    logits = np.array([[2.0, -1.0, 0.5], [0.1, 3.0, -2.0], [0.0, 0.0, 1.0]])
    with pytest.raises(InvalidProbabilitiesError, match=r"outside \[0, 1\].*calibkit\.softmax"):
        f(Y, logits)


def test_small_excursions_within_tolerance_are_accepted():
    p = np.array([[1.00005, 0.0, -0.00005], [0.5, 0.5, 0.0]])
    assert 0.0 <= calibkit.ece([0, 1], p) <= 1.0


def test_excursion_beyond_tolerance_is_refused():
    p = np.array([[1.001, 0.0, -0.001], [0.5, 0.5, 0.0]])
    with pytest.raises(InvalidProbabilitiesError, match=r"probs\[0, 0\] is 1.001"):
        calibkit.ece([0, 1], p)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("max_prob", [True, False])
def test_rows_not_summing_to_one(binning, max_prob):
    p = P.copy()
    p[2] = [0.3, 0.3, 0.3]
    with pytest.raises(InvalidProbabilitiesError, match=r"row 2 of probs sums to 0.9.*softmax"):
        calibkit.gce(Y, p, binning=binning, max_prob=max_prob)


def test_row_sum_tolerance_is_documented_value():
    p = P.copy()
    p[0] = [0.7, 0.2, 0.1 + 0.0009]  # within 1e-3
    calibkit.ece(Y, p)
    p[0] = [0.7, 0.2, 0.1 + 0.002]
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.ece(Y, p)
    assert calibkit._validate.ROW_SUM_TOL == 1e-3
    assert calibkit._validate.RANGE_TOL == 1e-4


def test_first_bad_row_is_named_even_in_large_threaded_input():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(10), size=200_000)
    p[150_001, 3] = np.nan
    p[170_000, 3] = 5.0
    y = rng.integers(0, 10, size=200_000)
    for f in (calibkit.ece, calibkit.sce, calibkit.ace):
        with pytest.raises(InvalidProbabilitiesError, match=r"probs\[150001, 3\]"):
            f(y, p)


def test_errors_in_a_short_input_split_across_threads():
    # 10k x 10 is mapped in chunks by the calling thread and the pool: the first bad row (in
    # row order) is named, and a bad label anywhere takes precedence over bad values.
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(10), size=10_000)
    y = rng.integers(0, 10, size=10_000)
    p[9000, 3] = np.nan
    p[6000, 2] = 2.0
    for f in (calibkit.ece, calibkit.cce, calibkit.mce):
        with pytest.raises(InvalidProbabilitiesError, match=r"probs\[6000, 2\] is 2"):
            f(y, p)
        bad_y = y.copy()
        bad_y[8000] = 12
        with pytest.raises(InvalidLabelsError, match=r"labels\[8000\] is 12"):
            f(bad_y, p)


@pytest.mark.parametrize("ndim_shape", [(2, 3, 2), ()])
def test_wrong_probs_ndim(ndim_shape):
    with pytest.raises(ShapeMismatchError, match="probs must be 2-D"):
        calibkit.ece([0], np.full(ndim_shape, 0.5))


def test_labels_2d_non_binary_matrix_is_refused_as_multilabel():
    with pytest.raises(ValueError):
        calibkit.ece(np.array([[0, 2, 1]] * 3), P)


def test_length_mismatch():
    with pytest.raises(ShapeMismatchError, match="labels has 2 entries but probs has 3 rows"):
        calibkit.ece([0, 1], P)


def test_empty_input():
    with pytest.raises(ShapeMismatchError, match="empty"):
        calibkit.ece(np.zeros(0, int), np.zeros((0, 3)))


def test_zero_columns():
    with pytest.raises(ShapeMismatchError, match="0 columns"):
        calibkit.ece(np.zeros(2, int), np.zeros((2, 0)))


@pytest.mark.parametrize("labels", [[0, 1, 3], [0, -1, 2], [0, 1, 2**40]])
def test_labels_out_of_range(labels):
    with pytest.raises(InvalidLabelsError, match=r"labels\[\d\] is -?\d+, outside \[0, 3\)"):
        calibkit.ece(labels, P)


def test_non_integer_float_labels():
    with pytest.raises(InvalidLabelsError, match=r"labels\[1\] is 0.5, not an integer"):
        calibkit.ece([0.0, 0.5, 2.0], P)


def test_integer_valued_float_labels_are_accepted():
    assert calibkit.ece([0.0, 1.0, 2.0], P) == calibkit.ece([0, 1, 2], P)


def test_nan_labels():
    with pytest.raises(InvalidLabelsError, match="NaN"):
        calibkit.ece([0.0, np.nan, 2.0], P)


@pytest.mark.parametrize("labels", [["a", "b", "c"], [None, 1, 2]])
def test_non_numeric_labels(labels):
    with pytest.raises(InputTypeError, match="labels must hold integers"):
        calibkit.ece(np.array(labels), P)


def test_string_probs():
    with pytest.raises(InputTypeError, match="probs"):
        calibkit.ece(Y, "0.5")
    with pytest.raises(InputTypeError, match="real numbers"):
        calibkit.ece(Y, np.array([["a", "b", "c"]] * 3))


def test_complex_probs():
    with pytest.raises(InputTypeError, match="real numbers"):
        calibkit.ece(Y, P.astype(complex))


@pytest.mark.parametrize("num_bins", [0, -3])
def test_num_bins_below_one(num_bins):
    with pytest.raises(InvalidParameterError, match="num_bins must be a positive integer"):
        calibkit.ece(Y, P, num_bins=num_bins)


def test_num_bins_beyond_limit_is_refused_not_allocated():
    with pytest.raises(InvalidParameterError, match=r"num_bins must be at most 1000000"):
        calibkit.ece(Y, P, num_bins=10**9)
    from calibkit import _native

    with pytest.raises(InvalidParameterError, match="no larger than 1000000"):
        _native.gce(Y, P, "even", True, False, 0.0, "l1", 10**9)


def test_table_too_large_for_memory_is_refused():
    # 3000 classes x 100001 bins would need 300M cells: a clear error, not an allocation abort.
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3000), size=20)
    y = rng.integers(0, 3000, size=20)
    with pytest.raises(InvalidParameterError, match=r"table of \d+ cells .*use fewer bins"):
        calibkit.sce(y, p, num_bins=100_000)
    with pytest.raises(InvalidParameterError, match="use fewer bins"):
        calibkit.evaluate(y, p, space=["SCE"], num_bins=(100_000,))
    # Pooled metrics need one group only: the same bin count is fine there.
    assert 0.0 <= calibkit.ece(y, p, num_bins=100_000) <= 1.0


@pytest.mark.parametrize("num_bins", [2.5, "10", True, None])
def test_num_bins_not_an_integer(num_bins):
    with pytest.raises(InvalidParameterError, match="num_bins must be a positive integer"):
        calibkit.gce(Y, P, num_bins=num_bins)


@pytest.mark.parametrize("threshold", [-0.1, 1.0, 1.5, float("nan")])
def test_threshold_outside_unit_interval(threshold):
    with pytest.raises(InvalidParameterError, match=r"threshold must be in \[0, 1\)"):
        calibkit.gce(Y, P, threshold=threshold)


def test_threshold_not_a_number():
    with pytest.raises(InvalidParameterError, match="threshold must be a number"):
        calibkit.gce(Y, P, threshold="0.1")


def test_unknown_binning():
    with pytest.raises(InvalidParameterError, match=r"binning must be one of \('even', 'adaptive'\), got 'equal'"):
        calibkit.gce(Y, P, binning="equal")


def test_unknown_norm():
    with pytest.raises(InvalidParameterError, match=r"norm must be one of \('l1', 'l2', 'max'\), got 'l3'"):
        calibkit.gce(Y, P, norm="l3")


def test_errors_subclass_builtin_exceptions():
    assert issubclass(InvalidProbabilitiesError, ValueError)
    assert issubclass(InvalidLabelsError, ValueError)
    assert issubclass(ShapeMismatchError, ValueError)
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InputTypeError, TypeError)
    for cls in (InvalidProbabilitiesError, InvalidLabelsError, ShapeMismatchError,
                InvalidParameterError, InputTypeError):
        assert issubclass(cls, CalibkitError)


def test_native_module_raises_the_same_classes():
    from calibkit import _native

    with pytest.raises(InvalidParameterError, match="binning"):
        _native.gce(Y, P, "weird", True, False, 0.0, "l1", 15)
    with pytest.raises(InvalidParameterError, match="norm"):
        _native.gce(Y, P, "even", True, False, 0.0, "l3", 15)
    with pytest.raises(ShapeMismatchError, match="labels has 2 entries"):
        _native.gce(np.array([0, 1]), P, "even", True, False, 0.0, "l1", 15)
    with pytest.raises(TypeError, match="float32 or float64"):
        _native.gce(Y, P.astype(np.float16), "even", True, False, 0.0, "l1", 15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_first_bad_row_is_named_when_classes_are_read_in_blocks(dtype):
    # ACE reads blocks of classes (here 3 blocks of 200) and checks rows as it goes: the error
    # still names the first bad row, whichever block holds the bad value, as ECE's row pass does.
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(600), size=3000)
    y = rng.integers(0, 600, size=3000)
    nan_late_block = p.copy()
    nan_late_block[50, 550] = np.nan
    nan_late_block[100, 0] += 0.01  # a later row that does not sum to 1
    sum_first = p.copy()
    sum_first[50, 0] += 0.01
    sum_first[100, 550] = np.nan
    for f in (calibkit.ace, calibkit.ece):
        with pytest.raises(InvalidProbabilitiesError, match=r"probs\[50, 550\].*finite"):
            f(y, nan_late_block.astype(dtype))
        with pytest.raises(InvalidProbabilitiesError, match=r"row 50 of probs sums to 1.01"):
            f(y, sum_first.astype(dtype))
