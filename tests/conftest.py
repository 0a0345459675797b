"""Shared test configuration: hypothesis profiles and access to the real data in ../shared/data.

Hypothesis profile: set ``CALIBKIT_HYPOTHESIS_PROFILE`` to ``ci`` (fast, the default when the
``CI`` environment variable is set), ``dev`` (the default otherwise) or ``thorough``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(
    os.environ.get("CALIBKIT_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)

#: Where the real classifier outputs live: ``$CALIBKIT_SHARED_DATA`` or ``../shared/data``
#: relative to the repository root.
SHARED_DATA = Path(
    os.environ.get(
        "CALIBKIT_SHARED_DATA", Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    )
)


def shared_data_path(name: str) -> Path:
    """Path of ``name`` in the shared data folder, or skip the calling test with the reason."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real data file {name} not found in {SHARED_DATA} (set CALIBKIT_SHARED_DATA)")
    return path


def load_shared(name: str) -> dict[str, np.ndarray]:
    """Load one ``.npz`` of the shared data as a dict of arrays (skips when absent)."""
    with np.load(shared_data_path(name)) as f:
        return {k: f[k] for k in f.files}


@pytest.fixture
def shared():
    """Fixture form of :func:`load_shared`."""
    return load_shared


#: Top-level modules that the README's test command installs (the ``test`` extra and
#: ``scripts/install-test-peers``). Under ``CI`` a test skipped because one of them cannot be
#: imported FAILS instead: CI must never pass while silently skipping a cross-check.
CI_REQUIRED_MODULES = frozenset(
    {"uncertainty_metrics", "sklearn", "matplotlib", "dask", "pandas", "datasketches", "tqdm"}
)


def missing_required_module(reason: str) -> str | None:
    """Name of the CI-required module a ``pytest.importorskip`` skip reason is about, if any."""
    import re

    m = re.match(r"could not import '([\w.]+)'", reason)
    if m and m.group(1).split(".")[0] in CI_REQUIRED_MODULES:
        return m.group(1)
    return None


def _fail_if_required_missing(report) -> None:
    if not os.environ.get("CI") or not report.skipped or not isinstance(report.longrepr, tuple):
        return
    module = missing_required_module(str(report.longrepr[2]).removeprefix("Skipped: "))
    if module is not None:
        report.outcome = "failed"
        report.longrepr = (
            f"{module} is missing but CI=true: run the README's test command "
            '(pip install ".[test]" && python scripts/install-test-peers && ...)'
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_if_required_missing(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_if_required_missing(outcome.get_result())
