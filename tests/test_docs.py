"""docs/commands.md and `--help` agree (the idea of sqlite-utils' tests/test_docs.py).

Every command in the CLI has a `###` heading in docs/commands.md; every command and
option a heading names exists; every option a command takes is named in its section.
A new flag without its line in the docs fails here, not in a user's hands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from subrosa.cli.app import cli
from tests.conftest import REPO

PAGE = REPO / "docs" / "commands.md"
_CODE = re.compile(r"`([^`]+)`")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every runnable command path: `("fact", "upsert")`, `("generate",)`, …"""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(click.Context(command), name)
        assert found is not None, f"docs name `subrosa {' '.join(path)}`, which does not exist"
        command = found
    return command


def _options(command: click.Command) -> set[str]:
    return {
        opt
        for param in command.params
        if isinstance(param, click.Option)
        for opt in [*param.opts, *param.secondary_opts]
        if opt.startswith("--") and opt != "--help"
    }


def _sections() -> dict[tuple[str, ...], str]:
    """Each command path a `###` heading names, with the text of its section."""
    text = PAGE.read_text(encoding="utf-8")
    sections: dict[tuple[str, ...], str] = {}
    for block in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        heading = block.splitlines()[0]
        group: tuple[str, ...] = ()
        for code in _CODE.findall(heading):
            words = code.removeprefix("subrosa ").split()
            path: list[str] = []
            for word in words:
                if not re.fullmatch(r"[a-z][a-z-]*", word) or word.startswith("-"):
                    break
                path.append(word)
            if code.startswith("subrosa "):
                group = tuple(path[:1])
            elif group and tuple(path[:1]) != group:
                path = [*group, *path]  # `fact pin` after `subrosa fact archive`
            command = tuple(path)
            while command and not _is_command(command):
                command = command[:-1]  # `subrosa hook session-start | stop …`: an argument
            sections[command] = sections.get(command, "") + block
    return sections


def _is_command(path: tuple[str, ...]) -> bool:
    command: click.Command | None = cli
    for name in path:
        if not isinstance(command, click.Group):
            return False
        command = command.get_command(click.Context(command), name)
        if command is None:
            return False
    return True


ALL = sorted(_commands(cli))


def test_every_command_is_documented() -> None:
    documented = set(_sections())
    assert [" ".join(p) for p in ALL if p not in documented] == []


def test_every_documented_command_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for heading in re.findall(r"^### (.*)$", text, flags=re.MULTILINE):
        for code in _CODE.findall(heading):
            if code.startswith("subrosa "):
                word = code.split()[1]
                assert _is_command((word,)), f"docs name `subrosa {word}`, which does not exist"


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_options_agree_with_the_docs(path: tuple[str, ...]) -> None:
    section = _sections().get(path, "")
    heading = section.splitlines()[0] if section else ""
    real = _options(_command(path))
    named_in_heading = {opt for code in _CODE.findall(heading) for opt in _OPTION.findall(code)} - {
        "--memory-dir",
        "--db",
    }
    # Options in a heading shared by several commands belong to one of them.
    shared_heading = len(_CODE.findall(heading)) > 1
    if not shared_heading:
        assert sorted(named_in_heading - real) == [], f"docs name options `{path}` lacks"
    assert sorted(opt for opt in real if opt not in section) == [], (
        f"`subrosa {' '.join(path)}` options missing from docs/commands.md"
    )


SECURITY = REPO / "docs" / "security.md"
# `tests/test_x.py::test_y`, or `::test_z` for another test of the file named before it.
_TEST_REF = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`")


def test_every_test_named_in_security_md_exists() -> None:
    """docs/security.md proves each claim by naming a test: a renamed or deleted test
    fails here rather than leaving a claim without proof."""
    text = SECURITY.read_text(encoding="utf-8")
    named: list[tuple[str, str | None]] = []
    current = ""
    for match in _TEST_REF.finditer(text):
        path, name = match.groups()
        if path is None and name is None:
            continue
        current = path or current
        assert current, f"{match.group(0)} names no file"
        named.append((current, name))
    assert len(named) >= 40
    missing = []
    for path, name in named:
        source = REPO / path
        if not source.is_file():
            missing.append(path)
        elif name is not None and not re.search(
            rf"^(?:async )?def {name}\(", source.read_text(encoding="utf-8"), re.MULTILINE
        ):
            missing.append(f"{path}::{name}")
    assert missing == []
