"""A non-editable install carries the migrations and skills and works."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("subrosa_memory-*.whl")
    return built


def test_wheel_ships_migrations_and_skills(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "subrosa/_migrations/env.py" in names
    assert "subrosa/_migrations/versions/0001_facts.py" in names
    assert "subrosa/py.typed" in names
    assert any(n.startswith("subrosa/examples/") for n in names)


def test_installed_wheel_migrates_and_lists(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    memory = tmp_path / "memory"
    memory.mkdir()
    env = dict(
        os.environ,
        PYTHONPATH=str(target),
        SUBROSA_MEMORY_DIR=str(memory),
        SUBROSA_DB=str(tmp_path / "w.db"),
    )
    code = (
        "import subrosa, sys; print(subrosa.__file__); "
        "sys.argv = ['subrosa', 'fact', 'list', '--json']; "
        "from subrosa.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    first, rest = result.stdout.split("\n", 1)
    assert first.startswith(str(target))
    assert rest.strip() == "[]"
