"""The public module paths (calibkit/_paths.py): one module object under two names, submodules
imported on first use, and objects pickled under the previous release's module names."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

import calibkit
from calibkit import _paths


@pytest.mark.parametrize("name, target", sorted(_paths.PUBLIC_PATHS.items()))
def test_a_public_path_is_the_module_itself(name, target):
    public = importlib.import_module(f"calibkit.{name}")
    assert public is sys.modules[target] is importlib.import_module(target)
    assert getattr(calibkit, name) is public
    # the module keeps its own spec (its relative imports and importlib.reload need it)
    assert public.__spec__.name == target == public.__name__


def test_from_imports_and_attribute_access():
    from calibkit.dask import evaluate as dask_evaluate
    from calibkit.space import MetricSpec, evaluate

    assert evaluate is calibkit.evaluate and MetricSpec is calibkit.MetricSpec
    assert callable(dask_evaluate)
    assert calibkit.evaluation is calibkit.space
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        calibkit.nope  # noqa: B018
    assert "plots" in dir(calibkit) and "_space" not in dir(calibkit)


def test_import_calibkit_stays_light():
    code = ("import sys, calibkit; "
            "print(sorted(m for m in ('sklearn', 'matplotlib', 'dask', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_objects_pickled_under_the_old_module_names_load():
    acc = calibkit.Accumulator(["ECE", "ACE"], num_bins=5)
    rng = np.random.default_rng(0)
    acc.update(rng.integers(0, 3, 50), rng.dirichlet(np.ones(3), 50))
    blob = pickle.dumps(acc, protocol=0)
    for new, old in (("calibkit.binned.spec", "calibkit._space"),
                     ("calibkit.scale.kept", "calibkit._kept"),
                     ("calibkit.scale.streaming", "calibkit.streaming")):
        assert new.encode() in blob
        blob = blob.replace(new.encode(), old.encode())
    again = pickle.loads(blob)
    assert again == acc
    np.testing.assert_array_equal(np.asarray(again.compute().values),
                                  np.asarray(acc.compute().values))
