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


def _stub_constants() -> set[str]:
    tree = ast.parse(STUB.read_text())
    return {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}


def test_stub_lists_every_public_native_function():
    runtime = {n for n, o in vars(_native).items() if callable(o) and not n.startswith("_")}
    assert set(_stub_functions()) == runtime


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
