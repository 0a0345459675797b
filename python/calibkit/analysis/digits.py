"""The bundled default: small models trained on scikit-learn's digits, with fixed seeds.

:func:`load_digits_split` splits the 1797 digits 50 / 25 / 25 % into fit / validation / test;
:func:`default_models` trains a softmax regression and a small MLP on the fit split and returns
their logits on the validation and test splits, ready for :func:`calibkit.analysis.run_study`.
Everything is deterministic for a given seed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._params import as_study_seed, renames
from ..errors import InvalidParameterError
from .data import ModelSplits, Predictions

__all__ = [
    "DigitsSplit",
    "DEFAULT_MODELS",
    "load_digits_split",
    "train_softmax_regression",
    "train_mlp",
    "model_logits",
    "default_models",
]

#: Names of the bundled default models, in the order the study runs them.
DEFAULT_MODELS = ("softmax-regression", "mlp")


def _single_thread_blas():
    """Limit BLAS to one thread while fitting the small default models.

    Their matrices are tiny (hundreds x 64), where multi-threaded BLAS only adds overhead, and on
    a busy machine its spinning threads slow training down by an order of magnitude.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


@dataclass(frozen=True)
class DigitsSplit:
    """scikit-learn's digits (1797 8x8 images, 10 classes) split into fit / validation / test.

    Features are pixel intensities scaled to [0, 1]; the split is stratified, 50 / 25 / 25 %.
    """

    X_fit: np.ndarray
    y_fit: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    random_state: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def seed(self) -> int:
        """Deprecated (since calibkit 0.2): :attr:`random_state`."""
        warnings.warn("DigitsSplit.seed is deprecated since calibkit 0.2 and will be removed in "
                      "the next release; use DigitsSplit.random_state", DeprecationWarning,
                      stacklevel=2)
        return self.random_state


DigitsSplit.__init__ = renames(seed="random_state")(DigitsSplit.__init__)  # type: ignore[method-assign]


@renames(seed="random_state")
def load_digits_split(random_state: int = 0) -> DigitsSplit:
    """scikit-learn's ``load_digits`` split 50 / 25 / 25 % into fit / validation / test.

    Parameters
    ----------
    random_state : int, default 0
        Seeds the stratified split (an integer in [0, 2**32 - 1], scikit-learn's range).
        ``seed=`` before calibkit 0.2 (still accepted with a DeprecationWarning).

    Returns
    -------
    DigitsSplit
        898 / 449 / 450 examples, 64 features scaled to [0, 1], 10 classes.

    Examples
    --------
    >>> d = load_digits_split(0)
    >>> len(d.y_fit), len(d.y_val), len(d.y_test)
    (898, 449, 450)
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    seed = as_study_seed(random_state, "random_state")
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    X_fit, X_rest, y_fit, y_rest = train_test_split(
        X, y, train_size=0.5, stratify=y, random_state=seed
    )
    X_val, X_test, y_val, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed
    )
    return DigitsSplit(X_fit, y_fit, X_val, y_val, X_test, y_test, seed,
                       {"dataset": "sklearn.datasets.load_digits", "split": "50/25/25 stratified"})


@renames(seed="random_state")
def train_softmax_regression(X, y, *, random_state: int = 0, C: float = 1.0):
    """Multinomial logistic (softmax) regression, L2-penalised, fitted with L-BFGS.

    Parameters
    ----------
    X : array_like of shape (N, D)
    y : array_like of shape (N,)
    random_state : int, default 0
        ``seed=`` before calibkit 0.2 (still accepted with a DeprecationWarning).
    C : float, default 1.0
        Inverse regularisation strength.

    Returns
    -------
    sklearn.linear_model.LogisticRegression
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings(), _single_thread_blas():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=C, max_iter=1000,
                                  random_state=as_study_seed(random_state, "random_state")).fit(X, y)


