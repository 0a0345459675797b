"""scikit-learn scorers of the binary metrics: ``scorer("ece")`` is
``make_scorer(calibkit.binary.ece, response_method="predict_proba", greater_is_better=False)``,
for ``cross_val_score``, ``GridSearchCV(scoring=...)`` and the like. scikit-learn is imported
when a scorer is made."""

from __future__ import annotations

from ..errors import InvalidParameterError, MissingDependencyError
from .metrics import adaptive_ece, ece, ksce, mce, rmsce, smece

__all__ = ["scorer", "SCORERS"]

#: The metrics a scorer can be made of (lower is better for each).
SCORERS = {"ece": ece, "mce": mce, "rmsce": rmsce, "adaptive_ece": adaptive_ece,
           "smece": smece, "ksce": ksce}


def scorer(metric: str = "ece", *, pos_label=None, **kwargs):
    """A scikit-learn scorer of a binary calibration metric (negated: greater is better).

    Parameters
    ----------
    metric : {"ece", "mce", "rmsce", "adaptive_ece", "smece", "ksce"}, default "ece"
    pos_label : optional
        The positive class: scikit-learn scores its ``predict_proba`` column (default: the
        estimator's second class; required for class names other than 0/1, -1/1, booleans).
    **kwargs
        Keywords of the metric (``num_bins=``).

    Returns
    -------
    sklearn.metrics._scorer._Scorer

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> import calibkit
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> s = cross_val_score(LogisticRegression(), X, y, cv=3,
    ...                     scoring=calibkit.binary.scorer("ece", num_bins=10))
    >>> bool((s <= 0).all())
    True
    """
    if not isinstance(metric, str) or metric.lower() not in SCORERS:
        raise InvalidParameterError(
            f"metric must be one of {', '.join(map(repr, SCORERS))}, got {metric!r}")
    try:
        from sklearn.metrics import make_scorer
    except ImportError as exc:
        raise MissingDependencyError(
            "calibkit.binary.scorer needs scikit-learn: pip install scikit-learn") from exc
    if pos_label is not None:
        kwargs["pos_label"] = pos_label
    return make_scorer(SCORERS[metric.lower()], response_method="predict_proba",
                       greater_is_better=False, **kwargs)
