"""The worked example of docs/spec.md, read from the document itself.

Tests take the example's rows and its table of 32 values from here, so the specification and
the tests share one copy of the numbers: editing a value in the document changes what the tests
expect, and a change in the code that breaks the document fails them.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

SPEC_PATH = Path(__file__).resolve().parent.parent / "docs" / "spec.md"

_ROW = re.compile(
    r"^\|\s*(\d+)\s*\|\s*(even|adaptive)\s*\|\s*(True|False)\s*\|\s*(True|False)\s*\|"
    r"\s*([0-9.]+)\s*\|\s*(l1|l2)\s*\|\s*([0-9.]+)\s*\|\s*$"
)


def spec_text() -> str:
    return SPEC_PATH.read_text(encoding="utf-8")


def worked_example() -> tuple[np.ndarray, np.ndarray]:
    """``(labels, probs)`` of the fenced ``example`` block: 'p_0 p_1 ... | label' per line."""
    text = spec_text()
    m = re.search(r"```example\n(.*?)```", text, re.S)
    assert m, "docs/spec.md has no ```example block"
    probs, labels = [], []
    for line in m.group(1).strip().splitlines():
        scores, label = line.split("|")
        probs.append([float(v) for v in scores.split()])
        labels.append(int(label))
    return np.array(labels, dtype=np.int64), np.array(probs, dtype=np.float64)


def table_32() -> list[tuple[int, dict, float]]:
    """``[(index, gce keywords, value)]`` from the 32-row table of the worked example."""
    rows = []
    for line in spec_text().splitlines():
        m = _ROW.match(line)
        if m:
            i, b, mp, cc, t, n, v = m.groups()
            kw = dict(binning=b, max_prob=mp == "True", class_conditional=cc == "True",
                      threshold=float(t), norm=n)
            rows.append((int(i), kw, float(v)))
    return rows


def num_bins() -> int:
    """B of the worked example (stated as 'B = 3' in its introduction)."""
    m = re.search(r"## Worked example\n\n.*?B = (\d+)", spec_text(), re.S)
    assert m, "docs/spec.md does not state B for the worked example"
    return int(m.group(1))
