"""The layout rules of issue 30, checked: no Python module over 700 lines, no Rust file over
800 lines before its tests (a `#[cfg(test)]` module at the end, or a `tests*.rs` file)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PY_MAX = 700
RUST_MAX = 800


def _rust_code_lines(path: Path) -> int:
    """Lines before the file's test module (`#[cfg(test)]` at column 0)."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") and i + 1 < len(lines) and "mod " in lines[i + 1]:
            return i
    return len(lines)


def test_python_modules_are_at_most_700_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "python" / "calibkit").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > PY_MAX}
    assert not long, f"Python modules over {PY_MAX} lines (split them by concept): {long}"


def test_rust_files_are_at_most_800_lines_besides_tests():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "rust").rglob("*.rs")
            if not p.name.startswith("tests") and (n := _rust_code_lines(p)) > RUST_MAX}
    assert not long, f"Rust files over {RUST_MAX} lines before their tests: {long}"


def test_the_check_sees_the_files():
    # a wrong root would make both checks pass vacuously
    assert len(list((ROOT / "python" / "calibkit").rglob("*.py"))) > 50
    assert len(list((ROOT / "rust").rglob("*.rs"))) > 30
