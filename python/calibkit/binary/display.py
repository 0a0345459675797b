"""A reliability diagram of P(y = pos_label) with scikit-learn's ``CalibrationDisplay``
construction (``from_predictions``, ``from_estimator``), drawn by
:func:`calibkit.plots.reliability_diagram` on the pairs ``(y_prob, y_true == pos_label)``.
matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError
from ._labels import binary_inputs
from .curve import STRATEGIES, calibration_curve

__all__ = ["CalibrationDisplay"]


class CalibrationDisplay:
    """Reliability diagram of a binary classifier's P(y = pos_label).

    Attributes
    ----------
    prob_true, prob_pred : numpy.ndarray
        :func:`calibkit.binary.calibration_curve` of the predictions.
    y_prob : numpy.ndarray of shape (N,)
    positive : numpy.ndarray of shape (N,), bool
        ``y_true == pos_label``.
    estimator_name : str or None
    pos_label : object
    figure_ : matplotlib.figure.Figure
        Set by :meth:`plot`.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500); y = rng.uniform(size=500) < p
    >>> d = calibkit.binary.CalibrationDisplay.from_predictions(y, p, n_bins=10, name="toy")
    >>> d.figure_.axes[0].get_ylabel(), len(d.prob_true)
    ('accuracy', 10)
    """

    def __init__(self, prob_true, prob_pred, y_prob, positive, *, n_bins: int = 15,
                 strategy: str = "uniform", estimator_name=None, pos_label=None):
        self.prob_true = prob_true
        self.prob_pred = prob_pred
        self.y_prob = y_prob
        self.positive = positive
        self.n_bins = n_bins
        self.strategy = strategy
        self.estimator_name = estimator_name
        self.pos_label = pos_label

    def plot(self, *, name=None, **kwargs) -> CalibrationDisplay:
        """Draw the diagram (``kwargs`` go to :func:`calibkit.plots.reliability_diagram`, e.g.
        ``path=``, ``figsize=``, ``error_bars=``); sets and returns ``self`` with ``figure_``."""
        from ..plots.reliability import reliability_diagram

        name = self.estimator_name if name is None else name
        title = kwargs.pop("title", None) or (f"{name}: P(y = {self.pos_label!r})" if name
                                              else f"P(y = {self.pos_label!r})")
        self.figure_ = reliability_diagram(confidence=self.y_prob, correct=self.positive,
                                           binning=STRATEGIES[self.strategy],
                                           num_bins=self.n_bins, title=title, **kwargs)
        return self

    @classmethod
    def from_predictions(cls, y_true, y_prob, *, pos_label=None, n_bins: int = 15,
                         strategy: str = "uniform", name=None, **kwargs) -> CalibrationDisplay:
        """The diagram of predictions ``y_prob`` = P(y = pos_label) against ``y_true``
        (arguments as :func:`calibkit.binary.calibration_curve`)."""
        b = binary_inputs(y_true, y_prob, pos_label)
        prob_true, prob_pred = calibration_curve(b.positive, b.prob, n_bins=n_bins,
                                                 strategy=strategy)
        disp = cls(prob_true, prob_pred, b.prob, b.positive, n_bins=n_bins, strategy=strategy,
                   estimator_name=name, pos_label=b.pos_label)
        return disp.plot(**kwargs)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, pos_label=None, n_bins: int = 15,
                       strategy: str = "uniform", name=None, **kwargs) -> CalibrationDisplay:
        """The diagram of a fitted binary classifier: ``estimator.predict_proba(X)`` at the
        column of ``pos_label`` in ``estimator.classes_`` (default: the second class, as
        scikit-learn takes it)."""
        if not hasattr(estimator, "predict_proba") or not hasattr(estimator, "classes_"):
            raise InvalidParameterError(
                f"estimator must be a fitted classifier with predict_proba and classes_, got "
                f"{type(estimator).__name__}")
        classes = list(np.asarray(estimator.classes_).tolist())
        if len(classes) != 2:
            raise InvalidParameterError(
                f"estimator has {len(classes)} classes {classes}; CalibrationDisplay is for "
                f"binary classifiers (use calibkit.plots.reliability_diagram for multiclass)")
        pos = classes[1] if pos_label is None else pos_label
        if pos not in classes:
            raise InvalidParameterError(
                f"pos_label={pos_label!r} is not one of the estimator's classes {classes}")
        y_prob = np.asarray(estimator.predict_proba(X))[:, classes.index(pos)]
        return cls.from_predictions(y, y_prob, pos_label=pos, n_bins=n_bins, strategy=strategy,
                                    name=type(estimator).__name__ if name is None else name,
                                    **kwargs)
