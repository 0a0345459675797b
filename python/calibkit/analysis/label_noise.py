"""The paper's label-noise experiment: retrain at increasing label noise, watch the metrics.

A fraction ``p`` of the training labels is reassigned uniformly at random over the K classes (the
true class is one of the possible draws, as in the paper), the model is retrained, and its test
predictions (against the clean test labels) are scored with ECE, ACE and SCE, together with the
accuracy, the mean top-label confidence and the fraction of "important" predictions that ECE
never looks at: probabilities above a confidence threshold that are not the row's maximum.

The noisy examples are nested: the examples relabelled at a level are a prefix of one fixed
random order, so each level keeps the noise of the levels below it and the curves are not
dominated by resampling noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._params import as_int, as_real, as_study_seed, renames
from .._validate import as_labels
from ..errors import InvalidParameterError
from .tables import Table

__all__ = ["LabelNoiseResult", "noisy_labels", "noise_levels", "label_noise_study"]

#: The paper's highest noise level.
MAX_NOISE = 0.05


def noise_levels(num_levels: int = 11, max_level: float = MAX_NOISE) -> np.ndarray:
    """``num_levels`` evenly spaced noise levels from 0 to ``max_level`` (inclusive).

    Examples
    --------
    >>> noise_levels(3).tolist()
    [0.0, 0.025, 0.05]
    """
    num_levels = as_int(num_levels, "num_levels", minimum=1)
    max_level = as_real(max_level, "max_level (a fraction)", low=0.0, high=1.0)
    if num_levels == 1:
        return np.array([0.0])
    return np.linspace(0.0, float(max_level), int(num_levels))


@renames(seed="random_state")
def noisy_labels(labels, level: float, num_classes: int, *, random_state: int = 0) -> np.ndarray:
    """Reassign a fraction ``level`` of ``labels`` uniformly at random over ``num_classes``.

    ``round(level * N)`` examples, chosen by a permutation fixed by ``random_state``, get a label drawn
    uniformly from all classes (so about 1/K of them keep their true label). For the same seed,
    the examples relabelled at a lower level are a subset of those at a higher one.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    level : float in [0, 1]
    num_classes : int
    random_state : int, default 0
        An integer in [0, 2**32 - 1]. ``seed=`` before calibkit 0.2 (still accepted with a
        DeprecationWarning).

    Returns
    -------
    numpy.ndarray of int64, shape (N,)

    Examples
    --------
    >>> import numpy as np
    >>> y = np.zeros(100, dtype=int)
    >>> int((noisy_labels(y, 0.5, 10, random_state=1) != 0).sum()) <= 50
    True
    """
    num_classes = as_int(num_classes, "num_classes", 1)
    y = as_labels(labels, num_classes=num_classes)  # class indices in [0, num_classes)
    level = as_real(level, "level (a fraction)", low=0.0, high=1.0)
    rng = np.random.default_rng(as_study_seed(random_state, "random_state"))
    order = rng.permutation(y.size)
    draws = rng.integers(0, num_classes, size=y.size)
    m = int(round(float(level) * y.size))
    out = y.copy()
    idx = order[:m]
    out[idx] = draws[idx]
    return out


@dataclass
class LabelNoiseResult:
    """Metrics of the retrained model at each noise level.

    Attributes
    ----------
    levels : numpy.ndarray, shape (L,)
        Noise levels (fraction of training labels randomly reassigned).
    columns : dict of str -> numpy.ndarray (L,)
        ``"ECE"``, ``"ACE"``, ``"SCE"``, ``"accuracy"``, ``"mean max confidence"``,
        ``"ignored important fraction"``, ``"labels changed"`` (fraction actually different).
    settings : dict
        num_bins, importance threshold, random_state, model.
    """

    levels: np.ndarray
    columns: dict
    settings: dict = field(default_factory=dict)

    def table(self) -> Table:
        """The results as a :class:`Table` (one row per noise level)."""
        names = list(self.columns)
        return Table(
            name="label_noise",
            title=(
                f"Label noise: softmax regression retrained at each noise level "
                f"({self.settings.get('num_bins', 15)} bins; important = confidence > "
                f"{self.settings.get('importance_threshold')})"
            ),
            index=[f"{lv:.4f}" for lv in self.levels],
            columns=names,
            data=np.column_stack([self.columns[c] for c in names]),
            index_name="noise level",
            note=(
                "Noise level = fraction of training labels reassigned uniformly at random (the "
                "true class included); test labels are clean. 'ignored important fraction' = "
                "share of probabilities above the threshold that are not the row maximum, which "
                "ECE never scores."
            ),
        )


def _seed_keyword(train) -> str:
    """The keyword ``train`` takes its seed by: ``random_state``, or ``seed`` for a callable of
    the protocol before calibkit 0.2 (a DeprecationWarning)."""
    import inspect

    try:
        params = inspect.signature(train).parameters
    except (TypeError, ValueError):  # no signature: the current protocol
        return "random_state"
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if "random_state" in params or takes_any or "seed" not in params:
        return "random_state"
    import warnings

    warnings.warn(
        "label_noise_study: a train callable taking seed= is deprecated since calibkit 0.2; "
        "train is called as train(X, y, random_state=...): rename its seed keyword",
        DeprecationWarning,
        stacklevel=4,
    )
    return "seed"


@renames(seed="random_state")
def label_noise_study(
    X_fit,
    y_fit,
    X_test,
    y_test,
    *,
    levels: Sequence[float] | None = None,
    num_levels: int = 11,
    max_level: float = MAX_NOISE,
    num_bins: int = 15,
    importance_threshold: float = 0.1,
    random_state: int = 0,
    train: Callable | None = None,
    progress: Callable | None = None,
) -> LabelNoiseResult:
    """Retrain a classifier at each label-noise level and measure its calibration.

    Parameters
    ----------
    X_fit, y_fit : array_like
        Training features and clean labels; noise is added to ``y_fit``.
    X_test, y_test : array_like
        Test features and clean labels.
    levels : sequence of float, optional
        Explicit noise levels; default ``noise_levels(num_levels, max_level)``.
    num_levels : int, default 11
        Number of evenly spaced levels from 0 to ``max_level`` (the paper used 40).
    max_level : float, default 0.05
    num_bins : int, default 15
        Bins for ECE, ACE and SCE.
    importance_threshold : float, default 0.1
        A probability above this counts as important (the paper's figure uses 0.1).
    random_state : int, default 0
        Fixes which labels are reassigned and to what, and seeds ``train``. ``seed=`` before
        calibkit 0.2 (still accepted with a DeprecationWarning).
    train : callable ``(X, y, random_state=...) -> model``, optional
        Default :func:`calibkit.analysis.digits.train_softmax_regression` (multinomial logistic
        regression, as in the paper). The model needs ``predict_proba`` and ``classes_``. A
        callable that takes ``seed=`` and not ``random_state=`` (the protocol before calibkit
        0.2) is still called with ``seed=``, with a DeprecationWarning.
    progress : callable, optional
        Called with no argument after each level (e.g. a progress bar's ``update``).

    Returns
    -------
    LabelNoiseResult

    Examples
    --------
    >>> from calibkit.analysis.digits import load_digits_split
    >>> d = load_digits_split(0)
    >>> r = label_noise_study(d.X_fit, d.y_fit, d.X_test, d.y_test, num_levels=2)
    >>> r.levels.tolist(), sorted(r.columns)[:3]
    ([0.0, 0.05], ['ACE', 'ECE', 'SCE'])
    """
    import calibkit

    from .digits import train_softmax_regression

    train = train or train_softmax_regression
    random_state = as_study_seed(random_state, "random_state")
    seed_name = _seed_keyword(train)
    y_fit = as_labels(y_fit, "y_fit")
    y_test = as_labels(y_test, "y_test")
    k = int(max(y_fit.max(), y_test.max())) + 1
    lv = noise_levels(num_levels, max_level) if levels is None else np.asarray(levels, dtype=float)
    if lv.ndim != 1 or lv.size == 0 or np.any((lv < 0) | (lv > 1)):
        raise InvalidParameterError(f"levels: expected fractions in [0, 1] (got {levels!r})")
    try:
        from ..binned.diagnostics import ignored_important_fraction
    except ImportError:  # pragma: no cover - diagnostics ships with the package
        ignored_important_fraction = None  # type: ignore[assignment]
    cols: dict[str, list[float]] = {c: [] for c in ("ECE", "ACE", "SCE", "accuracy", "mean max confidence",
                            "ignored important fraction", "labels changed")}
    for level in lv:
        y_noisy = noisy_labels(y_fit, level, k, random_state=random_state)
        model = train(X_fit, y_noisy, **{seed_name: random_state})
        classes = np.asarray(model.classes_)
        if classes.size != k or np.any(classes != np.arange(k)):
            raise InvalidParameterError(
                f"label noise level {level:g}: the retrained model knows classes {classes.tolist()}, "
                f"expected 0..{k - 1}; use fewer noise or more training data"
            )
        probs = np.asarray(model.predict_proba(X_test), dtype=np.float64)
        cols["ECE"].append(calibkit.ece(y_test, probs, num_bins=num_bins))
        cols["ACE"].append(calibkit.ace(y_test, probs, num_bins=num_bins))
        cols["SCE"].append(calibkit.sce(y_test, probs, num_bins=num_bins))
        cols["accuracy"].append(float(np.mean(np.argmax(probs, axis=1) == y_test)))
        cols["mean max confidence"].append(float(np.mean(np.max(probs, axis=1))))
        if ignored_important_fraction is not None:
            frac = ignored_important_fraction(probs, threshold=importance_threshold)
        else:  # pragma: no cover
            frac = float("nan")
        cols["ignored important fraction"].append(float(frac))
        cols["labels changed"].append(float(np.mean(y_noisy != y_fit)))
        if progress is not None:
            progress()
    return LabelNoiseResult(
        levels=lv,
        columns={c: np.asarray(v, dtype=np.float64) for c, v in cols.items()},
        settings={
            "num_bins": int(num_bins),
            "importance_threshold": float(importance_threshold),
            "random_state": int(random_state),
            "model": getattr(train, "__name__", str(train)),
            "n_train": int(y_fit.size),
            "n_test": int(y_test.size),
        },
    )
