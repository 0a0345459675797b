"""Every #[pyfunction] of the glue runs its body under errors::guard (no Rust panic reaches
Python): a new glue file that forgets it fails here, before any panic could."""

from __future__ import annotations

import re
from pathlib import Path

GLUE = Path(__file__).resolve().parents[1] / "rust" / "py"


def _bodies(text: str):
    for m in re.finditer(r"^#\[pyfunction\]", text, flags=re.M):
        name = re.search(r"fn\s+(\w+)", text[m.end():]).group(1)
        start = text.index("{", text.index(")", text.index("fn " + name, m.end())))
        depth, i = 0, start
        while True:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        yield name, text[start + 1:i].strip()


def test_every_pyfunction_body_is_guarded():
    seen = 0
    for path in sorted(GLUE.glob("*.rs")):
        for name, body in _bodies(path.read_text(encoding="utf-8")):
            seen += 1
            assert body.startswith("guard(py"), f"{path.name}: {name} does not run under guard"
    assert seen >= 20  # the glue's functions were found
