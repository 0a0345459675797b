""":class:`CalibrationError`: any metric of the paper's space as a torchmetrics-style metric.

The state is exact and small (docs/torch.md):

* **even binning** (ECE, CCE, SCE, MCE, ...): for each (grouping, threshold, bin count) the
  per-(group, bin) table's parts (count, the score sums' unit halves, outcome sum; float64),
  in one flat tensor ``tables`` reduced by ``"sum"`` across ranks. Each batch's parts are
  computed on the batch's device (:func:`calibkit.torch.tables.even_parts`; on CPU by the
  engine's own kernels, :func:`calibkit.torch.tables.engine_tables`) and added; their size
  does not grow with the data. Unweighted parts (on CPU the engine's exact unit sums as
  halves) are whole numbers, so their sum over any batching and any ranks is exact: the table
  of all the rows, the engine's bits (up to 2^28 scores per cell).
* **adaptive binning** (ACE, TACE, RMSCE, ...): equal-mass edges need every kept score, so the
  scores are kept, on their device, as lists concatenated across ranks (``"cat"``): the
  probability matrix (flattened; float64, which holds float32 exactly, so that every rank's
  lists have one dtype) with per-row ``(label, weight)`` when an
  all-probabilities adaptive metric is asked for, else the top-label ``confidence`` with
  per-row ``(correct, predicted, weight)``. :meth:`CalibrationError.compute` bins them on the
  device (:func:`calibkit.torch.tables.adaptive_table`), on CPU by the engine.
* ``rows`` (the total weight seen) and ``classes`` (K, reduced by ``"max"``).

Every value is the one reduction (:func:`calibkit.binned.table.reduce_table`) of those tables,
so it equals :func:`calibkit.evaluate` of the concatenated batches (float32 and float64, any
batching, any number of ranks): bit for bit without sample weights, to 1e-12 with them.
"""

from __future__ import annotations

import copy
import types
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .. import _toplabel
from .._params import as_bin_counts, as_num_classes, check_gce_params, check_table
from ..binned.space import Evaluation
from ..binned.spec import as_space
from ..errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from .checks import matrix_scores, pair_scores
from .tables import Scores, adaptive_of, even_of, parts_table, space_values

try:
    from torchmetrics import Metric as _Base
except ImportError:  # pragma: no cover - exercised where torchmetrics is absent
    from .protocol import MetricProtocol as _Base  # type: ignore[assignment]

__all__ = ["CalibrationError", "CalibrationErrorCore"]

def _cat(state) -> torch.Tensor | None:
    """A list state (or the tensor it became after a sync) as one tensor, None when empty."""
    if isinstance(state, torch.Tensor):
        return state if state.numel() else None
    parts = [s for s in state if s.numel()]
    if len(parts) == 1:
        return parts[0]
    return torch.cat(parts) if parts else None


#: The metric's states, and the attributes a forward changes (ours and torchmetrics').
_STATES = ("tables", "rows", "classes", "kept_scores", "kept_rows")
_FLAGS = ("_score_dtype", "_k_seen", "_update_count", "_to_sync", "_should_unsync",
          "compute_on_cpu", "_enable_grad", "_computed", "_is_synced")