@renames(seed="random_state")
def train_mlp(X, y, *, random_state: int = 0, hidden: Sequence[int] = (32,), max_iter: int = 300):
    """A small multilayer perceptron (ReLU, Adam), trained long enough to be overconfident.

    Parameters
    ----------
    X, y : array_like
    random_state : int, default 0
        Seeds the weight initialisation and mini-batch order. ``seed=`` before calibkit 0.2
        (still accepted with a DeprecationWarning).
    hidden : tuple of int, default (32,)
    max_iter : int, default 300

    Returns
    -------
    sklearn.neural_network.MLPClassifier
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    with warnings.catch_warnings(), _single_thread_blas():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return MLPClassifier(
            hidden_layer_sizes=tuple(hidden), max_iter=max_iter,
            random_state=as_study_seed(random_state, "random_state"),
        ).fit(X, y)


def model_logits(model, X) -> np.ndarray:
    """Pre-softmax scores (N, K) of a fitted LogisticRegression or MLPClassifier.

    For the MLP this is the forward pass up to the output layer (before its softmax), so
    ``softmax(model_logits(m, X))`` equals ``m.predict_proba(X)``.
    """
    from sklearn.neural_network import MLPClassifier

    X = np.asarray(X, dtype=np.float64)
    if isinstance(model, MLPClassifier):
        acts: dict[str, Callable[[np.ndarray], np.ndarray]] = {
            "relu": lambda a: np.maximum(a, 0.0),
            "tanh": np.tanh,
            "logistic": lambda a: 1.0 / (1.0 + np.exp(-a)),
            "identity": lambda a: a,
        }
        act = acts[model.activation]
        a = X
        for W, b in zip(model.coefs_[:-1], model.intercepts_[:-1]):
            a = act(a @ W + b)
        return a @ model.coefs_[-1] + model.intercepts_[-1]
    z = np.asarray(model.decision_function(X), dtype=np.float64)
    if z.ndim == 1:  # binary: one logit for class 1
        z = np.stack([np.zeros_like(z), z], axis=1)
    return z


@renames(seed="random_state")
def default_models(
    random_state: int = 0, models: Sequence[str] = DEFAULT_MODELS, split: DigitsSplit | None = None
) -> list[ModelSplits]:
    """Train the bundled default models on digits and return their validation and test logits.

    Parameters
    ----------
    random_state : int, default 0
        Seeds the data split and the MLP (an integer in [0, 2**32 - 1]). ``seed=`` before
        calibkit 0.2 (still accepted with a DeprecationWarning).
    models : sequence of {"softmax-regression", "mlp"}
    split : DigitsSplit, optional
        Reuse an existing split (default: ``load_digits_split(random_state)``).

    Returns
    -------
    list of ModelSplits
        One per model, logits on the 449 validation and 450 test digits.

    Examples
    --------
    >>> [m.name for m in default_models(0, ["softmax-regression"])]
    ['softmax-regression']
    """
    seed = as_study_seed(random_state, "random_state")
    d = split if split is not None else load_digits_split(seed)
    out = []
    for name in models:
        if name == "softmax-regression":
            m = train_softmax_regression(d.X_fit, d.y_fit, random_state=seed)
            desc = "softmax regression (L2, C=1) on scikit-learn digits"
        elif name == "mlp":
            m = train_mlp(d.X_fit, d.y_fit, random_state=seed)
            desc = "MLP (64-32-10, ReLU, Adam, 300 epochs) on scikit-learn digits"
        else:
            raise InvalidParameterError(f"unknown default model {name!r}; choose from {DEFAULT_MODELS}")
        out.append(
            ModelSplits(
                name=name,
                val=Predictions(d.y_val.astype(np.int64), model_logits(m, d.X_val), "logits",
                                f"digits validation ({name})"),
                test=Predictions(d.y_test.astype(np.int64), model_logits(m, d.X_test), "logits",
                                 f"digits test ({name})"),
                description=f"{desc}, seed {seed}",
            )
        )
    return out
