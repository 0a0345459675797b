"""Every docstring example in the package runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import calibkit
from calibkit.errors import MissingDependencyError

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(calibkit.__path__, prefix="calibkit.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except MissingDependencyError as exc:  # an optional extra (calibkit.torch needs PyTorch)
        pytest.skip(str(exc))
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
