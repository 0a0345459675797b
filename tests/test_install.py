"""Installing calibkit and its test peers (issue 13, builds 1 and 2).

The slow checks run in CI itself: ``.ci/run`` runs ``scripts/check-wheel`` (builds the manylinux
abi3 wheel and smoke-tests it on another Python without Rust) and the README's test command
(which calls ``scripts/install-test-peers``). These tests check the pieces that can be checked
quickly and the wiring between them.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.machinery
import importlib.util
import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import requires

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
CI_RUN = (ROOT / ".ci" / "run").read_text()


def _load_script(name: str):
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), str(ROOT / "scripts" / name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_test_extra_holds_no_package_current_pip_refuses():
    text = (ROOT / "pyproject.toml").read_text()
    test_extra = re.search(r"^test = \[(.*?)^\]", text, flags=re.S | re.M).group(1)
    assert "uncertainty-metrics" not in test_extra  # (uncertainty-calibration installs fine)


def test_readme_and_ci_install_the_peers_then_test():
    quick = README.split("## Quick start", 1)[1].split("```", 2)[1]
    test_cmd = next(ln for ln in quick.splitlines() if "pytest" in ln)
    assert test_cmd.startswith('pip install ".[test]" && python scripts/install-test-peers && ')
    assert test_cmd in CI_RUN
    ci_lines = [ln.strip() for ln in CI_RUN.splitlines()]
    assert "scripts/check-wheel" in ci_lines
    assert ci_lines.index("scripts/check-wheel") < ci_lines.index(test_cmd)


def test_scripts_are_executable():
    for name in ("install-test-peers", "build-wheel", "check-wheel"):
        assert os.access(ROOT / "scripts" / name, os.X_OK), name


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_repair_keeps_the_code_and_drops_the_extras(tmp_path):
    peers = _load_script("install-test-peers")
    di = peers.DIST_INFO
    meta = (
        b"Metadata-Version: 2.0\nName: uncertainty-metrics\nVersion: 0.0.81\n"
        b"Requires-Dist: numpy (>=1.7)\n"
        b"Requires-Dist: scikit-learn (>=0.20.0tensorflow>=2.0.0); extra == 'tf-nightly'\n"
        b"Requires-Dist: scipy (>=1.0.0); extra == 'numpy'\n"
    )
    code = b"x = 1\n"
    src = tmp_path / "in" / peers.WHEEL
    src.parent.mkdir()
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("uncertainty_metrics/__init__.py", code)
        z.writestr(f"{di}/METADATA", meta)
        record = (
            f"uncertainty_metrics/__init__.py,{_record_hash(code)},{len(code)}\n"
            f"{di}/METADATA,{_record_hash(meta)},{len(meta)}\n{di}/RECORD,,\n"
        )
        z.writestr(f"{di}/RECORD", record)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    fixed = peers._repair(src, out_dir)
    assert fixed.name == peers.WHEEL
    with zipfile.ZipFile(fixed) as z:
        new_meta = z.read(f"{di}/METADATA")
        assert z.read("uncertainty_metrics/__init__.py") == code
        rows = {r[0]: r for r in csv.reader(io.StringIO(z.read(f"{di}/RECORD").decode())) if r}
    text = new_meta.decode()
    assert "extra ==" not in text and "tensorflow" not in text
    assert "Requires-Dist: numpy (>=1.7)" in text and "Version: 0.0.81" in text
    assert rows[f"{di}/METADATA"][1:] == [_record_hash(new_meta), str(len(new_meta))]
    assert rows["uncertainty_metrics/__init__.py"][1] == _record_hash(code)


def test_the_peer_is_installed_as_pinned():
    """The README's test command installed it (requires(): a missing peer fails under CI)."""
    from importlib.metadata import version

    requires("uncertainty_metrics")
    assert version("uncertainty-metrics") == "0.0.81"


def _run_compat_tests(tmp_path, ci: str) -> subprocess.CompletedProcess:
    hide = tmp_path / "hide" / "uncertainty_metrics"
    hide.mkdir(parents=True, exist_ok=True)
    (hide / "__init__.py").write_text(
        "raise ModuleNotFoundError('hidden by a test', name='uncertainty_metrics')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(hide.parent), CI=ci)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_compat.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


def test_missing_peer_fails_ci_and_skips_elsewhere(tmp_path):
    ci = _run_compat_tests(tmp_path, "true")
    assert ci.returncode != 0
    assert "missing but CI=true" in ci.stdout
    local = _run_compat_tests(tmp_path, "")
    assert local.returncode in (0, 5), local.stdout[-2000:]  # 5: every test skipped
    assert "skipped" in local.stdout


def test_one_policy_for_missing_peers():
    """Tests get their optional peers through ``conftest.requires`` (a failure under CI, a skip
    elsewhere), never through pytest's import-or-skip, whose skips CI would not notice."""
    needle = "importor" + "skip("
    offenders = sorted(p.name for p in (ROOT / "tests").glob("*.py")
                       if needle in p.read_text(encoding="utf-8"))
    assert not offenders, f"use conftest.requires(module) instead of pytest.{needle} in {offenders}"
