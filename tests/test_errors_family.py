"""One error family: every exception a public calibkit function raises is a CalibkitError.

Each class also keeps the built-in base a caller expects (``ValueError``, ``TypeError``,
``ImportError``, ``RuntimeError``, ``KeyError``, ...), so existing ``except`` clauses still
work. The walk below calls every public function with a few bad inputs (bad arrays, and each
keyword given a value of the wrong kind) and checks that whatever it raises is a CalibkitError;
the tests after it cover each raise that was moved into the family.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import sys
import types

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit import errors
from calibkit.errors import CalibkitError

RNG = np.random.default_rng(0)
Y = RNG.integers(0, 3, 60)
P = RNG.dirichlet(np.ones(3), size=60)
Z = 3.0 * RNG.normal(size=(60, 3))

#: Bad (labels, probs) pairs: strings, lengths that disagree, NaN, a label out of range,
#: nothing at all, a 3-D array, objects.
BAD_ARRAYS = [
    (["a", "b"], [["x", "y"], ["z", "w"]]),
    ([0, 1, 0], [[0.6, 0.4], [0.3, 0.7]]),
    ([0, 1], [[np.nan, 1.0], [0.5, 0.5]]),
    ([0, 7], [[0.6, 0.4], [0.3, 0.7]]),
    (None, None),
    ([0, 1], np.full((2, 2, 2), 0.25)),
    (object(), object()),
]

#: Wrong kinds of keyword values.
BAD_VALUES = [object(), "not a number", -3, 1.5, np.nan, [1, "x"]]


def _public_functions(module_name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(module_name)
    out = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            out.append((f"{module_name}.{name}", obj))
    return out


WALKED = (
    _public_functions("calibkit")
    + _public_functions("calibkit.diagnostics")
    + _public_functions("calibkit.compat.uncertainty_metrics")
)

#: Keywords the walk leaves alone: the top-label arrays (exercised by BAD_ARRAYS' forms) and
#: free text that any value renders.
SKIP_KEYWORDS = {"title", "name"}


def _keyword_params(fn) -> list[str]:
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in SKIP_KEYWORDS:
            continue
        out.append(p.name)
    return out


def _positional(fn) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty]


def _check(call, what: str) -> bool:
    """Run ``call``; any exception must be a CalibkitError. True when it raised."""
    try:
        call()
    except CalibkitError:
        return True
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{what} raised {type(exc).__module__}.{type(exc).__name__} (not a "
                    f"CalibkitError): {exc}")
    return False


def _valid_call(qualname: str, fn):
    """(args, kwargs) of a valid, quick call of ``fn``, or None when it takes no labels/probs."""
    params = inspect.signature(fn).parameters
    small = {"n_resamples": 5} if "n_resamples" in params else {}
    if qualname.endswith(("compat.uncertainty_metrics.gce", "general_calibration_error")):
        return (Y, P, "even", True, False, "l1"), {}
    if "labels" in params and "probs" in params:
        return (Y, P), small
    if qualname.endswith(("softmax", "log_softmax")):
        return (Z,), {}
    if qualname.endswith("ignored_important_fraction"):
        return (P,), {}
    return None


@pytest.mark.filterwarnings("ignore::calibkit.FewSamplesWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # a number as confidence= (old level)
@pytest.mark.parametrize("qualname,fn", WALKED, ids=[q for q, _ in WALKED])
def test_every_public_function_raises_only_calibkit_errors(qualname, fn):
    if not inspect.signature(fn).parameters:  # calibkit.memory_budget(): no input to refuse
        pytest.skip(f"{qualname} takes no arguments")
    raised = 0
    takes_arrays = "labels" in inspect.signature(fn).parameters
    # compat's gce takes its settings positionally, as upstream's does
    extra = (("even", True, False, "l1") if qualname.endswith(("compat.uncertainty_metrics.gce",
                                                               "general_calibration_error"))
             else ())
    if takes_arrays:
        for labels, probs in BAD_ARRAYS:
            raised += _check(lambda: fn(labels, probs, *extra), f"{qualname}(bad arrays)")
    valid = _valid_call(qualname, fn)
    if valid is not None:
        args, base = valid
        used = {p.name for p in list(inspect.signature(fn).parameters.values())[:len(args)]}
        for key in _keyword_params(fn):
            if key in used:
                continue
            for bad in BAD_VALUES:
                kw = {**base, key: bad}
                raised += _check(lambda: fn(*args, **kw), f"{qualname}({key}={bad!r})")
    elif not takes_arrays:  # other signatures: all required arguments bad, then each keyword
        names = _positional(fn)
        for bad in BAD_VALUES:
            if names:
                raised += _check(lambda: fn(*([bad] * len(names))), f"{qualname}(bad arguments)")
            else:
                for key in _keyword_params(fn):
                    raised += _check(lambda: fn(**{key: bad}), f"{qualname}({key}={bad!r})")
    assert raised, f"{qualname}: no bad input was refused (the walk proved nothing)"


def test_every_recalibrator_raises_only_calibkit_errors():
    from calibkit import recalibration as R
    from calibkit.recalibration._base import RecalibratorBase

    classes = [getattr(R, n) for n in R.__all__ if inspect.isclass(getattr(R, n))
               and issubclass(getattr(R, n), RecalibratorBase)]
    assert len(classes) >= 9
    y = RNG.integers(0, 3, 200)
    z = 3.0 * (np.eye(3)[y] + RNG.normal(size=(200, 3)))
    for cls in classes:
        kw = {"input": "logits"}
        if "random_state" in inspect.signature(cls).parameters:
            kw["random_state"] = 0
        if cls is R.PlattScaling:
            z_fit, y_fit = z[:, :2], (y > 0).astype(int)
        else:
            z_fit, y_fit = z, y
        est = cls(**kw)
        assert _check(lambda: est.predict_proba(z_fit), f"{cls.__name__} before fit")
        for X, yy in [(z_fit[:, :1].astype(str), y_fit), (z_fit, y_fit[:-1]),
                      (np.full_like(z_fit, np.nan), y_fit), (z_fit, y_fit + 10)]:
            assert _check(lambda: cls(**kw).fit(X, yy), f"{cls.__name__}.fit(bad data)")
        for key in inspect.signature(cls).parameters:
            if key == "input":
                continue
            for bad in (object(), "not a number", -3):
                _check(lambda: cls(**{**kw, key: bad}).fit(z_fit, y_fit),
                       f"{cls.__name__}({key}={bad!r}).fit")


def test_plots_raise_only_calibkit_errors():
    requires("matplotlib")
    from calibkit import plots

    for name in ("reliability_diagram", "corp_reliability_diagram", "plot_per_class_error"):
        fn = getattr(plots, name)
        for labels, probs in BAD_ARRAYS:
            assert _check(lambda: fn(labels, probs), f"plots.{name}(bad arrays)")
        for key in _keyword_params(fn):
            if key in ("labels", "probs"):
                continue
            for bad in (object(), "not a number", -3):
                _check(lambda: fn(Y, P, **{key: bad}), f"plots.{name}({key}={bad!r})")
    ev = calibkit.evaluate(Y, P, space=["ECE", "SCE"], num_bins=(5, 10))
    for bad in (object(), "not a number", -3):
        assert _check(lambda: plots.plot_metric_vs_bins(bad), "plot_metric_vs_bins(bad)")
        assert _check(lambda: plots.plot_error_vs_temperature(bad), "plot_error_vs_temperature")
        for key in ("metrics", "logy", "figsize", "path"):
            _check(lambda: plots.plot_metric_vs_bins(ev, **{key: bad}),
                   f"plot_metric_vs_bins({key}={bad!r})")


#: Analysis functions with no required argument: a bad-argument call would run a whole study.
ANALYSIS_NO_ARGUMENTS = {"run_study", "noise_levels", "load_digits_split", "default_models",
                         "load_val_test"}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_analysis_functions_raise_only_calibkit_errors():
    from calibkit import analysis as A

    for name in A.__all__:
        fn = getattr(A, name)
        if not inspect.isfunction(fn) or name in ANALYSIS_NO_ARGUMENTS:
            continue
        names = _positional(fn)
        for bad in (object(), "x", [1, "x"]):
            assert _check(lambda: fn(*([bad] * len(names))), f"analysis.{name}(bad arguments)"), \
                f"analysis.{name}({bad!r}, ...) was not refused"
    calls = {
        "noisy_labels": lambda: A.noisy_labels(Y, "x", 3),
        "noisy_labels(num_classes)": lambda: A.noisy_labels(Y, 0.1, object()),
        "noise_levels": lambda: A.noise_levels(0, 0.05),
        "StudyConfig": lambda: A.StudyConfig(num_bins=(10,)),
        "StudyConfig(random_state)": lambda: A.StudyConfig(random_state=-1),
        "load_predictions": lambda: A.load_predictions("/nonexistent/file.npz"),
        "spearman_rho": lambda: A.spearman_rho([1, 2, 3], [1, 2]),
        "named_metric_rows": lambda: A.named_metric_rows(Y, P[:, :2]),
    }
    for what, call in calls.items():
        assert _check(call, what), what


# --- one test per raise moved into the family ----------------------------------------------


def test_new_classes_keep_their_builtin_bases():
    cases = {
        errors.NotFittedError: (ValueError, AttributeError),
        errors.MissingDependencyError: (ImportError,),
        errors.SelectionError: (RuntimeError,),
        errors.UnknownNameError: (KeyError,),
        errors.MethodFailedError: (RuntimeError,),
    }
    for cls, bases in cases.items():
        assert issubclass(cls, CalibkitError) and issubclass(cls, bases), cls
        assert cls.__name__ in errors.__all__
    for name in ("NotFittedError", "MissingDependencyError", "SelectionError"):
        assert getattr(calibkit, name) is getattr(errors, name) and name in calibkit.__all__


def test_not_fitted_error_is_calibkit_and_value_and_attribute_error():
    from calibkit.recalibration import NotFittedError, TemperatureScaling

    assert NotFittedError is errors.NotFittedError
    est = TemperatureScaling(input="logits")
    for exc in (CalibkitError, ValueError, AttributeError, NotFittedError):
        with pytest.raises(exc, match="not fitted yet"):
            est.predict_proba(Z)
    assert not hasattr(est, "n_classes_")  # hasattr sees the AttributeError


def test_not_fitted_error_is_scikit_learns_once_scikit_learn_is_imported():
    """The class cannot subclass scikit-learn's without importing it with calibkit; the raised
    error is scikit-learn's too whenever the caller has imported scikit-learn."""
    code = (
        "import sys, numpy as np\n"
        "import calibkit.recalibration as R\n"
        "assert 'sklearn' not in sys.modules\n"
        "est = R.TemperatureScaling(input='logits')\n"
        "try:\n"
        "    est.predict_proba(np.zeros((2, 3)))\n"
        "except R.NotFittedError as e:\n"
        "    assert type(e) is R.NotFittedError\n"
        "assert 'sklearn' not in sys.modules\n"
        "print('ok')\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    sk = requires("sklearn.exceptions")
    from calibkit.recalibration import TemperatureScaling

    with pytest.raises(sk.NotFittedError) as info:
        TemperatureScaling(input="logits").predict_proba(Z)
    assert isinstance(info.value, errors.NotFittedError)
    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, errors.NotFittedError) and isinstance(again, sk.NotFittedError)


