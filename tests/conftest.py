"""Shared test configuration: hypothesis profiles, access to the real data in ../shared/data, and
:func:`requires`, the one policy for a missing optional test peer (fail under CI, skip elsewhere).

Hypothesis profile: set ``CALIBKIT_HYPOTHESIS_PROFILE`` to ``ci`` (fast, the default when the
``CI`` environment variable is set), ``dev`` (the default otherwise) or ``thorough``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

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


def under_ci() -> bool:
    """True when the ``CI`` environment variable is set (``.ci/run`` sets ``CI=true``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def requires(module: str, why: str = "") -> ModuleType:
    """Import and return ``module``, an optional package a test needs (a cross-check peer or an
    optional dependency: everything the README's test command installs).

    The one policy for a missing peer: under CI (``CI=true``) the calling test FAILS, since CI
    must never pass while silently skipping a cross-check; elsewhere it is skipped with the
    install hint. Works in a test, a fixture or at module level (then the whole file is
    skipped or fails). A skip that is about the platform or about data (no shared data folder,
    a peer that does not support this Python) is not a missing peer: use ``pytest.skip``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        what = f"{module} ({why})" if why else module
        hint = ('run the README\'s test command (pip install ".[test]" && python '
                "scripts/install-test-peers && ...)")
        if under_ci():
            pytest.fail(f"{what} is missing but CI=true: {hint}; {exc}", pytrace=False)
        pytest.skip(f"{what} is not installed: {hint}", allow_module_level=True)


def count_passes(monkeypatch) -> list:
    """A list that gets one entry per pass ``calibkit.dask`` runs over the chunks (its
    ``_run_pass`` wrapped for the test)."""
    import calibkit.scale.dask as cdask

    calls: list = []
    original = cdask._run_pass

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(cdask, "_run_pass", counted)
    return calls