class CalibrationErrorCore:
    """The body of :class:`CalibrationError`, on any metric base with torchmetrics' protocol
    (``add_state``, ``device``, ``update``/``compute``/``reset``/``forward``)."""

    if TYPE_CHECKING:  # what the metric base provides
        tables: torch.Tensor
        rows: torch.Tensor
        classes: torch.Tensor
        kept_scores: Any
        kept_rows: Any
        device: torch.device
        sync_on_compute: bool
        _is_synced: bool

        def add_state(self, name: str, default: Any, dist_reduce_fx: Any) -> None: ...
        def to(self, *args: Any, **kwargs: Any) -> Any: ...
        def sync_context(self, *args: Any, **kwargs: Any) -> Any: ...
        def _synced(self, fn: Any) -> Any: ...

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, metric="ECE", num_bins=15, *, num_classes: int | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        space, single = as_space(metric)
        if isinstance(num_bins, str):
            raise InvalidParameterError(
                f"num_bins: {num_bins!r} is not accepted by the streaming metric (the bins are "
                f"fixed before the data is seen); pass an int or a sequence of ints"
            )
        bins, single_bins = as_bin_counts(num_bins)
        k = None if num_classes is None else as_num_classes(num_classes)
        for s in space:
            for b in bins:
                check_gce_params(s.binning, s.norm, s.threshold, b)
                if k is not None:
                    check_table(k if s.class_conditional else 1, b)
        self.space = space
        self.num_bins = bins
        self.num_classes = k
        self._scalar = single and single_bins
        even = sorted({(s.max_prob, s.class_conditional, s.threshold)
                       for s in space if s.binning == "even"})
        if k is None and any(cc for _, cc, _ in even):
            names = [s.name for s in space if s.binning == "even" and s.class_conditional]
            raise InvalidParameterError(
                f"num_classes= is needed for the class-conditional even-binning metrics "
                f"{names}: their per-class tables are the metric's state; pass num_classes=K"
            )
        self._layout: dict = {}
        offset = 0
        for mp, cc, t in even:
            for b in bins:
                g = k if cc and k is not None else 1
                self._layout[(mp, cc, t, b)] = (offset, g, b + 1)
                offset += 4 * g * (b + 1)  # even_parts: counts, unit halves, outcomes
        adaptive = [s for s in space if s.binning == "adaptive"]
        self._keep_matrix = any(not s.max_prob for s in adaptive)
        self._keep_top = bool(adaptive) and not self._keep_matrix
        self._score_dtype: torch.dtype | None = None
        self._k_seen: int | None = None
        self._bound = False  # whether a batch fixed the device (see _state_device)
        self.add_state("tables", torch.zeros(offset, dtype=torch.float64), "sum")
        self.add_state("rows", torch.zeros((), dtype=torch.float64), "sum")
        self.add_state("classes", torch.zeros((), dtype=torch.float64), "max")
        self.add_state("kept_scores", [], "cat")
        self.add_state("kept_rows", [], "cat")
        if hasattr(self, "set_dtype"):  # torchmetrics: a rank that saw no batch syncs float64
            self.set_dtype(torch.float64)

    # -- update -----------------------------------------------------------------------------
    def update(self, preds=None, target=None, *, sample_weight=None, confidence=None,
               correct=None, predicted=None) -> None:
        """Add one batch: ``(preds, target)`` or top-label ``confidence=``, ``correct=``.

        Parameters
        ----------
        preds : tensor of shape (n, K), (n, 1) or (n,)
            Probabilities (binary P(y=1) when 1-D), on the metric's device.
        target : tensor of shape (n,)
            Integer labels in ``[0, K)``.
        sample_weight : tensor of shape (n,), optional
            Finite weights >= 0 (0 drops a row).
        confidence, correct, predicted : tensors of shape (n,), optional
            Top-label input instead of ``preds``/``target`` (max-prob metrics only;
            class-conditional ones need ``predicted`` and the metric's ``num_classes``).
        """
        dev = self._state_device()
        if confidence is not None or correct is not None or predicted is not None:
            if preds is not None or target is not None:
                raise InvalidParameterError(
                    "pass either preds and target, or confidence= and correct= (with predicted= "
                    "for class-conditional metrics), not both")
            if confidence is None or correct is None:
                raise InvalidParameterError(
                    "the top-label form needs both confidence= and correct=")
            k = self.num_classes if predicted is not None else None
            if predicted is not None and k is None:
                raise InvalidParameterError(
                    "predicted= needs the metric's num_classes= (class-conditional metrics "
                    "average over all K classes)")
            for s in self.space:
                _toplabel.require_top_label(
                    types.SimpleNamespace(predicted=predicted),  # type: ignore[arg-type]
                    s.max_prob, s.class_conditional, f"CalibrationError metric {s.name}")
            sc = pair_scores(confidence, correct, predicted, k, sample_weight, dev)
        else:
            if preds is None or target is None:
                raise InputTypeError("update needs preds and target (or confidence= and "
                                     "correct=)")
            sc = matrix_scores(target, preds, sample_weight, self.num_classes, dev)
            if self._k_seen is not None and self._k_seen != sc.num_classes:
                raise ShapeMismatchError(
                    f"preds has K={sc.num_classes} classes but earlier batches had "
                    f"K={self._k_seen}; every batch must have the same number of classes")
        if self._score_dtype is not None and sc.dtype != self._score_dtype:
            raise InputTypeError(
                f"this batch is {sc.dtype} but earlier batches were {self._score_dtype}; "
                f"mixing float dtypes is refused (results would depend on batching): cast with "
                f".to({self._score_dtype})")
        self._add(sc)

    def forward(self, *args, **kwargs):
        """Update with the batch and return the batch's own value; a batch that is refused
        leaves the metric as it was (torchmetrics' forward resets the state before the update)."""
        saved = {n: copy.copy(getattr(self, n)) for n in _STATES + _FLAGS if hasattr(self, n)}
        try:
            return super().forward(*args, **kwargs)  # type: ignore[misc]
        except BaseException:
            for name, value in saved.items():
                setattr(self, name, value)
            raise

    def _state_device(self) -> torch.device | None:
        """The device inputs must be on: the metric's, once it was moved off the CPU or has
        taken a batch (even before a ``reset()``); None for a fresh CPU metric, which follows
        its first batch's device."""
        dev = self.device
        return None if dev.type == "cpu" and not self._bound else dev

    def _add(self, sc: Scores) -> None:
        if sc.device != self.tables.device:
            self.to(sc.device)  # a fresh metric follows its first batch's device
        self._bound = True
        parts = []
        # a batch of no rows, or of zero weights only, adds nothing (the engine refuses it)
        nothing = sc.n == 0 or (sc.weight is not None and not bool((sc.weight > 0).any()))
        for (mp, cc, t, b), (_, g, nb) in self._layout.items():
            if nothing:
                parts.append(torch.zeros(4 * g * nb, dtype=torch.float64, device=sc.device))
                continue
            parts.append(even_of(sc, max_prob=mp, class_conditional=cc, threshold=t,
                                 num_bins=b).reshape(-1))
        if parts:
            self.tables += torch.cat(parts)
        w = sc.weight
        if w is None and (self._keep_matrix or self._keep_top):
            w = torch.ones(sc.n, dtype=torch.float64, device=sc.device)
        if self._keep_matrix:
            assert w is not None
            assert sc.probs is not None and sc.labels is not None
            self.kept_scores.append(sc.probs.reshape(-1).to(torch.float64))
            self.kept_rows.append(torch.stack([sc.labels.to(torch.float64), w], 1).reshape(-1))
        elif self._keep_top:
            assert w is not None
            pred = sc.predicted if sc.predicted is not None else torch.zeros_like(w)
            self.kept_scores.append(sc.confidence.to(torch.float64))
            self.kept_rows.append(torch.stack(
                [sc.correct.to(torch.float64), pred.to(torch.float64), w], 1).reshape(-1))
        self.rows += sc.weight.sum() if sc.weight is not None else float(sc.n)
        self.classes.clamp_(min=float(sc.num_classes))
        if sc.probs is not None:
            self._k_seen = sc.num_classes
        if sc.n:
            self._score_dtype = sc.dtype

    # -- compute ----------------------------------------------------------------------------
    def _kept(self, k: int) -> Scores | None:
        scores, rows = _cat(self.kept_scores), _cat(self.kept_rows)
        if scores is None or rows is None:
            return None
        if self._keep_matrix:
            meta = rows.reshape(-1, 2)
            probs = scores.reshape(-1, k)
            w = meta[:, 1]
            return Scores.of_matrix(probs, meta[:, 0].to(torch.int64),
                                    None if bool((w == 1).all()) else w)
        meta = rows.reshape(-1, 3)
        w = meta[:, 2]
        return Scores.of_pairs(scores, meta[:, 0] > 0.5, meta[:, 1].to(torch.int64), k,
                               None if bool((w == 1).all()) else w)

    def values(self) -> np.ndarray:
        """Every (metric, bin count) value, shape ``(len(space), len(num_bins))``, float64,
        of the state synced across ranks (as :meth:`compute` syncs it)."""
        if hasattr(self, "sync_context"):  # torchmetrics
            if self._is_synced:
                return self._values()
            with self.sync_context(should_sync=self.sync_on_compute, should_unsync=True):
                return self._values()
        return self._synced(self._values)

    def _values(self) -> np.ndarray:
        """:meth:`values` of this process's state as it is (synced or not)."""
        if not float(self.rows) > 0:
            raise ShapeMismatchError(
                "the metric has seen no predictions yet (or only zero weights); call "
                "update(preds, target) with a non-empty batch first")
        k = self.num_classes or int(self.classes)
        flat = self.tables.detach().cpu().numpy()
        tables: dict = {}
        for (mp, cc, t, b), (off, g, nb) in self._layout.items():
            tables[("even", mp, cc, t, b)] = parts_table(
                flat[off: off + 4 * g * nb].reshape(4, g, nb))
        sc = self._kept(k)
        groupings: dict = {}
        for spec in self.space:
            if spec.binning == "adaptive":
                groupings.setdefault((spec.max_prob, spec.class_conditional), set()).add(
                    spec.threshold)
        for (mp, cc), ts in groupings.items():
            assert sc is not None
            got = adaptive_of(sc, max_prob=mp, class_conditional=cc, thresholds=sorted(ts),
                              num_bins=self.num_bins)
            for (t, b), tab in got.items():
                tables[("adaptive", mp, cc, t, b)] = tab
        return space_values(tables, self.space, self.num_bins)

    def compute(self):
        """The value: a 0-d float64 tensor for one metric at one bin count, else a dict
        ``{"ECE": tensor, ...}`` (one bin count) or ``{"ECE@15": tensor, ...}``."""
        v = self._values()  # compute() has synced the state already
        dev = self.tables.device
        if self._scalar:
            return torch.tensor(v[0, 0], dtype=torch.float64, device=dev)
        one = len(self.num_bins) == 1
        return {(s.name if one else f"{s.name}@{b}"): torch.tensor(v[i, j], dtype=torch.float64,
                                                                   device=dev)
                for i, s in enumerate(self.space) for j, b in enumerate(self.num_bins)}

    def evaluation(self) -> Evaluation:
        """The values as a :class:`calibkit.space.Evaluation` table (``.get("ECE", 15)``)."""
        return Evaluation(self.values(), self.space, self.num_bins,
                          num_classes=self.num_classes or int(self.classes))

    def reset(self) -> None:
        super().reset()  # type: ignore[misc]
        self._score_dtype = None
        self._k_seen = None