def test_reference_raises_invalid_parameter_error():
    from calibkit import reference

    with pytest.raises(errors.InvalidParameterError, match="binning"):
        reference.gce(Y, P, binning="quantile")
    with pytest.raises(errors.InvalidParameterError, match="norm"):
        reference.gce(Y, P, norm="l3")


def test_selection_error_from_dask_is_calibkit():
    requires("dask")
    from calibkit import dask as cdask
    from calibkit.scale import select

    assert cdask.SelectionError is select.SelectionError is errors.SelectionError
    import itertools

    import dask
    import dask.array as da

    counter = itertools.count()

    def block(n):
        return np.random.default_rng(next(counter)).dirichlet(np.ones(4), size=n)

    parts = [da.from_delayed(dask.delayed(block)(300), shape=(300, 4), dtype=np.float64)
             for _ in range(2)]
    dl = da.from_array(np.zeros(600, dtype=np.int64), chunks=300)
    with pytest.raises(CalibkitError, match="changed between passes") as info:
        cdask.gce(dl, da.concatenate(parts), binning="adaptive", max_prob=False,
                  class_conditional=True, scheduler="synchronous")
    assert isinstance(info.value, RuntimeError)


def test_evaluation_kernel_contract_is_an_internal_error(monkeypatch):
    from calibkit import _native
    from calibkit.binned import space

    monkeypatch.setattr(space, "_native", types.SimpleNamespace(
        evaluate=lambda *a: np.zeros((1, 1)), **{k: getattr(_native, k) for k in dir(_native)
                                                 if not k.startswith("_") and k != "evaluate"}))
    with pytest.raises(errors.InternalError, match="please report"):
        calibkit.evaluate(Y, P, space=["ECE", "SCE"], num_bins=(10, 20))


