"""Public module paths: where ``calibkit.<name>`` lives in the packages by concept.

calibkit's code is organised in packages by concept (``binned/``, ``binfree/``, ``trust/``,
``scale/``, ``io/``, see docs/architecture.md); the module paths users import
(``calibkit.space``, ``calibkit.dask``, ``calibkit.streaming``, ...) are stable public names.
This table says which module each public path is; :class:`PublicPaths` makes
``import calibkit.dask`` and ``from calibkit.space import evaluate`` give that very module
object (one module under two names, never a second copy), and ``calibkit.__getattr__``
(PEP 562) imports a submodule on first attribute access, so ``import calibkit`` stays light:
``calibkit.plots`` imports matplotlib only when a plot is drawn, ``calibkit.dask`` imports dask
only when used.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

__all__ = ["PUBLIC_PATHS", "MOVED_PATHS", "SUBMODULES", "PublicPaths", "install"]

#: ``calibkit.<key>`` is the module ``<value>``.
PUBLIC_PATHS: dict[str, str] = {
    "space": "calibkit.binned.space",
    "evaluation": "calibkit.binned.space",
    "metrics": "calibkit.binned.metrics",
    "bins": "calibkit.binned.bins",
    "multilabel": "calibkit.binned.multilabel",
    "diagnostics": "calibkit.binned.diagnostics",
    "streaming": "calibkit.scale.streaming",
    "dask": "calibkit.scale.dask",
}

#: Private modules of the release before the packages (``calibkit._space``, ...): not API,
#: but objects pickled by that release name them, so they resolve to the modules that now hold
#: those classes. Not attributes of ``calibkit``.
MOVED_PATHS: dict[str, str] = {
    "_space": "calibkit.binned.spec",
    "_binstats": "calibkit.binned.table",
    "_groups": "calibkit.binned.groups",
    "_kept": "calibkit.scale.kept",
    "_sketch": "calibkit.scale.sketch",
    "_select": "calibkit.scale.select",
    "_binfree": "calibkit.binfree.common",
    "smooth": "calibkit.binfree.smooth",
    "ks": "calibkit.binfree.ks",
}

_TARGETS = {**PUBLIC_PATHS, **MOVED_PATHS}

#: Submodules and packages reachable as attributes of ``calibkit`` after ``import calibkit``.
SUBMODULES: frozenset[str] = frozenset(PUBLIC_PATHS) | {
    "analysis", "binary", "binfree", "binned", "cli", "compat", "errors", "io", "plots",
    "recalibration", "reference", "scale", "torch", "trust",
}


class PublicPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of the public paths (and the moved private ones): the module is the one
    in :data:`PUBLIC_PATHS` (or :data:`MOVED_PATHS`)."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package == "calibkit" and name in _TARGETS:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(_TARGETS[spec.name.rpartition(".")[2]])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (create_module imported the module under its own name); only undo the
        import system's one override: it sets ``__spec__`` to the public path's spec, and the
        module's own relative imports need the spec of its real name."""
        alias = module.__spec__
        if alias is not None and alias.loader_state is not None:
            module.__spec__ = alias.loader_state


def install() -> None:
    """Put :class:`PublicPaths` on ``sys.meta_path`` once."""
    if not any(isinstance(f, PublicPaths) for f in sys.meta_path):
        sys.meta_path.append(PublicPaths())
