"""Private: per-group KLL quantile sketches (Apache DataSketches) for bounded-memory adaptive bins.

Each score group holds two KLL sketches of its kept scores: one for the scores whose outcome is
0 and one for those whose outcome is 1. Together they are a mergeable, bounded-size weighted
summary of the group's (score, outcome) pairs; :func:`calibkit.binned.table.grouped_bin_stats`
applies SPEC's adaptive rule to it, with the items' weights. See :class:`calibkit.streaming.Accumulator` for what is
approximate and by how much.
"""

from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError

__all__ = ["SketchGroups", "load_datasketches"]


def load_datasketches():
    """Import :mod:`datasketches`, or raise an ImportError that names the extra to install."""
    try:
        import datasketches
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "approximate adaptive binning (adaptive='sketch') needs Apache DataSketches: "
            "pip install 'calibkit[streaming]' (or pip install datasketches)"
        ) from exc
    return datasketches


class SketchGroups:
    """Two KLL sketches (outcome 0, outcome 1) per score group.

    Parameters
    ----------
    num_groups : int
    k : int
        KLL accuracy parameter (8 <= k <= 65535); rank error ~ 1/k^0.9 (see
        :meth:`rank_error`), size ~ 3k items once the stream is long.
    dtype : numpy.dtype
        float32 input uses ``kll_floats_sketch`` and float64 ``kll_doubles_sketch``, so scores
        are held exactly as given.
    """

    def __init__(self, num_groups: int, k: int, dtype):
        self.k = int(k)
        self.dtype = np.dtype(dtype)
        self._groups: list[list | None] = [None] * int(num_groups)  # [neg, pos] or None

    # -- construction helpers -----------------------------------------------------------------
    def _cls(self):
        ds = load_datasketches()
        return ds.kll_floats_sketch if self.dtype == np.float32 else ds.kll_doubles_sketch

    def _new_pair(self):
        cls = self._cls()
        return [cls(self.k), cls(self.k)]

    # -- updates ---------------------------------------------------------------------------------
    def update(self, group: int, scores: np.ndarray, outcomes: np.ndarray) -> None:
        """Add a group's kept scores (already filtered by the threshold)."""
        if scores.shape[0] == 0:
            return
        pair = self._groups[group]
        if pair is None:
            pair = self._groups[group] = self._new_pair()
        o = np.asarray(outcomes, dtype=bool)
        s = np.ascontiguousarray(scores, dtype=self.dtype)
        neg, pos = s[~o], s[o]
        if neg.size:
            pair[0].update(neg)
        if pos.size:
            pair[1].update(pos)

    def merge(self, other: SketchGroups) -> None:
        """Merge ``other`` into this (``other`` is left unchanged)."""
        for g, theirs in enumerate(other._groups):
            if theirs is None:
                continue
            mine_pair = self._groups[g]
            if mine_pair is None:
                mine_pair = self._groups[g] = self._new_pair()
            for mine, t in zip(mine_pair, theirs):
                if not t.is_empty():
                    mine.merge(t)

    def copy(self) -> SketchGroups:
        """An independent copy."""
        out = SketchGroups.__new__(SketchGroups)
        out.__setstate__(self.__getstate__())
        return out

    # -- queries ---------------------------------------------------------------------------------
    def count(self, group: int) -> int:
        """Exact number of scores the group has seen."""
        pair = self._groups[group]
        return 0 if pair is None else int(pair[0].n + pair[1].n)

    def weighted_sample(self, group: int):
        """The retained ``(values, weights, outcomes)`` of a group (float64, int64, float64)."""
        pair = self._groups[group]
        vals, wts, outs = [], [], []
        if pair is not None:
            for outcome, sk in enumerate(pair):
                items = list(sk)
                if items:
                    v, w = zip(*items)
                    vals.append(np.asarray(v, dtype=np.float64))
                    wts.append(np.asarray(w, dtype=np.int64))
                    outs.append(np.full(len(v), float(outcome)))
        if not vals:
            return np.empty(0), np.empty(0, np.int64), np.empty(0)
        return np.concatenate(vals), np.concatenate(wts), np.concatenate(outs)

    def rows(self):
        """Every group's retained items as the binning primitive's rows ``(groups, scores,
        outcomes, weights)``, each item weighted by the number of scores it stands for."""
        parts = [self.weighted_sample(i) for i in range(len(self._groups))]
        g = np.concatenate([np.full(v.size, i, np.int64) for i, (v, _, _) in enumerate(parts)])
        s, w, o = (np.concatenate([p[j] for p in parts]) for j in range(3))
        return g, s, o, w.astype(np.float64)

    def sketches(self, group: int):
        """The ``(outcome-0 sketch, outcome-1 sketch)`` of a group, or None if it saw nothing."""
        pair = self._groups[group]
        return None if pair is None else tuple(pair)

    def is_estimation_mode(self) -> bool:
        """True once any sketch has compacted (results may then differ from exact mode)."""
        return any(sk.is_estimation_mode() for pair in self._groups if pair for sk in pair)

    def rank_error(self, pmf: bool = False) -> float:
        """DataSketches' normalized rank error for this k (99th percentile of the max error).

        ``pmf=False``: single-sided error of a rank or quantile query; ``pmf=True``:
        double-sided error of the mass between two split points.
        """
        cls = self._cls()
        return float(cls.get_normalized_rank_error(self.k, bool(pmf)))

    @property
    def nbytes(self) -> int:
        """Serialized size of all sketches, in bytes."""
        return sum(len(sk.serialize()) for pair in self._groups if pair for sk in pair)

    # -- pickling ----------------------------------------------------------------------------------
    def __getstate__(self):
        return {
            "k": self.k,
            "dtype": self.dtype.str,
            "groups": [None if p is None else [sk.serialize() for sk in p] for p in self._groups],
        }

    def __setstate__(self, state):
        self.k = state["k"]
        self.dtype = np.dtype(state["dtype"])
        cls = self._cls()
        self._groups = [
            None if p is None else [cls.deserialize(b) for b in p] for p in state["groups"]
        ]

    def __eq__(self, other):
        if not isinstance(other, SketchGroups):
            return NotImplemented
        return self.__getstate__() == other.__getstate__()
