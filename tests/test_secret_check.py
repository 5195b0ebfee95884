"""Secrets in files meant for git: `find_secret` (what `fact upsert` refuses) and the
witness's secret check (`check --strict`), which runs the same rules from a copy
shipped beside check_memory.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from subrosa import secrets
from subrosa.resources import skills_dir
from tests.conftest import CORPUS, RunCli, write_leaf

SKILL = skills_dir() / "memory-compact"


def test_the_witness_ships_the_same_rules_byte_for_byte() -> None:
    """skills/memory-compact/secret_scan.py is subrosa/secrets.py: the witness must run
    where subrosa is not installed, so it cannot import it. After changing the rules:
    cp subrosa/secrets.py skills/memory-compact/secret_scan.py"""
    assert (SKILL / "secret_scan.py").read_bytes() == Path(secrets.__file__).read_bytes()


@pytest.mark.parametrize(
    ("hook", "kind"),
    [
        ("deploy with DB_PASSWORD=hunter2hunter2", "password"),
        ("the staging key is AKIAQWERTYUIOPASDFGH", "aws-access-key"),
        ("use ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78 to push", "github-token"),
        ("connect to postgres://admin:S3cret!x@db:5432/app", "url-password"),
        ("prod Authorization: Bearer AbCdEfGhIjKlMnOpQrStUvWx0123456789", "bearer-token"),
        ("mysql -uroot -pS3cr3tPw app", "mysql-password"),
    ],
)
def test_find_secret_names_the_kind(hook: str, kind: str) -> None:
    assert secrets.find_secret(hook) == kind


@pytest.mark.parametrize(
    "hook",
    [
        "Passwords are rotated monthly; ask ops for the vault path, never paste it here",
        "the token bucket limits us to 50 requests per second",
        "`git show <rev>:<path>` recovers a deleted file",
        "API keys live in 1Password under 'staging'; set OPENAI_API_KEY=$KEY before runs",
        "secret_key_base comes from the credentials file, not the env",
        "run `pytest -k password_reset` after touching auth",
        "use sk-... style keys only in .env.local (never committed)",
        "password: see the team vault",
    ],
)
def test_ordinary_hooks_hold_no_secret(hook: str) -> None:
    assert secrets.find_secret(hook) is None


def test_real_memory_dirs_hold_no_secret() -> None:
    root = CORPUS / "memory"
    if not root.is_dir():
        pytest.skip(f"{root}: the shared corpus is not beside this checkout")
    lines = [
        line
        for path in sorted(root.rglob("*.md"))
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    ]
    assert lines
    assert [line[:60] for line in lines if secrets.find_secret(line)] == []


def _memory_with_a_secret(memory_dir: Path) -> None:
    write_leaf(memory_dir, "deploy.md", description="How to deploy")
    (memory_dir / "MEMORY.md").write_text(
        "# Memory index\n\n- [Deploy](deploy.md) — export DB_PASSWORD=hunter2hunter2 first\n",
        encoding="utf-8",
    )


def test_check_notes_a_secret_and_fails_on_it_with_strict(memory_dir: Path, run: RunCli) -> None:
    _memory_with_a_secret(memory_dir)
    relaxed = run("check", "--dir", str(memory_dir))
    assert "note secret: a password on line 3 of MEMORY.md" in relaxed.stdout
    strict = run("check", "--dir", str(memory_dir), "--strict", expect=1)
    assert "FAIL secret: a password on line 3 of MEMORY.md" in strict.stdout
    verdict = json.loads(
        run("check", "--dir", str(memory_dir), "--strict", "--json", expect=1).stdout
    )
    assert verdict["secrets"] == [{"file": "MEMORY.md", "line": 3, "kind": "password"}]
    for output in (relaxed.stdout, strict.stdout, json.dumps(verdict)):
        assert "hunter2hunter2" not in output


def test_the_copied_skill_checks_secrets_alone(memory_dir: Path, tmp_path: Path) -> None:
    """The skill folder copied elsewhere, run by a plain python3 without subrosa."""
    _memory_with_a_secret(memory_dir)
    copy = tmp_path / "skill"
    shutil.copytree(SKILL, copy)
    script = [sys.executable, "-I", str(copy / "check_memory.py"), "--dir", str(memory_dir)]
    strict = subprocess.run([*script, "--strict"], capture_output=True, text=True, check=False)
    assert strict.returncode == 1 and "FAIL secret: a password" in strict.stdout
    (copy / "secret_scan.py").unlink()
    alone = subprocess.run([*script, "--strict"], capture_output=True, text=True, check=False)
    assert alone.returncode == 0 and "secrets not checked" in alone.stdout


def test_fact_upsert_refuses_a_secret_in_the_hook_or_the_description(
    memory_dir: Path, run: RunCli
) -> None:
    """MEMORY.md and the sidecar are meant for git: a secret there is refused, by kind."""
    write_leaf(memory_dir, "deploy_box.md", "Deploy with password = Xk2#pq9!vLm4")
    refused = run("fact", "upsert", "--leaf", "deploy_box.md", "--hook", "how to deploy", expect=2)
    assert "description holds a secret" in refused.stderr and "Xk2#pq9" not in refused.stderr
    write_leaf(memory_dir, "deploy_box.md", "How to reach the deploy box.")
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    refused = run("fact", "upsert", "--leaf", "deploy_box.md", "--hook", f"use {token}", expect=2)
    assert "--hook holds a secret" in refused.stderr and token not in refused.stderr
    assert not (memory_dir / ".subrosa" / "facts.jsonl").exists()
    run("fact", "upsert", "--leaf", "deploy_box.md", "--hook", "the token is in 1Password")
