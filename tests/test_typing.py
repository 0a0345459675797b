"""The types ``py.typed`` promises: mypy checks a user's script against the public API.

One mypy run (the project's configuration, pyproject.toml) over two small scripts: ``good.py``
must pass and reveal the documented types; every marked line of ``bad.py`` must be an error
(so the types are not ``Any``). mypy is in the test extra: :func:`conftest.requires`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import requires

ROOT = Path(__file__).resolve().parent.parent

_PRELUDE = """\
import numpy as np
import calibkit
from calibkit.recalibration import HistogramBinning, TemperatureScaling

labels = np.array([0, 1, 1, 0])
probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.7, 0.3]])
"""

#: (expression, regex of the type mypy reveals for it)
REVEALED = [
    ("calibkit.ece(labels, probs)", r"(builtins\.)?float"),
    ("calibkit.gce(labels, probs, num_bins='auto', norm='l2')", r"(builtins\.)?float"),
    ("calibkit.tace(labels, probs, num_bins=15)", r"(builtins\.)?float"),
    ("calibkit.evaluate(labels, probs, num_bins=[10, 15])", r"calibkit\..*\.Evaluation"),
    ("calibkit.evaluate(labels, probs, num_bins='auto')", r"calibkit\..*\.Evaluation"),
    ("calibkit.calibration_bins(labels, probs, num_bins='auto')",
     r"calibkit\..*\.CalibrationBins"),
    ("calibkit.calibration_bins(labels, probs).error('l2')", r"(builtins\.)?float"),
    ("calibkit.smece(labels, probs)", r"(builtins\.)?float"),
    ("calibkit.smece(labels, probs, return_bandwidth=True)", r"tuple\[(builtins\.)?float, .*\]"),
    ("calibkit.ksce(labels, probs)", r"(builtins\.)?float"),
    ("calibkit.decompose(labels, probs)", r"calibkit\..*\.Decomposition"),
    ("calibkit.binning_free(labels, probs)", r"calibkit\..*\.BinningFree"),
    ("calibkit.confidence_interval(labels, probs, num_bins='auto')",
     r"calibkit\..*\.ConfidenceInterval"),
    ("calibkit.signed_ece(labels, probs)", r"(builtins\.)?float"),
    ("calibkit.ece_sweep(labels, probs)", r"calibkit\..*\.SweepResult"),
    ("calibkit.softmax(probs)", r"numpy\.ndarray\[.*\]"),
    ("calibkit.Accumulator('ECE', num_bins='auto').update(labels, probs)",
     r"calibkit\..*\.Accumulator"),
    ("calibkit.Accumulator(['ECE', 'ACE'], num_bins=(10, 15)).compute()",
     r"Union\[(builtins\.)?float, calibkit\..*\.Evaluation\]|(builtins\.)?float \| calibkit\..*\.Evaluation"),
    ("TemperatureScaling(input='probs').fit(probs, labels)",
     r"calibkit\.recalibration\..*\.TemperatureScaling"),
    ("TemperatureScaling(input='probs').fit(probs, labels).temperature_", r"(builtins\.)?float"),
    ("TemperatureScaling(input='probs').predict_proba(probs)", r"numpy\.ndarray\[.*\]"),
]

#: Public functions whose keywords were renamed in calibkit 0.2: the renaming decorator
#: (``calibkit._params.renames``) must keep their types.
REVEALED_RENAMED = [
    ("calibkit.calibration_test(labels, probs)", r"calibkit\..*\.CalibrationTestResult"),
    ("HistogramBinning(input='probs').fit(probs, labels)",
     r"calibkit\.recalibration\..*\.HistogramBinning"),
]

#: Calls mypy must refuse: a wrong bin count, a misspelt keyword, a fitted attribute that
#: does not exist.
BAD = [
    "calibkit.ece(labels, probs, num_bins='many')",
    "calibkit.evaluate(labels, probs, num_bins=2.5)",
    "calibkit.gce(labels, probs, nrom='l2')",
    "TemperatureScaling(input='probs').fit(probs, labels).no_such_attribute_",
    "calibkit.ece(labels, probs) + 'text'",
]

_NOTE = re.compile(r'^(?P<file>[\w.]+):(?P<line>\d+): note: Revealed type is "(?P<type>.*)"$')
_ERROR = re.compile(r"^(?P<file>[\w.]+):(?P<line>\d+): error: ")


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory):
    requires("mypy")
    tmp = tmp_path_factory.mktemp("typing")
    start = _PRELUDE.count("\n") + 1
    good = _PRELUDE + "".join(f"reveal_type({e})\n" for e, _ in REVEALED + REVEALED_RENAMED)
    bad = _PRELUDE + "".join(f"{e}\n" for e in BAD)
    (tmp / "good.py").write_text(good)
    (tmp / "bad.py").write_text(bad)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary", "--hide-error-context",
         "good.py", "bad.py"],
        cwd=tmp, capture_output=True, text=True, timeout=600,
    )
    text = out.stdout + out.stderr
    revealed: dict[int, str] = {}
    errors: dict[str, set[int]] = {"good.py": set(), "bad.py": set()}
    for line in text.splitlines():
        if m := _NOTE.match(line):
            if m["file"] == "good.py":
                revealed[int(m["line"]) - start] = m["type"]
        elif m := _ERROR.match(line):
            errors.setdefault(m["file"], set()).add(int(m["line"]) - start)
    return revealed, errors, text


def test_public_api_type_checks(mypy_run):
    revealed, errors, text = mypy_run
    assert not errors["good.py"], text


@pytest.mark.parametrize("i", range(len(REVEALED)), ids=[e for e, _ in REVEALED])
def test_revealed_types(mypy_run, i):
    revealed, _, text = mypy_run
    expr, want = REVEALED[i]
    assert i in revealed, text
    assert re.fullmatch(want, revealed[i]), f"{expr}: mypy says {revealed[i]!r}, want {want!r}"


@pytest.mark.parametrize("i", range(len(REVEALED_RENAMED)), ids=[e for e, _ in REVEALED_RENAMED])
def test_renamed_keywords_keep_their_types(mypy_run, i):
    revealed, _, text = mypy_run
    expr, want = REVEALED_RENAMED[i]
    got = revealed.get(len(REVEALED) + i, "<none>")
    assert re.fullmatch(want, got), f"{expr}: mypy says {got!r}, want {want!r}"


def test_wrong_calls_are_type_errors(mypy_run):
    _, errors, text = mypy_run
    missed = [e for i, e in enumerate(BAD) if i not in errors["bad.py"]]
    assert not missed, f"mypy accepted {missed}:\n{text}"
