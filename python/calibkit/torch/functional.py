"""One-shot metrics of tensors on their device: :func:`evaluate`.

The functional form of :class:`calibkit.torch.CalibrationError` (one ``update``, then the
values): the tables are built where the tensors are and only they cross to the host, whereas
:func:`calibkit.evaluate` given a GPU tensor copies the whole matrix to the host first.
"""

from __future__ import annotations

from ..binned.space import Evaluation
from ..binned.spec import DEFAULT_NUM_BINS
from .metric import CalibrationError

__all__ = ["evaluate"]


def evaluate(preds=None, target=None, space=None, num_bins=DEFAULT_NUM_BINS, *,
             sample_weight=None, confidence=None, correct=None, predicted=None,
             num_classes: int | None = None) -> Evaluation:
    """Every metric of ``space`` at every bin count, computed on the tensors' device.

    Parameters
    ----------
    preds : tensor of shape (N, K), (N, 1) or (N,)
        Probabilities (binary P(y=1) when 1-D), on any device.
    target : tensor of shape (N,)
        Integer labels in ``[0, K)``, on the same device.
    space : metric or sequence of metrics, optional
        As for :func:`calibkit.evaluate`; default: the paper's 32 metrics (for top-label input,
        the max-prob ones it allows).
    num_bins : int or sequence of int, default (10, 15, 20, 30, 40, 50)
    sample_weight : tensor of shape (N,), optional
    confidence, correct, predicted, num_classes : optional
        Top-label input instead of ``preds``/``target`` (``predicted`` with ``num_classes``
        for class-conditional metrics).

    Returns
    -------
    calibkit.space.Evaluation
        Equal to :func:`calibkit.evaluate` of the same arrays to 1e-12.

    Examples
    --------
    >>> import torch, calibkit
    >>> from calibkit.torch import evaluate
    >>> g = torch.Generator().manual_seed(0)
    >>> p = torch.softmax(torch.randn(200, 3, generator=g), dim=1)
    >>> y = torch.randint(0, 3, (200,), generator=g)
    >>> ev = evaluate(p, y, ["ECE", "ACE"], num_bins=10)
    >>> bool(abs(ev.get("ACE", 10) - calibkit.ace(y.numpy(), p.numpy(), num_bins=10)) < 1e-12)
    True
    """
    from .._toplabel import toplabel_space

    top = confidence is not None or correct is not None or predicted is not None
    if top:
        space = toplabel_space(space, predicted is not None)
    elif space is None:
        from ..binned.spec import metric_space

        space = metric_space()
    if num_classes is None and preds is not None and getattr(preds, "ndim", 0) == 2:
        num_classes = int(preds.shape[1])
    elif num_classes is None and preds is not None:
        num_classes = 2  # binary P(y=1)
    m = CalibrationError(space, num_bins, num_classes=num_classes)
    if top:
        m.update(sample_weight=sample_weight, confidence=confidence, correct=correct,
                 predicted=predicted)
    else:
        m.update(preds, target, sample_weight=sample_weight)
    return m.evaluation()
