"""Shared machinery of the recalibration estimators: parameters, input checks, conversions.

Every estimator in :mod:`calibkit.recalibration` follows scikit-learn's conventions: the
constructor only stores its keyword arguments; :meth:`fit` validates them and the data;
fitted attributes end with an underscore. scikit-learn is optional and never imported by this
package: the estimators implement its protocol (``get_params`` / ``set_params``,
``__sklearn_tags__``, ``score`` = negative log loss), so ``sklearn.base.clone``, ``Pipeline``,
``GridSearchCV`` (default scoring included) and ``cross_val_score`` work on them, and
``import calibkit.recalibration`` does not pay for importing scikit-learn.

Input kinds
-----------
The user states what ``X`` holds with ``input="logits"`` or ``input="probs"``; nothing is
guessed. Each method works in one space and converts:

* scaling methods (temperature, vector, matrix, Platt, neural network) act on scores ``Z``:
  logits are used as given; probabilities become ``log(max(p, 1.2e-38))`` (exact up to a
  constant per row, which softmax ignores; exact zeros become about -87). A fit row whose true
  class has probability 0 (at most the floor) has log-likelihood -inf under every temperature,
  vector or matrix scaling: the likelihood cannot see it, and flooring it would let it pull the
  fit (20news: test ECE 0.20 -> 0.30). Likelihood fits therefore leave such rows out, with a
  :class:`ZeroProbabilityWarning` saying how many (:func:`unseen_rows`), and refuse a fit in
  which every row is one;
* histogram binning and isotonic regression act on probabilities: logits are turned into
  probabilities with :func:`calibkit.softmax`.

A 1-D ``X`` or an ``(N, 1)`` ``X`` is a binary problem, as everywhere in calibkit: a probability
``p`` of class 1 becomes the two columns ``[1 - p, p]`` and a logit ``s`` becomes ``[0, s]``.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import TypeVar

import numpy as np

from .._params import (
    RANGE_TOL,
    ROW_SUM_TOL,
    as_choice,
    as_flag,
    as_int,
    as_random_state,
    as_range,
    as_real,
    renamed,
)
from .._validate import (
    as_array,
    as_labels,
    check_scores,
    empty_probs_error,
    length_mismatch_error,
    no_columns_error,
)
from ..errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    NotFittedError,
    ShapeMismatchError,
)
from ._kernels import scaled_softmax

__all__ = [
    "PROB_FLOOR",
    "ZeroProbabilityWarning",
    "unseen_rows",
    "RANGE_TOL",
    "ROW_SUM_TOL",
    "ConvergenceWarning",
    "NotFittedError",
    "RecalibratorBase",
    "check_random_state",
    "limit_blas_threads",
]

#: Probabilities are floored here before taking logs (the smallest normal float32).
PROB_FLOOR = float(np.finfo(np.float32).tiny)
# RANGE_TOL (probabilities may leave [0, 1] by this much) and ROW_SUM_TOL (rows may sum to 1
# within this) are the metric kernels' own constants, read from calibkit._params; the checks
# that use them are the kernels' own (calibkit._validate.check_scores).

INPUT_KINDS = ("logits", "probs")

#: What a ``random_state`` may be: None (fresh entropy), an int >= 0, a NumPy Generator or a
#: legacy RandomState (scikit-learn's convention; :func:`calibkit._params.as_random_state`).
RandomStateLike = int | np.random.Generator | np.random.RandomState | None

_P = TypeVar("_P", bound="ParamsMixin")
_R = TypeVar("_R", bound="RecalibratorBase")

# scikit-learn is optional, and never imported here: the estimators implement its estimator
# protocol themselves (get_params / set_params / __sklearn_tags__ / score), so
# ``import calibkit.recalibration`` stays fast and ``clone``, ``Pipeline`` and ``GridSearchCV``
# work all the same.


_SKLEARN_NOT_FITTED: list = []


def not_fitted_error(message: str) -> NotFittedError:
    """A :class:`calibkit.errors.NotFittedError`; when scikit-learn is already imported (by the
    caller: calibkit never imports it), one that is also scikit-learn's ``NotFittedError``, so
    ``except sklearn.exceptions.NotFittedError`` catches it as well. A caller whose process has
    not imported scikit-learn cannot be catching scikit-learn's class."""
    if "sklearn" not in sys.modules:
        return NotFittedError(message)
    if not _SKLEARN_NOT_FITTED:
        try:
            from sklearn.exceptions import NotFittedError as SkNotFitted
        except ImportError:  # pragma: no cover - a broken scikit-learn install
            return NotFittedError(message)
        # pickled as a call of this function, which rebuilds the right class where unpickled
        _SKLEARN_NOT_FITTED.append(type("NotFittedError", (NotFittedError, SkNotFitted), {
            "__module__": NotFittedError.__module__, "__doc__": NotFittedError.__doc__,
            "__reduce__": lambda self: (not_fitted_error, self.args)}))
    return _SKLEARN_NOT_FITTED[0](message)


