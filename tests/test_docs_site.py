"""The documentation site's sources (docs/): every public name has an API entry, and the guide's
examples run. Fast: nothing here builds the site (``scripts/build-docs`` does, in CI)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import calibkit

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
API = DOCS / "api"

#: each public module and the API page that documents it
PUBLIC = {
    "calibkit": "calibkit.rst",
    "calibkit.space": "space.rst",
    "calibkit.recalibration": "recalibration.rst",
    "calibkit.binary": "binary.rst",
    "calibkit.plots": "plots.rst",
    "calibkit.streaming": "streaming.rst",
    "calibkit.dask": "dask.rst",
    "calibkit.multilabel": "multilabel.rst",
    "calibkit.diagnostics": "diagnostics.rst",
    "calibkit.compat.uncertainty_metrics": "compat_uncertainty_metrics.rst",
    "calibkit.analysis": "analysis.rst",
    "calibkit.io": "io.rst",
    "calibkit.torch": "torch.rst",
    "calibkit.errors": "errors.rst",
}
#: modules that exist only with an optional dependency, or not yet
OPTIONAL = {"calibkit.binary", "calibkit.torch"}


def _module(name: str):
    """The module, or None where it exists but needs a package not installed here (torch)."""
    rel = Path("python", *name.split("."))
    if name in OPTIONAL and not (ROOT / rel / "__init__.py").exists() and not (
        ROOT / rel.with_suffix(".py")
    ).exists():
        pytest.skip(f"{name} does not exist (yet)")
    try:
        return importlib.import_module(name)
    except ImportError as err:
        if name in OPTIONAL and (err.name or "").split(".")[0] in {"torch", "torchmetrics"}:
            return None
        raise


def _entries(page: Path) -> set[str]:
    """Names the page documents: autosummary entries and the top-level cross-references."""
    text = page.read_text()
    names = set(re.findall(r"^   ([A-Za-z_][\w.]*)\s*$", text, flags=re.M))
    names |= {n.rpartition(".")[2] for n in re.findall(r":obj:`~?calibkit\.([\w.]+)`", text)}
    names |= set(re.findall(r"``calibkit\.(__\w+__)``", text))
    return names


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_has_an_api_entry(name):
    module = _module(name)
    page = API / PUBLIC[name]
    if module is None:
        assert page.exists(), f"{name} has no API page {page.relative_to(ROOT)}"
        return
    assert page.exists(), f"{name} has no API page {page.relative_to(ROOT)}"
    assert f".. module:: {name}\n" in page.read_text()
    documented = _entries(page)
    missing = [n for n in module.__all__ if n not in documented]
    assert not missing, f"{name}.__all__ names without an entry in {page.name}: {missing}"
    # a name documented on another page ("Also here") must be the very same object
    for ref in re.findall(r":obj:`~?(calibkit\.[\w.]+)`", page.read_text()):
        where, _, n = ref.rpartition(".")
        if n in module.__all__:
            assert getattr(importlib.import_module(where), n) is getattr(module, n), (name, ref)


def test_every_api_page_is_in_the_reference_toctree():
    index = (API / "index.rst").read_text()
    for page in API.glob("*.rst"):
        if page.name != "index.rst":
            assert f"\n   {page.stem}\n" in index, f"{page.name} is not in docs/api/index.rst"


def test_every_public_submodule_has_a_page():
    """A new public submodule (an attribute of calibkit without an underscore) gets a page."""
    internal = {"binfree", "binned", "cli", "compat", "reference", "scale", "trust", "metrics",
                "bins", "evaluation"}  # packages by concept, the CLI, and paths shown elsewhere
    for sub in sorted(calibkit._paths.SUBMODULES - internal):
        assert f"calibkit.{sub}" in PUBLIC, f"calibkit.{sub} has no API page in PUBLIC"


def test_every_page_is_in_a_toctree():
    """A note added to docs/ (or a guide page) must be reachable: the build's -W fails otherwise."""
    listed = set()
    for index in (DOCS / "index.md", DOCS / "notes.md", DOCS / "guide" / "index.md"):
        folder = index.parent.relative_to(DOCS).as_posix()
        for block in re.findall(r"```\{toctree\}\n(.*?)```", index.read_text(), flags=re.S):
            for entry in re.findall(r"^([\w/-]+)$", block, flags=re.M):
                listed.add(entry if folder == "." else f"{folder}/{entry}")
    pages = [p.relative_to(DOCS).with_suffix("").as_posix()
             for p in [*DOCS.glob("*.md"), *(DOCS / "guide").glob("*.md")] if p.name != "index.md"]
    missing = [p for p in pages if p not in listed]
    assert not missing, f"pages in no toctree (docs/index.md, notes.md, guide/index.md): {missing}"


GUIDE = sorted([DOCS / "index.md", *(DOCS / "guide").glob("*.md")])


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


CASES = [(p, i) for p in GUIDE for i in range(len(_python_blocks(p)))]


@pytest.mark.parametrize("path,i", CASES, ids=[f"{p.stem}-{i}" for p, i in CASES])
def test_guide_examples_run(path, i, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _python_blocks(path)[i]
    exec(compile(code, f"{path.relative_to(ROOT)} python block {i}", "exec"), {})
