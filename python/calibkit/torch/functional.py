"""One-shot metrics of tensors on their device: :func:`evaluate`, and the device path of the
public functions.

The tables are built where the tensors are (:func:`calibkit.torch.tables.space_tables`: torch
ops on a device, the engine's kernels on the CPU) and only they cross to the host, where the
one reduction gives the values. :func:`device_gce` and :func:`device_evaluate` are
:func:`calibkit.gce` (so the named metrics) and :func:`calibkit.evaluate` given a PyTorch tensor
on a device (:func:`calibkit._arraylike.device_tensor`): the same keywords, rules and errors,
each keyword honoured on the device, but for the calls they leave to the host copy by returning
None (docs/torch.md): a multilabel (N, K) label matrix, and empty input (whose copy costs
nothing and which the host refuses with its usual error).
"""

from __future__ import annotations

import types

import numpy as np
import torch

from .. import _toplabel
from .._budget import check_tables
from .._params import as_bin_counts, check_gce_params, check_weight_total
from .._validate import is_multilabel, warn_binary_reading
from ..binned.auto_bins import resolve_auto, resolve_num_bins, warn_if_few
from ..binned.debias import check_debias, debiased_l2
from ..binned.space import Evaluation, check_space_tables
from ..binned.spec import DEFAULT_NUM_BINS, MetricSpec, _as_space
from ..binned.table import reduce_table
from .checks import matrix_scores, pair_scores
from .tables import Scores, space_tables, space_values

__all__ = ["evaluate", "device_gce", "device_evaluate"]


