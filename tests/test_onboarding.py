"""A user's first day: what they read (README, docs/settings.md, every install hint) and
the first mistakes they make on the command line (a typo, an option in the wrong place,
a fact named one way or the other)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from subrosa.claude.install import plugin_hooks_json
from subrosa.config import Settings
from tests.conftest import REPO, RunCli, write_leaf

SETTINGS_PAGE = REPO / "docs" / "settings.md"
# Where a user meets an install hint: the docs, the plugin, the code that prints one.
SHIPPED = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / ".claude-plugin" / "plugin.json",
    REPO / ".claude-plugin" / "marketplace.json",
    REPO / "hooks" / "hooks.json",
    *sorted((REPO / "skills").rglob("*.md")),
    *sorted((REPO / "subrosa").rglob("*.py")),
]


class Recording(dict[str, str]):
    """An environment that remembers every name looked up in it."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.asked.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)


def _variables_the_code_reads() -> set[str]:
    """SUBROSA_* names spelled out in the code, and those the settings machinery makes
    from a key (`SUBROSA_{KEY}`), found by asking it with an environment that records."""
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for path in [*(REPO / "subrosa").rglob("*.py"), *(REPO / "skills").rglob("*.py")]
    )
    names = set(re.findall(r"\bSUBROSA_[A-Z][A-Z0-9_]*\b", code))
    from subrosa.config import load_settings, resolve_db_url, text_setting

    env = Recording()
    env["HOME"] = "/nonexistent"
    load_settings(env)
    resolve_db_url(None, env)
    for key in re.findall(r"text_setting\(\s*\"(\w+)\"", code):
        text_setting(key, env)
    return names | {name for name in env.asked if name.startswith("SUBROSA_")}


def test_every_variable_the_code_reads_is_in_the_settings_page() -> None:
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    found = _variables_the_code_reads()
    assert {"SUBROSA_BUDGET", "SUBROSA_MAX_LINES", "SUBROSA_CONFIG", "SUBROSA_DB"} <= found
    assert sorted(name for name in found if f"`{name}`" not in page) == []


def test_every_key_of_the_settings_file_is_in_the_settings_page() -> None:
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    code = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "subrosa").rglob("*.py"))
    keys = set(Settings._fields) | set(re.findall(r"text_setting\(\"(\w+)\"", code))
    keys |= set(re.findall(r"read_file\(env\)\.get\(\"(\w+)\"\)", code))  # tables
    assert {"budget", "db", "user", "projects", "type_weights"} <= keys
    in_example = re.compile(r"^(?:(\w+) = |\[(\w+)\])", re.MULTILINE)
    shown = {a or b for a, b in in_example.findall(page)}
    assert sorted(keys - shown) == []
    assert (
        sorted(key for key in keys if f"| `{key}` |" not in page and f"`[{key}]`" not in page) == []
    )


def test_no_install_hint_names_the_pypi_name_someone_else_owns() -> None:
    """`subrosa` on PyPI is an unrelated project: a hint to install it would install
    someone else's code. Hints install from the repository (or `subrosa-memory`)."""
    wrong = re.compile(
        r"(?:pip|pipx|uv tool|uv pip|uvx)\s+(?:install|inject)\s+(?:[\w-]+\s+)*"
        r"['\"]?subrosa(?![\w-])"
    )
    found = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path in SHIPPED
        for match in wrong.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
    assert "uv tool install '$CLAUDE_PLUGIN_ROOT'" in plugin_hooks_json()


def test_the_plugin_manifests_agree() -> None:
    plugin = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    [listed] = market["plugins"]
    assert listed["name"] == plugin["name"] == "subrosa" and listed["source"] == "./"
    assert plugin["author"]["name"] and plugin["license"] == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_a_mistyped_command_gets_a_suggestion(run: RunCli) -> None:
    result = run("serach", "pnpm", expect=2)
    assert "No such command 'serach'. Did you mean 'search'?" in result.stderr
    assert "Did you mean" not in run("xyzzy", expect=2).stderr
    assert "Did you mean 'upsert'?" in run("fact", "upsrt", expect=2).stderr


def test_root_options_work_after_the_command(run: RunCli, tmp_path: Path) -> None:
    memory = tmp_path / "mem"
    memory.mkdir()
    write_leaf(memory, "a_fact.md")
    db = str(tmp_path / "after.db")
    run("fact", "upsert", "a_fact", "--hook", "A", "--memory-dir", str(memory), "--db", db)
    listed = run("fact", "list", "--json", f"--memory-dir={memory}", f"--db={db}").stdout
    assert [fact["slug"] for fact in json.loads(listed)] == ["a_fact"]
    # Before the command, as ever; the one given last wins.
    before = run("--memory-dir", str(tmp_path), "--db", db, "fact", "list", "--json").stdout
    assert json.loads(before) == []
    after = run(
        "--memory-dir", str(tmp_path), "fact", "list", "--json", "--memory-dir", str(memory)
    )
    assert json.loads(after.stdout) == []  # db: the default one, empty
    # After `--`, nothing moves: it is the command's own argument.
    result = run("--db", db, "--memory-dir", str(memory), "fact", "show", "--", "--db", expect=2)
    assert "no fact named '--db'" in result.stderr


