"""Private state of :class:`calibkit.streaming.Accumulator`: the kept scores of the exact
adaptive mode, and state equality (used by ``Accumulator.__eq__``)."""

from __future__ import annotations

import numpy as np

from ._sketch import SketchGroups

__all__ = ["KeptScores", "equal_state"]


class KeptScores:
    """Kept scores per group, split by outcome; pieces merged geometrically (O(log n) pieces)."""

    def __init__(self, num_groups: int, threshold: float):
        self.threshold = threshold
        self.pieces: list[list[list[np.ndarray]]] = [[[], []] for _ in range(num_groups)]

    @staticmethod
    def _push(lst: list, arr: np.ndarray) -> None:
        if arr.size == 0:
            return
        lst.append(arr)
        while len(lst) >= 2 and lst[-2].size <= 2 * lst[-1].size:
            b = lst.pop()
            a = lst.pop()
            lst.append(np.concatenate([a, b]))

    def add(self, group: int, scores: np.ndarray, outcomes: np.ndarray) -> None:
        o = np.asarray(outcomes, dtype=bool)
        self._push(self.pieces[group][0], scores[~o])
        self._push(self.pieces[group][1], scores[o])

    def extend(self, other: KeptScores) -> None:
        for mine, theirs in zip(self.pieces, other.pieces):
            for side in (0, 1):
                for arr in theirs[side]:
                    self._push(mine[side], arr)

    def rows(self, threshold: float):
        """``(groups, scores, outcomes)`` of every kept score ``> threshold`` (compared in
        float64), group after group; scores keep their dtype, outcomes are float64."""
        gs, ss, os_ = [], [], []
        for g, sides in enumerate(self.pieces):
            for outcome, side in enumerate(sides):
                for arr in side:
                    kept = arr[arr > np.float64(threshold)]
                    gs.append(np.full(kept.size, g, dtype=np.int64))
                    ss.append(kept)
                    os_.append(np.full(kept.size, float(outcome)))
        if not ss:
            return np.empty(0, np.int64), np.empty(0), np.empty(0)
        return np.concatenate(gs), np.concatenate(ss), np.concatenate(os_)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for g in self.pieces for side in g for a in side)


def equal_state(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b))
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(equal_state(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(equal_state(x, y) for x, y in zip(a, b)))
    if isinstance(a, KeptScores):
        return isinstance(b, KeptScores) and equal_state(vars(a), vars(b))
    if isinstance(a, SketchGroups):
        return a == b
    return bool(a == b)
