"""The _native.pyi stub must describe the compiled module: same functions, same parameters."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import calibkit
from calibkit import _native

STUB = Path(calibkit.__file__).with_name("_native.pyi")


def _stub_functions() -> dict[str, list[str]]:
    tree = ast.parse(STUB.read_text())
    return {
        node.name: [a.arg for a in node.args.args]
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def _stub_classes() -> dict[str, dict[str, list[str]]]:
    """Per stub class, its methods' parameters (``__init__``'s without ``self``, as the class's
    own signature reads)."""
    tree = ast.parse(STUB.read_text())
    return {
        node.name: {
            f.name: [a.arg for a in f.args.args][1 if f.name == "__init__" else 0:]
            for f in node.body if isinstance(f, ast.FunctionDef)
        }
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def _stub_constants() -> set[str]:
    tree = ast.parse(STUB.read_text())
    return {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}


def test_stub_lists_every_public_native_function():
    runtime = {n for n, o in vars(_native).items()
               if callable(o) and not isinstance(o, type) and not n.startswith("_")}
    assert set(_stub_functions()) == runtime


def test_stub_lists_every_native_class_and_its_methods():
    runtime = {n for n, o in vars(_native).items() if isinstance(o, type) and not n.startswith("_")}
    classes = _stub_classes()
    assert set(classes) == runtime
    for name, methods in classes.items():
        cls = getattr(_native, name)
        public = {m for m in vars(cls) if not m.startswith("_")}
        assert public == set(methods) - {"__init__"}, name
        for m, params in methods.items():
            sig = inspect.signature(cls if m == "__init__" else getattr(cls, m))
            names = [p for p in sig.parameters if p != "/"]
            assert names == params, (name, m)


def test_stub_parameters_match_runtime_signatures():
    for name, params in _stub_functions().items():
        sig = inspect.signature(getattr(_native, name))
        assert list(sig.parameters) == params, name


def test_stub_constants_exist():
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign):
            kind = {"float": float, "int": int}[node.annotation.id]
            assert isinstance(getattr(_native, node.target.id), kind), node.target.id
    assert _stub_constants() == {n for n in dir(_native) if n.isupper()}


def test_py_typed_marker_ships():
    assert STUB.with_name("py.typed").exists()