def evaluate(preds=None, target=None, space=None, num_bins=DEFAULT_NUM_BINS, *,
             sample_weight=None, confidence=None, correct=None, predicted=None,
             num_classes: int | None = None) -> Evaluation:
    """Every metric of ``space`` at every bin count, computed on the tensors' device.

    Parameters
    ----------
    preds : tensor of shape (N, K), (N, 1) or (N,)
        Probabilities (binary P(y=1) when 1-D), on any device.
    target : tensor of shape (N,)
        Integer labels in ``[0, K)`` (NumPy arrays and tensors on another device are moved to
        ``preds``' device).
    space : metric or sequence of metrics, optional
        As for :func:`calibkit.evaluate`; default: the paper's 32 metrics (for top-label input,
        the max-prob ones it allows).
    num_bins : int, sequence of int or "auto", default (10, 15, 20, 30, 40, 50)
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
    ev = device_evaluate(target, preds, space, num_bins, confidence=confidence, correct=correct,
                         predicted=predicted, num_classes=num_classes,
                         sample_weight=sample_weight)
    if ev is None:  # the host path's calls (multilabel, empty input)
        from ..binned.space import evaluate as host_evaluate

        ev = host_evaluate(target, preds, space, num_bins, confidence=confidence,
                           correct=correct, predicted=predicted, num_classes=num_classes,
                           sample_weight=sample_weight)
    return ev


def _scores(labels, probs, confidence, correct, predicted, num_classes, sample_weight,
            top: bool) -> Scores:
    """Checked scores on the device of ``probs`` (``confidence`` for top-label input); the
    vectors given as tensors on another device are moved there (one vector each)."""
    first = confidence if top else probs
    dev = first.device if isinstance(first, torch.Tensor) else None

    def here(x):
        return x.to(dev) if isinstance(x, torch.Tensor) and dev is not None and \
            x.device != dev else x

    if top:
        sc = pair_scores(confidence, here(correct), here(predicted), num_classes,
                         here(sample_weight), None)
    else:
        warn_binary_reading(labels, probs)
        sc = matrix_scores(here(labels), probs, here(sample_weight), None, None)
    if sc.weight is not None and sc.n:
        check_weight_total(float(sc.weight.sum()))  # the host's rule: a positive total
    return sc


def _rows(sc: Scores):
    """What :func:`calibkit.binned.auto_bins.resolve_auto` reads of top-label pairs."""
    return types.SimpleNamespace(n=sc.n, k=sc.num_classes)


def device_gce(labels=None, probs=None, *, confidence=None, correct=None, predicted=None,
               num_classes=None, binning="even", max_prob=True, class_conditional=False,
               threshold=0.0, norm="l1", num_bins=15, sample_weight=None,
               debias=False) -> float | None:
    """:func:`calibkit.gce` of tensors on a device (flags already checked), or None for the host
    path (a multilabel label matrix, empty input).

    Every keyword is honoured: the one-metric table is built on the device (weighted
    all-probabilities adaptive tables from the kept scores on the host, as
    :func:`calibkit.torch.tables.adaptive_table` does), ``debias`` and ``"auto"`` bins read it
    on the host as the table path of :func:`calibkit.gce` does (``"auto"`` warns alike).
    """
    top = _toplabel.is_top_label(labels, probs, confidence, correct, predicted, num_classes)
    if not top and is_multilabel(labels, probs):
        return None
    auto = isinstance(num_bins, str)
    binning, norm, threshold, b = check_gce_params(binning, norm, threshold,
                                                   1 if auto else num_bins)
    debias = check_debias(debias, norm)
    if top:
        _toplabel.require_top_label(types.SimpleNamespace(predicted=predicted),  # type: ignore
                                    max_prob, class_conditional, "gce")
    sc = _scores(labels, probs, confidence, correct, predicted, num_classes, sample_weight, top)
    if not sc.n:
        return None
    if auto:
        b = resolve_auto(num_bins, labels, probs, _rows(sc) if top else None,
                         max_prob=max_prob, class_conditional=class_conditional)
    check_tables(sc.num_classes if class_conditional else 1, (b,))
    spec = MetricSpec(binning, max_prob, class_conditional, threshold, norm)
    c, s, o = space_tables(sc, [spec], (b,))[(binning, max_prob, class_conditional, threshold, b)]
    if auto:
        warn_if_few(c)
    if debias:
        return debiased_l2(c, s, o, class_conditional)
    return reduce_table(c, s, o, norm, class_conditional)


def device_evaluate(labels=None, probs=None, space=None, num_bins=DEFAULT_NUM_BINS, *,
                    confidence=None, correct=None, predicted=None, num_classes=None,
                    sample_weight=None, binning_free: bool = False) -> Evaluation | None:
    """:func:`calibkit.evaluate` of tensors on a device (``binning_free`` already checked), or
    None for the host path (a multilabel label matrix, empty input).

    Every keyword is honoured: the tables of every grouping and bin count are built on the
    device (:func:`calibkit.torch.tables.space_tables`); ``binning_free=True`` gives the
    binning-free estimators of the top-label (confidence, correct) vectors, which cross to the
    host.
    """
    top = _toplabel.is_top_label(labels, probs, confidence, correct, predicted, num_classes)
    if not top and is_multilabel(labels, probs):
        return None
    space = _toplabel.toplabel_space(space, predicted is not None) if top else _as_space(space)
    sc = _scores(labels, probs, confidence, correct, predicted, num_classes, sample_weight, top)
    if not sc.n:
        return None
    if isinstance(num_bins, str):
        num_bins = (resolve_auto(num_bins, None, None, _rows(sc)) if top
                    else resolve_num_bins(num_bins, labels, probs))
    bins = as_bin_counts(num_bins)[0]
    for spec in space:
        for b in bins:
            check_gce_params(spec.binning, spec.norm, spec.threshold, b)
    check_space_tables(space, bins, sc.num_classes)
    values = space_values(space_tables(sc, space, bins), space, bins)
    ev = Evaluation(
        values, space, bins, n_samples=sc.n,
        num_classes=None if top and predicted is None else sc.num_classes, top_label_only=top,
        binary_1d=not top and (np.ndim(probs) == 1 or tuple(np.shape(probs)[-1:]) == (1,)))
    if binning_free:
        from ..binfree.estimators import binning_free as _binning_free

        host = [None if x is None else x.cpu().numpy() for x in (sc.confidence, sc.correct,
                                                                  sc.weight)]
        ev.binning_free = _binning_free(confidence=host[0], correct=host[1],
                                        sample_weight=host[2])
    return ev