@pytest.mark.engines("sqlite")
def test_every_fact_command_names_a_fact_by_slug_or_leaf(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "user_prefers_pnpm.md", "The user prefers pnpm.", fact_type="user")
    assert (
        "added user_prefers_pnpm"
        in run("fact", "upsert", "user_prefers_pnpm", "--hook", "pnpm").stdout
    )
    assert "pinned user_prefers_pnpm" in run("fact", "pin", "user_prefers_pnpm").stdout
    assert "unpinned" in run("fact", "unpin", "--leaf", "user_prefers_pnpm.md").stdout
    assert "archived" in run("fact", "archive", "user_prefers_pnpm", "--reason", "done").stdout
    assert (
        "restored"
        in run("fact", "upsert", "--leaf", str(memory_dir / "user_prefers_pnpm.md")).stdout
    )
    assert "updated" in run("fact", "upsert", "user_prefers_pnpm.md").stdout
    run("fact", "show", "user_prefers_pnpm")
    for args in (["fact", "upsert"], ["fact", "pin", "user_prefers_pnpm", "--leaf", "x.md"]):
        assert "name the fact: its SLUG" in run(*args, expect=2).stderr
    missing = run("fact", "upsert", "no_such_fact", "--hook", "x", expect=2).stderr
    assert "no_such_fact.md: does not exist (write the leaf first" in missing


def test_errors_say_how_to_fix_them(run: RunCli, tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    result = run("--memory-dir", str(nowhere), "generate", expect=2)
    assert "no such memory directory; create it (mkdir -p" in result.stderr
    assert "--memory-dir DIR or SUBROSA_MEMORY_DIR" in result.stderr
    assert "--dir DIR or SUBROSA_MEMORY_DIR" in run("check", "--dir", str(nowhere), expect=2).stderr
    shown = run("--memory-dir", str(tmp_path), "fact", "show", "nope", expect=2).stderr
    assert "`subrosa fact list --all` lists them" in shown


def test_install_then_doctor_is_clean_on_a_fresh_machine(
    run: RunCli, tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README, "Use it", step 2: in a new project on a machine subrosa never ran on."""
    project = tmp_path / "your-project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    installed = run("install").stdout
    assert "created the memory dir" in installed
    assert run("install").stdout.count("created") == 0  # once
    report = json.loads(run("doctor", "--json").stdout)
    assert report["ok"] is True, report
    assert [c["name"] for c in report["checks"] if not c["ok"]] == []
    data = isolated_env / ".local" / "share" / "subrosa"
    assert data.stat().st_mode & 0o777 == 0o700  # made by install, private like the database


def _everything_under(root: Path) -> list[str]:
    return sorted(str(path) for path in root.rglob("*"))


@pytest.mark.parametrize("given", ["SUBROSA_MEMORY_DIR", "--memory-dir", "auto memory"])
def test_a_memory_dir_that_is_a_file_says_where_it_was_named(
    run: RunCli, tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """Not click's `Invalid value for '--memory-dir'` for a value the flag never gave:
    the sentence names the file and where the value came from."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    if given == "auto memory":
        from subrosa.paths import auto_memory_dir

        a_file = Path(auto_memory_dir(str(project)))
        a_file.parent.mkdir(parents=True)
    else:
        a_file = tmp_path / "notes.md"
    a_file.write_text("mine\n")
    args = ["--memory-dir", str(a_file)] if given == "--memory-dir" else []
    if given == "SUBROSA_MEMORY_DIR":
        monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(a_file))
    before = _everything_under(tmp_path)
    for command in (["fact", "list"], ["generate"], ["stale"]):
        error = run(*args, *command, expect=2).stderr
        assert error.startswith(f"Error: {a_file}: is a file, not a folder"), error
        assert ("Claude Code's auto-memory dir" if given == "auto memory" else given) in error
        assert "Invalid value" not in error and "mkdir" not in error
        assert len(error.strip().splitlines()) == 1
    assert _everything_under(tmp_path) == before and a_file.read_text() == "mine\n"


@pytest.mark.parametrize(
    "command", [["fact", "list"], ["fact", "list", "--json"], ["fact", "show", "x"], ["stale"]]
)
def test_a_read_only_command_on_a_missing_memory_dir_says_so_and_creates_nothing(
    run: RunCli, tmp_path: Path, isolated_env: Path, command: list[str]
) -> None:
    """No database made in the data dir, no memory dir made: one sentence, exit 2."""
    nowhere = tmp_path / "nowhere"
    before = _everything_under(tmp_path)
    result = run("--memory-dir", str(nowhere), *command, expect=2)
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: {nowhere}: no such memory directory")
    assert "--memory-dir" in result.stderr
    assert _everything_under(tmp_path) == before