def test_study_model_lookup_is_an_unknown_name_error():
    from calibkit.analysis.study import StudyResult

    fake = types.SimpleNamespace(models=[types.SimpleNamespace(name="mlp")])
    with pytest.raises(errors.UnknownNameError, match="no model 'nope'") as info:
        StudyResult.model(fake, "nope")
    assert isinstance(info.value, KeyError)
    assert str(info.value).startswith("no model")  # not KeyError's quoted repr


def test_a_failing_recalibration_method_is_a_method_failed_error():
    from calibkit.analysis.data import ModelSplits, Predictions
    from calibkit.analysis.study import evaluate_methods

    pred = Predictions(Y, Z, "logits", "synthetic")
    model = ModelSplits(name="m", val=pred, test=pred, description="synthetic")

    class Broken:
        def fit(self, X, y):
            raise ZeroDivisionError("boom")

    def broken(*, input, random_state=None):
        return Broken()

    with pytest.raises(errors.MethodFailedError, match="'broken' failed on m: boom") as info:
        evaluate_methods(model, num_bins=(10, 20), methods=[("broken", broken)])
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("path,attr", [("calibkit.binned.table", "CalibrationBins.to_pandas"),
                                       ("calibkit.binned.space", "Evaluation.to_pandas"),
                                       ("calibkit.analysis.tables", "Table.to_pandas")])
