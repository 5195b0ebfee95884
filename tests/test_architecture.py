"""The layering rules of docs/architecture.md, as assertions on the code's own imports.

The idea is basic-memory's tests/test_architecture_boundaries.py: a rule a newcomer
reads in the docs is a rule a test enforces, so the picture of the house cannot drift
from the house. Imports are read with `ast`, lazy ones inside functions included.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "subrosa"
HALVES = ("memory", "archive", "claude")
# The shared low-level pieces at the top: every half may use them; they use no half.
SHARED = (
    "paths",
    "config",
    "text",
    "plain",
    "fsutil",
    "errors",
    "resources",
    "schema",
    "db",
    "models",
    "secrets",
    "query",
    "cjk",
    "gitremote",
    "identity",
)
# The top-level modules that compose the halves for more than one entry point.
COMPOSERS = ("doctor", "recall", "demo", "tools", "transfer")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function: `from a.b import c`
    counts as `a.b` and, when `a.b.c` is a module of ours, as `a.b.c` too."""
    ours = set(_modules())
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if f"{node.module}.{alias.name}" in ours
            )
    return found


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _violations(modules: list[str], forbidden: tuple[str, ...]) -> list[str]:
    table = _modules()
    return [
        f"{module} imports {imported}"
        for module in modules
        for imported in sorted(imports_of(table[module]))
        if any(_under(imported, prefix) for prefix in forbidden)
    ]


def _in(prefix: str) -> list[str]:
    return [name for name in _modules() if _under(name, prefix)]


def test_only_the_cli_imports_click() -> None:
    outside = [name for name in _modules() if not _under(name, "subrosa.cli")]
    assert _violations(outside, ("click",)) == []


def test_the_cli_runs_no_sql_of_its_own() -> None:
    assert _violations(_in("subrosa.cli"), ("sqlalchemy", "sqlite3")) == []


def test_the_halves_do_not_import_each_other() -> None:
    assert _violations(_in("subrosa.memory"), ("subrosa.archive", "subrosa.claude")) == []
    assert _violations(_in("subrosa.archive"), ("subrosa.memory", "subrosa.claude")) == []


def test_nothing_but_the_entry_points_imports_the_cli() -> None:
    others = [name for name in _modules() if not _under(name, "subrosa.cli")]
    others.remove("subrosa.__main__")
    assert _violations(others, ("subrosa.cli",)) == []


def test_the_shared_pieces_import_no_half() -> None:
    shared = [f"subrosa.{name}" for name in SHARED if f"subrosa.{name}" in _modules()]
    composers = tuple(f"subrosa.{name}" for name in COMPOSERS)
    forbidden = tuple(f"subrosa.{half}" for half in HALVES) + composers
    assert _violations(shared, forbidden) == []


def test_the_composers_serve_the_entry_points_only() -> None:
    """recall, doctor and demo look at several halves; only cli/ may call them (and
    demo may show doctor, never the other way round)."""
    composers = tuple(f"subrosa.{name}" for name in COMPOSERS)
    others = [name for name in _modules() if not _under(name, "subrosa.cli")]
    others = [name for name in others if name not in composers]
    assert _violations(others, composers) == []


@pytest.mark.parametrize("half", HALVES)
def test_each_folder_has_a_front_door_that_imports_nothing(half: str) -> None:
    """`__init__.py` names every module of its folder and imports nothing, so the hooks
    can load one stdlib-only module of a half without loading the rest."""
    door = PACKAGE / half / "__init__.py"
    tree = ast.parse(door.read_text(encoding="utf-8"))
    assert not [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    doc = ast.get_docstring(tree) or ""
    for module in sorted((PACKAGE / half).glob("*.py")):
        if module.name != "__init__.py":
            assert re.search(rf"\b{module.stem}\b", doc), f"{door} does not name {module.stem}"


def test_cli_modules_hold_no_sql_file_writes_or_locks() -> None:
    """The adapters parse options, call one use case and print: the issue's grep."""
    pattern = re.compile(r"\bselect\(|\.execute\(|\bopen\(|write_text|write_bytes|\.lock\(")
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_the_architecture_page_names_every_module_and_no_other() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(subrosa/[\w/]+\.py)`", page))
    real = {str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py")}
    assert sorted(named - real) == [], "named in docs/architecture.md but not in the code"
    missing = sorted(
        path for path in real - named if not path.endswith(("__init__.py", "__main__.py"))
    )
    assert missing == [], "in the code but not named in docs/architecture.md"
