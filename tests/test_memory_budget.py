"""The memory budget (calibkit._budget): every size a caller's arguments choose is checked
before anything is allocated, and refused with a MemoryBudgetError naming the argument (issue 25,
items 3 and 4: these calls aborted the process or asked for gigabytes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit._budget import DEFAULT_MEMORY_BUDGET, ENV_VAR
from calibkit.errors import CalibkitError, InvalidParameterError, MemoryBudgetError

RNG = np.random.default_rng(0)
P = RNG.dirichlet(np.ones(10), 1000)
Y = RNG.integers(0, 10, 1000)


@pytest.fixture
def budget(monkeypatch):
    """The default budget during the test (no environment variable), restored after it."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    previous = calibkit.set_memory_budget(None)
    yield
    monkeypatch.delenv(ENV_VAR, raising=False)
    calibkit.set_memory_budget(previous)


# Each call asks for far more than the default 1 GiB (up to terabytes).
BOMBS = {
    "evaluate": lambda: calibkit.evaluate(Y, P, space=["ECE"], num_bins=range(1, 100_000)),
    "evaluate_pairs": lambda: calibkit.evaluate(confidence=P.max(1), correct=Y == P.argmax(1),
                                                space=["ECE"], num_bins=range(1, 100_000)),
    "accumulator": lambda: calibkit.Accumulator(num_bins=range(999_950, 1_000_000)).update(Y, P),
    "accumulator_pairs": lambda: calibkit.Accumulator(num_bins=range(999_950, 1_000_000)).update(
        confidence=P.max(1), correct=Y == P.argmax(1)),
    "smece_1e-8": lambda: calibkit.smece(Y, P, bandwidth=1e-8),
    "smece_1e-12": lambda: calibkit.smece([0, 1], [0.3, 0.8], bandwidth=1e-12),
    "smece_1e-300": lambda: calibkit.smece([0, 1], [0.3, 0.8], bandwidth=1e-300),
    "smece_subnormal": lambda: calibkit.smece([0, 1], [0.3, 0.8], bandwidth=1e-320),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_refused_by_name(name, budget):
    with pytest.raises(MemoryBudgetError) as err:
        BOMBS[name]()
    msg = str(err.value)
    assert ("num_bins" in msg or "bandwidth" in msg) and "memory budget" in msg
    assert isinstance(err.value, (InvalidParameterError, MemoryError))


def test_dask_sum_of_bin_counts_refused(budget):
    requires("dask.array")
    import dask.array as da

    y, p = da.from_array(Y, chunks=500), da.from_array(P, chunks=(500, 10))
    with pytest.raises(MemoryBudgetError, match="num_bins"):
        calibkit.dask.evaluate(y, p, space=["ECE"], num_bins=range(1, 100_000))


def test_sketch_size_budgeted(budget):
    calibkit.set_memory_budget(10 * 2**20)
    acc = calibkit.Accumulator("TACE", adaptive="sketch", sketch_k=65535)
    with pytest.raises(MemoryBudgetError, match="sketch_k"):
        acc.update(Y, P)
    assert acc.n_samples == 0  # refused before any state changed
    calibkit.set_memory_budget(None)
    acc.update(Y, P)
    assert acc.n_samples == 1000


def test_resamples_budgeted(budget):
    calibkit.set_memory_budget(4 * 2**20)  # the table itself fits, 8 resamples' copies not
    with pytest.raises(MemoryBudgetError, match="n_resamples"):
        calibkit.confidence_interval(Y, P, "SCE", num_bins=2000, n_resamples=16)
    with pytest.raises(MemoryBudgetError, match="n_resamples"):
        calibkit.calibration_test(Y, P, "SCE", num_bins=5000, n_resamples=16)


def test_single_tables_and_primitive_budgeted(budget):
    calibkit.set_memory_budget(2**20)
    with pytest.raises(MemoryBudgetError):
        calibkit.sce(Y, P, num_bins=10_000)  # 10 groups x 10001 cells x 32 bytes = 3.2 MB
    with pytest.raises(MemoryBudgetError):
        calibkit.calibration_bins(Y, P, class_conditional=True, max_prob=False, num_bins=10_000)
    with pytest.raises(MemoryBudgetError):
        calibkit.multilabel.multilabel_gce((P > 0.1).astype(int), P, num_bins=10_000)
    assert calibkit.sce(Y, P, num_bins=1000) > 0  # 320 kB: within the budget


def test_set_and_read_budget(budget):
    assert calibkit.memory_budget() == DEFAULT_MEMORY_BUDGET
    assert calibkit.set_memory_budget(12345) is None
    assert calibkit.memory_budget() == 12345
    assert calibkit.set_memory_budget(None) == 12345
    for bad in (0, -1, 1.5, "1G", True):
        with pytest.raises(InvalidParameterError, match="nbytes"):
            calibkit.set_memory_budget(bad)
    assert calibkit.memory_budget() == DEFAULT_MEMORY_BUDGET


def test_raised_budget_admits_the_call(budget):
    calibkit.set_memory_budget(64 * 2**30)
    assert calibkit.smece([0, 1], [0.3, 0.8], bandwidth=1e-4) >= 0  # 100k grid points


@pytest.mark.parametrize("text, expected", [("2G", 2 * 2**30), ("512MiB", 512 * 2**20),
                                            ("1000", 1000), ("1.5k", 1536)])
def test_environment_variable(monkeypatch, budget, text, expected):
    monkeypatch.setenv(ENV_VAR, text)
    calibkit.set_memory_budget(None)  # read again
    assert calibkit.memory_budget() == expected


@pytest.mark.parametrize("text", ["", "lots", "0", "-5", "inf", "nanG"])
def test_bad_environment_variable(monkeypatch, budget, text):
    monkeypatch.setenv(ENV_VAR, text)
    calibkit.set_memory_budget(None)
    with pytest.raises(InvalidParameterError, match=ENV_VAR):
        calibkit.memory_budget()
    monkeypatch.delenv(ENV_VAR)


CHILD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
    import numpy as np
    import calibkit
    sys.path.insert(0, {tests!r})
    from test_memory_budget import BOMBS
    for name, call in sorted(BOMBS.items()):
        try:
            call()
        except calibkit.CalibkitError as exc:
            print(name, type(exc).__name__, flush=True)
        else:
            print(name, "no error", flush=True)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_bombs_end_in_calibkit_errors_under_2gib_address_space():
    """Each bomb in a child process limited to 2 GiB of address space: a CalibkitError each,
    never an abort (SIGABRT from a failed Rust allocation) or a MemoryError from NumPy."""
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    # thread pools reserve address space per thread: keep them small on many-core machines
    for var in ("RAYON_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                "MKL_NUM_THREADS"):
        env[var] = "2"
    code = CHILD.format(tests=os.path.dirname(__file__))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert lines == {name: "MemoryBudgetError" for name in BOMBS}, out.stdout


def test_memory_budget_error_in_family():
    assert issubclass(MemoryBudgetError, CalibkitError)
    assert "MemoryBudgetError" in calibkit.__all__ and "set_memory_budget" in calibkit.__all__
