"""Type aliases of the public signatures (for type checkers; ``py.typed`` promises them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

__all__ = ["NumBins", "NumBinsList"]

#: A bin count: an int >= 1, or ``"auto"`` (picked from the number of predictions).
NumBins = int | Literal["auto"]
#: One bin count or several (``evaluate``, ``Accumulator``).
NumBinsList = int | Sequence[int] | Literal["auto"]
