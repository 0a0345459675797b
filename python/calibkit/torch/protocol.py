"""The metric protocol of torchmetrics, for when torchmetrics is not installed.

:class:`MetricProtocol` is the part of ``torchmetrics.Metric`` that
:class:`calibkit.torch.CalibrationError` uses: ``add_state`` (a tensor reduced by ``"sum"`` or
``"max"``, or a list of tensors concatenated across ranks, ``"cat"``), ``update``,
``compute`` (which first synchronises the state across the ranks of ``torch.distributed`` when
it is initialised, and restores the local state afterwards), ``reset``, ``forward`` (update
with the batch and return the batch's own value) and ``.to(device)`` moving the state. With
torchmetrics installed, ``CalibrationError`` subclasses ``torchmetrics.Metric`` instead (and
so works with ``MetricCollection`` and Lightning's ``self.log``).

Examples
--------
>>> import torch
>>> class Total(MetricProtocol):
...     def __init__(self):
...         super().__init__()
...         self.add_state("total", torch.zeros(()), "sum")
...     def update(self, x):
...         self.total += x.sum()
...     def compute(self):
...         return self.total
>>> m = Total()
>>> float(m(torch.ones(3))), float(m(torch.ones(2))), float(m.compute())
(3.0, 2.0, 5.0)
"""

from __future__ import annotations

import copy
import functools

import torch

__all__ = ["MetricProtocol"]

_REDUCTIONS = ("sum", "max", "cat")


class MetricProtocol(torch.nn.Module):
    """``update`` / ``compute`` / ``reset`` / ``forward`` with states synchronised by
    ``torch.distributed`` (see the module docstring)."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.sync_on_compute = bool(kwargs.pop("sync_on_compute", True))
        self.process_group = kwargs.pop("process_group", None)
        if kwargs:
            from ..errors import InvalidParameterError

            raise InvalidParameterError(
                f"unknown keyword(s) {sorted(kwargs)}; without torchmetrics installed the metric "
                f"takes sync_on_compute= and process_group= only"
            )
        self._defaults: dict = {}
        self._reductions: dict = {}
        self._device = torch.device("cpu")
        self._update_count = 0
        wrapped = self.compute  # type: ignore[has-type]
        self.compute = functools.wraps(wrapped)(  # type: ignore[method-assign]
            lambda: self._synced(wrapped))

    @property
    def device(self) -> torch.device:
        """The device of the state."""
        return self._device

    def add_state(self, name: str, default, dist_reduce_fx: str) -> None:
        """A state reset to ``default`` (a tensor, or ``[]`` for a list of tensors)."""
        assert dist_reduce_fx in _REDUCTIONS
        self._defaults[name] = default if isinstance(default, list) else default.detach().clone()
        self._reductions[name] = dist_reduce_fx
        setattr(self, name, [] if isinstance(default, list) else default.detach().clone())

    def reset(self) -> None:
        """Back to the state of a fresh metric (on the same device)."""
        self._update_count = 0
        for name, default in self._defaults.items():
            setattr(self, name, [] if isinstance(default, list)
                    else default.to(self._device).clone())  # states are updated in place

    def _apply(self, fn, recurse: bool = True):  # .to(device), .cuda(), .cpu()
        out = super()._apply(fn, recurse)
        for name, default in self._defaults.items():
            value = getattr(self, name)
            if isinstance(value, list):
                setattr(self, name, [fn(v) for v in value])
            else:
                setattr(self, name, fn(value))
                self._device = getattr(self, name).device
            if not isinstance(default, list):
                self._defaults[name] = fn(default)
        return out

    def forward(self, *args, **kwargs):
        """Update with the batch and return the batch's own value."""
        saved = {n: copy.copy(getattr(self, n)) for n in self._defaults}
        count = self._update_count
        self.reset()
        try:
            self.update(*args, **kwargs)
            batch = self._local(self.compute)
        except BaseException:  # a refused batch leaves the state as it was
            for name, value in saved.items():
                setattr(self, name, value)
            self._update_count = count
            raise
        for name, how in self._reductions.items():
            mine, old = getattr(self, name), saved[name]
            if how == "cat":
                setattr(self, name, old + mine)
            elif how == "sum":
                setattr(self, name, old + mine)
            else:
                setattr(self, name, torch.maximum(old, mine))
        self._update_count = count + 1
        return batch

    def _local(self, fn):
        sync, self.sync_on_compute = self.sync_on_compute, False
        try:
            return fn()
        finally:
            self.sync_on_compute = sync

    def _synced(self, compute):
        dist = torch.distributed
        if not (self.sync_on_compute and dist.is_available() and dist.is_initialized()):
            return compute()
        saved = {n: getattr(self, n) for n in self._defaults}
        try:
            for name, how in self._reductions.items():
                setattr(self, name, _gather(getattr(self, name), how, self.process_group,
                                            self._device))
            return compute()
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


def _gather(value, how: str, group, device: torch.device):
    """``value`` reduced over the ranks of ``group``."""
    dist = torch.distributed
    if how in ("sum", "max"):
        out = value.clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM if how == "sum" else dist.ReduceOp.MAX,
                        group=group)
        return out
    # "cat": every rank's list concatenated (lists of 1-D tensors of one dtype per state)
    local = torch.cat(value) if value else None
    meta = [None if local is None else (local.dtype, int(local.shape[0]))]
    metas: list = [None] * dist.get_world_size(group)
    dist.all_gather_object(metas, meta[0], group=group)
    sizes = [0 if m is None else m[1] for m in metas]
    dtype = next((m[0] for m in metas if m is not None), None)
    if dtype is None:
        return []
    top = max(sizes)
    buf = torch.zeros(top, dtype=dtype, device=device)
    if local is not None:
        buf[:local.shape[0]] = local
    parts = [torch.empty_like(buf) for _ in sizes]
    dist.all_gather(parts, buf, group=group)
    return [p[:s] for p, s in zip(parts, sizes) if s]