class ZeroProbabilityWarning(UserWarning):
    """Fit rows whose true class has probability 0 were left out of a likelihood fit (see
    :func:`unseen_rows`)."""


def unseen_rows(Z: np.ndarray, labels: np.ndarray, who: str) -> np.ndarray:
    """Rows of floored log-probabilities ``Z`` (N, K) whose true class ``labels`` had
    probability 0 (at most :data:`PROB_FLOOR`): their log-likelihood is -inf under every
    scaling of the logits, so they carry no information about the fit, while the floor would
    give them a finite and dominating loss. Warns (:class:`ZeroProbabilityWarning`) when there
    are some; refuses (:class:`~calibkit.errors.InvalidProbabilitiesError`) when every row is
    one. Returns the boolean mask of those rows."""
    import warnings

    floor = np.log(PROB_FLOOR)
    unseen = Z[np.arange(Z.shape[0]), labels] <= floor
    count = int(np.count_nonzero(unseen))
    if count == Z.shape[0]:
        raise InvalidProbabilitiesError(
            f"{who}: every fit row gives its true class probability 0, so the log-likelihood "
            "is -inf for every fit; pass logits (input='logits') or probabilities that give the "
            "true classes a positive probability")
    if count:
        warnings.warn(
            f"{who}: {count} of {Z.shape[0]} fit rows give their true class probability 0 (at "
            f"most {PROB_FLOOR:.3g}); their log-likelihood is -inf under every fit, so they are "
            "left out of it. Pass input='logits' with the model's logits to use them",
            ZeroProbabilityWarning, stacklevel=4)
    return unseen


class ConvergenceWarning(UserWarning):
    """An optimiser stopped before meeting its tolerance, or the optimum lies on a bound."""


