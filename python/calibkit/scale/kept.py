"""Private state of :class:`calibkit.streaming.Accumulator`: the kept scores of the exact
adaptive mode (with their sample weights, once a weighted batch was seen), and state equality
(used by ``Accumulator.__eq__``)."""

from __future__ import annotations

import numpy as np

from .._toplabel import kept_rows
from ..binned.table import grouped_bin_stats
from ..binned.units import ScoreUnits
from .sketch import SketchGroups

__all__ = ["KeptScores", "equal_state", "bin_rows"]


class KeptScores:
    """Kept scores per group, split by outcome; pieces merged geometrically (O(log n) pieces).

    Unweighted, only the scores are held (in their input dtype). Once a weighted batch arrives
    every piece gets a float64 weight array of the same length (earlier pieces weight 1), so
    each kept score keeps its weight through merges, copies and pickling.
    """

    def __init__(self, num_groups: int, threshold: float):
        self.threshold = threshold
        self.pieces: list[list[list[np.ndarray]]] = [[[], []] for _ in range(num_groups)]
        #: None (every weight is 1) or, parallel to ``pieces``, the weight of each kept score
        self.weights: list[list[list[np.ndarray]]] | None = None

    def _make_weighted(self) -> None:
        if self.weights is None:
            self.weights = [[[np.ones(a.size) for a in side] for side in g] for g in self.pieces]

    def _push(self, group: int, side: int, arr: np.ndarray, w) -> None:
        if arr.size == 0:
            return
        lst = self.pieces[group][side]
        wl = None if self.weights is None else self.weights[group][side]
        lst.append(arr)
        if wl is not None:
            wl.append(np.ones(arr.size) if w is None else np.asarray(w, dtype=np.float64))
        while len(lst) >= 2 and lst[-2].size <= 2 * lst[-1].size:
            b = lst.pop()
            a = lst.pop()
            lst.append(np.concatenate([a, b]))
            if wl is not None:
                wb = wl.pop()
                wa = wl.pop()
                wl.append(np.concatenate([wa, wb]))

    def add(self, group: int, scores: np.ndarray, outcomes: np.ndarray, weights=None) -> None:
        """Keep a group's scores (already filtered) with their outcomes and optional weights."""
        if weights is not None:
            self._make_weighted()
        o = np.asarray(outcomes, dtype=bool)
        for side, mask in ((0, ~o), (1, o)):
            self._push(group, side, scores[mask], None if weights is None else weights[mask])

    def extend(self, other: KeptScores) -> None:
        if other.weights is not None:
            self._make_weighted()
        for g, theirs in enumerate(other.pieces):
            for side in (0, 1):
                for i, arr in enumerate(theirs[side]):
                    w = None if other.weights is None else other.weights[g][side][i]
                    self._push(g, side, arr, w)

    def rows(self, threshold: float):
        """``(groups, scores, outcomes, weights)`` of every kept score ``> threshold`` (compared
        in float64; at threshold 0 every kept score, as the state keeps only scores its own
        threshold keeps, and top-label pairs keep an exact 0.0 there:
        :func:`calibkit._toplabel.kept_rows`), group after group; scores keep their dtype,
        outcomes and weights are float64; weights is None when no weighted batch was seen."""
        gs, ss, os_, ws = [], [], [], []
        for g, sides in enumerate(self.pieces):
            for outcome, side in enumerate(sides):
                for i, arr in enumerate(side):
                    keep = kept_rows(arr, threshold)
                    kept = arr[keep]
                    gs.append(np.full(kept.size, g, dtype=np.int64))
                    ss.append(kept)
                    os_.append(np.full(kept.size, float(outcome)))
                    if self.weights is not None:
                        ws.append(self.weights[g][outcome][i][keep])
        if not ss:
            w = None if self.weights is None else np.empty(0)
            return np.empty(0, np.int64), np.empty(0), np.empty(0), w
        w = None if self.weights is None else np.concatenate(ws)
        return np.concatenate(gs), np.concatenate(ss), np.concatenate(os_), w

    def __setstate__(self, state):  # pickles from before weights were kept
        self.__dict__.update(state)
        self.__dict__.setdefault("weights", None)

    @property
    def nbytes(self) -> int:
        held = sum(a.nbytes for g in self.pieces for side in g for a in side)
        if self.weights is not None:
            held += sum(a.nbytes for g in self.weights for side in g for a in side)
        return held


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
    if isinstance(a, (SketchGroups, ScoreUnits)):
        return a == b
    return bool(a == b)


def bin_rows(rows, num_groups: int, binning: str, threshold: float, bins, weighted: bool) -> dict:
    """``{B: [counts, sum_score, sum_outcome, edges]}`` of kept ``rows`` (groups, scores,
    outcomes, weights), binned by the one primitive (:func:`calibkit.binned.table.grouped_bin_stats`)
    at each bin count ``B``: an adaptive table's lower edge is the ``threshold`` the rows were
    kept above, and counts stay integers unless ``weighted`` (a sketch's weights count scores)."""
    g, s, o, w = rows
    out = {}
    for b in bins:
        c, ss, so, e = grouped_bin_stats(g, s, o, w, num_groups=num_groups, binning=binning,
                                         num_bins=b)
        if binning == "adaptive":
            e[:, 0] = threshold
        out[b] = [c if weighted else np.rint(c).astype(np.int64), ss, so, e]
    return out