def test_missing_pandas_is_a_missing_dependency_error(monkeypatch, path, attr):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real(name, *args, **kwargs)

    t = calibkit.calibration_bins(Y, P, num_bins=5)
    obj = {
        "CalibrationBins.to_pandas": t,
        "Evaluation.to_pandas": calibkit.evaluate(Y, P, space=["ECE"], num_bins=(5, 10)),
    }.get(attr)
    if obj is None:
        from calibkit.analysis.tables import Table

        obj = Table(name="t", title="t", index=["a"], columns=["x"], data=[[1.0]])
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(errors.MissingDependencyError, match="pandas") as info:
        obj.to_pandas()
    assert isinstance(info.value, ImportError)


def test_missing_matplotlib_is_a_missing_dependency_error(monkeypatch):
    import builtins

    from calibkit import plots

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(errors.MissingDependencyError, match="matplotlib") as info:
        plots.reliability_diagram(Y, P)
    assert isinstance(info.value, ImportError)


def test_missing_datasketches_and_dask_are_missing_dependency_errors(monkeypatch):
    import builtins

    from calibkit.scale import dask as cdask
    from calibkit.scale import sketch

    real = builtins.__import__

    def none_of_them(name, *args, **kwargs):
        if name.split(".")[0] in ("datasketches", "dask"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", none_of_them)
    with pytest.raises(errors.MissingDependencyError, match="datasketches"):
        sketch.load_datasketches()
    with pytest.raises(errors.MissingDependencyError, match="dask"):
        cdask._import_dask()


def test_stateful_objects_raise_only_calibkit_errors():
    from calibkit.compat.uncertainty_metrics import GeneralCalibrationError

    settings = ("even", True, False, "l1")
    calls = {
        "Accumulator(bad metric)": lambda: calibkit.Accumulator(object()),
        "Accumulator(num_bins)": lambda: calibkit.Accumulator("ECE", num_bins="x"),
        "Accumulator.update(bad arrays)": lambda: calibkit.Accumulator("ECE").update("a", "b"),
        "Accumulator.merge(bad)": lambda: calibkit.Accumulator("ECE").merge(object()),
        "GeneralCalibrationError.update_state(bad arrays)":
            lambda: GeneralCalibrationError(*settings).update_state("a", "b"),
        "GeneralCalibrationError.update_state(lengths)":
            lambda: GeneralCalibrationError(*settings).update_state([0, 1], [[0.5, 0.5]]),
        "GeneralCalibrationError(binning_scheme).update_state":
            lambda: GeneralCalibrationError("x", True, False, "l1").update_state(Y, P),
    }
    for what, call in calls.items():
        assert _check(call, what), what
