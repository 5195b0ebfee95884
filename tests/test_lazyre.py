"""Patterns compiled at their first use (subrosa.lazyre): the same answers as
re.compile's, and the search path's modules compile none at import."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from subrosa.lazyre import compile_lazily
from tests.conftest import RunCli


def test_a_lazy_pattern_answers_as_a_compiled_one() -> None:
    source, flags = r"(?P<word>[a-zé]+)(?P<num>\d*)", re.IGNORECASE
    lazy, eager = compile_lazily(source, flags), re.compile(source, flags)
    assert lazy.pattern == eager.pattern  # known before it is compiled
    text = "Café42 and tea, ÉCLAIR7"
    assert lazy.search(text).groupdict() == eager.search(text).groupdict()  # type: ignore[union-attr]
    assert lazy.findall(text) == eager.findall(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert lazy.sub(r"<\g<word>>", text) == eager.sub(r"<\g<word>>", text)
    assert lazy.split(text) == eager.split(text)
    assert lazy.fullmatch("abc1") is not None and lazy.match("!abc") is None
    assert (lazy.flags, lazy.groups, lazy.groupindex) == (
        eager.flags,
        eager.groups,
        eager.groupindex,
    )
    data = compile_lazily(rb"\xe3[\x80-\xbf]")
    assert data.findall("ぁ x".encode()) == re.compile(rb"\xe3[\x80-\xbf]").findall("ぁ x".encode())


def test_flags_and_groups_compile_it_too() -> None:
    lazy = compile_lazily(r"(a)(b)?")
    assert lazy.groups == 2 and lazy.flags == re.compile(r"(a)(b)?").flags


@pytest.mark.engines("sqlite")
def test_a_search_compiles_no_pattern_at_import_and_no_cjk_one_for_ascii(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """Every pattern a module on the search path keeps is made by compile_lazily (a
    `re.compile` at import is paid by every `subrosa search` process and hook), and an
    ASCII query over ASCII messages never compiles the CJK class (~2 ms)."""
    (tmp_path / "claude" / "projects").mkdir(parents=True, exist_ok=True)
    run("ingest")
    report = tmp_path / "patterns.json"
    script = (
        "import json, re, sys\n"
        "from subrosa.cli import main\n"
        "sys.argv = ['subrosa', 'search', '--all-projects', 'wobbleframe deploy']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "eager = sorted(f'{name}.{key}' for name, module in list(sys.modules.items())\n"
        "    if name.startswith('subrosa') for key, value in vars(module).items()\n"
        "    if isinstance(value, re.Pattern))\n"
        "import subrosa.cjk\n"
        "cjk = 'search' in vars(subrosa.cjk._CJK)\n"
        f"json.dump([eager, cjk], open({str(report)!r}, 'w'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    eager, cjk = json.loads(report.read_text())
    assert eager == [], f"compiled at import (use subrosa.lazyre.compile_lazily): {eager}"
    assert cjk is False


def test_after_its_first_use_no_lookup_goes_through_getattr() -> None:
    lazy = compile_lazily(r"\s+")
    assert lazy.split("a b") == ["a", "b"]
    assert not hasattr(type(lazy), "__getattr__")  # every later call a plain lookup
    assert repr(lazy) == r"compile_lazily('\\s+')"