class ParamsMixin:
    """``get_params`` / ``set_params`` with scikit-learn's semantics, for use without sklearn.

    Parameters are the keyword arguments of ``__init__``; each is stored under its own name.
    """

    @classmethod
    def _get_param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        params = inspect.signature(init).parameters.values()
        names = []
        for p in params:
            if p.name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict:
        """Parameters of this estimator, as a dict (nested ones as ``name__sub`` if ``deep``)."""
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                for sub_key, sub_value in value.get_params().items():
                    out[f"{key}__{sub_key}"] = sub_value
            out[key] = value
        return out

    def set_params(self: _P, **params) -> _P:
        """Set parameters (``name=value`` or ``name__sub=value``); returns ``self``."""
        if not params:
            return self
        for old, new in getattr(type(self).__init__, "__renamed__", {}).items():
            renamed(params, old, new, where=f"{type(self).__name__}.set_params")
        valid = self.get_params(deep=True)
        nested: dict[str, dict] = {}
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise InvalidParameterError(
                    f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {sorted(self._get_param_names())!r}."
                )
            if delim:
                nested.setdefault(key, {})[sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    #: scikit-learn < 1.6 reads this: the recalibrators are probabilistic classifiers
    #: (``predict_proba``, ``predict``, ``classes_``), so probability scorers accept them.
    _estimator_type = "classifier"

    def __sklearn_tags__(self):
        """scikit-learn's estimator tags (called by scikit-learn >= 1.6 only, which is then
        imported): a classifier's, so ``scoring="neg_log_loss"`` and the like accept it."""
        from sklearn.base import BaseEstimator
        from sklearn.utils import ClassifierTags

        tags = BaseEstimator.__sklearn_tags__(self)
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        return tags


_EstimatorBase = ParamsMixin


@contextlib.contextmanager
def limit_blas_threads():
    """Run BLAS single-threaded inside the block when ``threadpoolctl`` is installed.

    The optimisers' many short vector operations (and mid-sized matrix products) are slowed
    down, not sped up, by OpenBLAS threads on a small or busy machine.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def check_random_state(random_state) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from ``None``, an int, a Generator or a RandomState
    (:func:`calibkit._params.as_random_state`)."""
    return as_random_state(random_state)


# --------------------------------------------------------------------------------------------
# parameter checks used by the estimators' fit


# The estimators' argument order (name first) over calibkit._params, which holds the rules.


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (:func:`calibkit._params.as_int`)."""
    return as_int(value, name, minimum)


def check_float(name: str, value, *, low=None, high=None, low_open=False, high_open=False) -> float:
    """``value`` as a finite float within the given bounds (:func:`calibkit._params.as_real`)."""
    return as_real(value, name, low=low, high=high, low_open=low_open, high_open=high_open)


def check_bool(name: str, value) -> bool:
    """``value`` as a bool, True/False or NumPy bools only (:func:`calibkit._params.as_flag`)."""
    return as_flag(value, name)


def check_choice(name: str, value, choices) -> str:
    """``value`` if it is one of ``choices`` (:func:`calibkit._params.as_choice`)."""
    return as_choice(value, name, choices)


def check_range(name: str, value) -> tuple[float, float]:
    """A ``(low, high)`` temperature range with ``0 < low < 1 < high``
    (:func:`calibkit._params.as_range`)."""
    return as_range(value, name)


# --------------------------------------------------------------------------------------------
# data checks and conversions


def _as_numeric(X, name: str) -> np.ndarray:
    arr = as_array(X, name, "a numeric array of shape (N, K)")
    if arr.dtype.kind not in "fiub":
        raise InputTypeError(
            f"{name} must hold real numbers, got dtype {arr.dtype}; pass a float array of shape (N, K)"
        )
    return arr


#: What an error about declared probabilities says to do (the kernel's advice speaks of metrics).
_PROBS_FIX = ("X was declared as probabilities (input='probs'): if it holds logits or "
              "unnormalised scores pass input='logits', otherwise normalised probabilities")
_LOGITS_FIX = "pass input='probs' (or log-probabilities as logits)"


def prepare_scores(X, input_kind: str, space: str, *, name: str = "X") -> np.ndarray:
    """Validate ``X`` and convert it to the space a method works in.

    The values are checked by :func:`calibkit._validate.check_scores` (the metric functions'
    own rules and tolerances for probabilities; finite values for logits, which must not be
    probabilities).

    Parameters
    ----------
    X : array_like of shape (N, K), (N, 1) or (N,)
        Logits or probabilities, as stated by ``input_kind``.
    input_kind : {"logits", "probs"}
    space : {"scores", "probs"}
        ``"scores"``: logits (probabilities become floored log-probabilities);
        ``"probs"``: probabilities (logits go through :func:`calibkit.softmax`).

    Returns
    -------
    numpy.ndarray of shape (N, K), float64, C-contiguous, K >= 2.
    """
    arr = _as_numeric(X, name)
    if arr.ndim == 0 or arr.ndim > 2:
        raise ShapeMismatchError(
            f"{name} must be 2-D (N samples, K classes) or 1-D (binary), got shape {arr.shape}"
        )
    arr = arr.astype(np.float64, copy=False)
    if arr.shape[0] == 0:
        raise empty_probs_error(name)
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise no_columns_error(name)
    binary = arr.ndim == 1 or arr.shape[1] == 1
    check_scores(arr.reshape(-1) if binary else arr, input_kind, name=name,
                 fix=_PROBS_FIX if input_kind == "probs" else _LOGITS_FIX)
    if binary:
        v = arr.reshape(-1)
        if input_kind == "probs":
            v = np.clip(v, 0.0, 1.0)
            arr = np.stack([1.0 - v, v], axis=1)
        else:
            arr = np.stack([np.zeros_like(v), v], axis=1)
    elif input_kind == "probs" and (arr.min() < 0.0 or arr.max() > 1.0):
        # used as given (clipped into [0, 1]), not renormalised: the per-class maps are
        # sensitive to one-ulp changes near 1, and every output row is normalised anyway
        arr = np.clip(arr, 0.0, 1.0)
    arr = np.ascontiguousarray(arr)
    if space == "probs":
        return arr if input_kind == "probs" else scaled_softmax(arr, 1.0)
    return np.log(np.maximum(arr, PROB_FLOOR)) if input_kind == "probs" else arr


def prepare_labels(y, n_samples: int, n_classes: int, *, name: str = "y") -> np.ndarray:
    """Validate class labels: 1-D integers (or integral floats / bools, or an (N, 1) column)
    in ``[0, K)``, one per row of ``X`` (:func:`calibkit._validate.as_labels`)."""
    arr = as_labels(y, name, num_classes=n_classes)
    if arr.shape[0] != n_samples:
        raise length_mismatch_error(arr.shape[0], n_samples, "X", name=name)
    return arr


def check_all_classes(y: np.ndarray, n_classes: int, method: str, *, name: str = "y") -> np.ndarray:
    """Raise if a class in ``[0, K)`` never occurs in ``y``; returns the class counts."""
    counts = np.bincount(y, minlength=n_classes)
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        shown = ", ".join(str(int(c)) for c in missing[:10]) + (" ..." if missing.size > 10 else "")
        raise InvalidLabelsError(
            f"{name} never contains class(es) {shown} of the {n_classes} columns of X; {method} "
            "fits per-class parameters and cannot estimate them for an absent class. Fit on data "
            "with every class present, or use TemperatureScaling, which has one shared parameter"
        )
    return counts


def renormalise(Q: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Divide each row of ``Q`` (non-negative) by its sum; rows summing to 0 take ``fallback``."""
    sums = Q.sum(axis=1, keepdims=True)
    zero = sums[:, 0] <= 0.0
    if zero.any():
        Q = Q.copy()
        Q[zero] = fallback[zero]
        sums[zero] = Q[zero].sum(axis=1, keepdims=True)
    return Q / sums


# --------------------------------------------------------------------------------------------


class RecalibratorBase(_EstimatorBase):
    """Common ``fit`` / ``predict_proba`` / ``transform`` plumbing.

    Subclasses set ``_space`` ("scores" or "probs"), ``_needs_all_classes`` and implement
    ``_fit(A, y)`` and ``_predict_proba(A)`` on converted, validated arrays.
    """

    _space = "probs"
    #: Fitted by likelihood on scores: fit rows the log cannot see are left out (unseen_rows).
    _likelihood_fit = True
    _needs_all_classes = True
    _binary_only = False
    #: "logits" or "probs": what ``X`` holds (set by each subclass's ``__init__``).
    input: str

    def _fit(self, A: np.ndarray, y: np.ndarray) -> None:
        raise NotImplementedError

    def _predict_proba(self, A: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _check_input_param(self) -> str:
        return check_choice("input", self.input, INPUT_KINDS)

    def _prepare_fit(self, X, y):
        kind = self._check_input_param()
        A = prepare_scores(X, kind, self._space)
        n, k = A.shape
        if self._binary_only and k != 2:
            raise ShapeMismatchError(
                f"{type(self).__name__} is for binary problems, but X has {k} classes; use "
                "TemperatureScaling, VectorScaling or MatrixScaling for multiclass problems"
            )
        labels = prepare_labels(y, n, k)
        if self._space == "scores" and kind == "probs" and self._likelihood_fit:
            keep = ~unseen_rows(A, labels, type(self).__name__)
            if not keep.all():
                A, labels = np.ascontiguousarray(A[keep]), labels[keep]
        if self._needs_all_classes:
            check_all_classes(labels, k, type(self).__name__)
        return A, labels

    def _set_fitted_shape(self, k: int) -> None:
        self.n_classes_ = k
        self.classes_ = np.arange(k)

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_classes_"):
            raise not_fitted_error(
                f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) first"
            )

    def _prepare_predict(self, X) -> np.ndarray:
        self._check_fitted()
        A = prepare_scores(X, self._check_input_param(), self._space)
        if A.shape[1] != self.n_classes_:
            raise ShapeMismatchError(
                f"X has {A.shape[1]} classes but this {type(self).__name__} was fitted with "
                f"{self.n_classes_}; pass scores with the same columns as in fit"
            )
        return A

    def fit(self: _R, X, y) -> _R:
        """Fit the recalibration map on held-out scores ``X`` and their labels ``y``.

        Parameters
        ----------
        X : array_like of shape (N, K), or (N,) for binary
            Logits or probabilities, as declared by ``input``.
        y : array_like of shape (N,)
            Integer class labels in ``[0, K)``.

        Returns
        -------
        self
        """
        A, labels = self._prepare_fit(X, y)
        self._fit(A, labels)
        self._set_fitted_shape(A.shape[1])
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Recalibrated probabilities.

        Parameters
        ----------
        X : array_like of shape (N, K), or (N,) for binary
            Scores of the same kind (``input``) and classes as in :meth:`fit`.

        Returns
        -------
        numpy.ndarray of shape (N, K), float64; rows are non-negative and sum to 1.
        """
        A = self._prepare_predict(X)
        P = self._predict_proba(A)
        np.clip(P, 0.0, 1.0, out=P)
        P /= P.sum(axis=1, keepdims=True)
        return P

    def predict(self, X) -> np.ndarray:
        """The class with the highest recalibrated probability (lowest index on ties), shape (N,)."""
        return np.argmax(self.predict_proba(X), axis=1)

    def transform(self, X) -> np.ndarray:
        """Same as :meth:`predict_proba`, so the estimator can be an intermediate Pipeline step."""
        return self.predict_proba(X)

    def fit_transform(self, X, y) -> np.ndarray:
        """``fit(X, y)`` then ``transform(X)``."""
        return self.fit(X, y).transform(X)

    def score(self, X, y) -> float:
        """Negative log loss of the recalibrated probabilities (higher is better).

        ``-mean_i log(max(P[i, y_i], eps))`` with ``P = predict_proba(X)`` and ``eps`` the float64
        machine epsilon (2.2e-16), the value of scikit-learn's
        ``-log_loss(y, P, labels=range(K))``. It is the score ``GridSearchCV`` and
        ``cross_val_score`` use when no ``scoring`` is given.

        Parameters
        ----------
        X : array_like of shape (N, K), or (N,) for binary
            Scores of the same kind (``input``) and classes as in :meth:`fit`.
        y : array_like of shape (N,)
            Integer class labels in ``[0, K)``.

        Returns
        -------
        float
            At most 0; 0 only when every true class gets probability 1.

        Examples
        --------
        >>> import numpy as np
        >>> from calibkit.recalibration import TemperatureScaling
        >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 0.0]]); y = np.array([0, 1, 1])
        >>> ts = TemperatureScaling(input="logits").fit(z, y)
        >>> p = ts.predict_proba(z)
        >>> bool(np.isclose(ts.score(z, y), np.mean(np.log(p[np.arange(3), y]))))
        True
        """
        P = self.predict_proba(X)
        labels = prepare_labels(y, P.shape[0], P.shape[1])
        p_true = P[np.arange(P.shape[0]), labels]
        return float(np.mean(np.log(np.maximum(p_true, np.finfo(np.float64).eps))))
