"""The README's examples run, and its quick start matches what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


@pytest.mark.parametrize("i", range(len(_blocks("python"))))
def test_python_examples_run(i):
    code = _blocks("python")[i]
    exec(compile(code, f"README.md python block {i}", "exec"), {})


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second():
    section = README.split("## Quick start", 1)[1]
    block = re.search(r"```\w*\n(.*?)```", section, flags=re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(commands) == 2
    assert "calibkit" in commands[0]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_conventions_match_the_code():
    import calibkit

    def sci(v: float) -> str:
        return f"{v:.0e}".replace("e-0", "e-")

    assert f"up to {sci(calibkit._validate.RANGE_TOL)}" in README
    assert f"within {sci(calibkit._validate.ROW_SUM_TOL)}" in README
    for name in ("ece", "cce", "sce", "ace", "tace", "rmsce", "mce"):
        assert f"`{name}`" in README