class CalibrationError(CalibrationErrorCore, _Base):  # type: ignore[misc,valid-type]
    """Any metric of the paper's space as a torchmetrics metric (``update`` / ``compute``).

    Subclasses ``torchmetrics.Metric`` where torchmetrics is installed (so it syncs across
    ``torch.distributed`` ranks, works in ``MetricCollection`` and Lightning's ``self.log``),
    else :class:`calibkit.torch.protocol.MetricProtocol` (the same protocol, synced by
    ``torch.distributed``). Values equal :func:`calibkit.evaluate` of the concatenated
    batches to 1e-12; see :mod:`calibkit.torch.metric` for the state.

    Parameters
    ----------
    metric : metric or sequence of metrics, default "ECE"
        A name (``"ECE"``, ``"CCE"``, ``"SCE"``, ``"ACE"``, ``"TACE"``, ``"RMSCE"``,
        ``"MCE"``, a canonical name), a paper index 0-31, a :class:`calibkit.space.MetricSpec`,
        or several of them (a list, a :class:`calibkit.space.MetricSpace`).
    num_bins : int or sequence of int, default 15
    num_classes : int, optional
        K. Needed by class-conditional even-binning metrics (CCE, SCE: the per-class tables
        are the state) and by top-label input with ``predicted=``; otherwise taken from the
        first batch.
    **kwargs
        torchmetrics' own (``sync_on_compute``, ``process_group``, ...).

    Examples
    --------
    >>> import torch, calibkit
    >>> from calibkit.torch import CalibrationError
    >>> g = torch.Generator().manual_seed(0)
    >>> probs = torch.softmax(torch.randn(300, 4, generator=g), dim=1)
    >>> labels = torch.randint(0, 4, (300,), generator=g)
    >>> m = CalibrationError(["ECE", "ACE"], num_bins=10)
    >>> for i in range(0, 300, 100):
    ...     m.update(probs[i:i + 100], labels[i:i + 100])
    >>> out = m.compute()
    >>> ref = calibkit.evaluate(labels.numpy(), probs.numpy(), ["ECE", "ACE"], num_bins=10)
    >>> bool(abs(float(out["ACE"]) - ref.get("ACE", 10)) < 1e-12)
    True
    """
