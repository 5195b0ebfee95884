"""The settings file's usual shape, read without tomllib.

A settings file is a few lines like `db = "…"`, `budget = 23000` and a `[projects]`
table. Importing tomllib to read them costs a process ~7 ms of CPU (it loads typing,
datetime and string), which `subrosa search` and the Stop hook pay on every run of a
user who keeps such a file (a team's `db` URL: docs/team.md). `loads` reads a file made
only of the plainest TOML and answers None for anything else, so the caller hands it
to tomllib; what it answers is what tomllib answers for the same text
(tests/test_tomlsubset.py holds it to tomllib on generated files).

What it reads, a line at a time (LF or CRLF; spaces and tabs around every part):
blank lines, `# comments`, `[name]` headers, and `key = value` where a key is bare
(`A-Za-z0-9_-`) or quoted without escapes (`"~/code/x"`, `'x'`) and a value is a
basic or literal string on one line without escapes, a decimal integer without
underscores or leading zeros, `true` or `false`, each optionally followed by a comment.
Everything else (dotted keys, arrays, inline tables, floats, dates, escapes, multi-line
strings, a key or table given twice, a control character) is left to tomllib, which
reads it or says what is wrong with it.

Standard library only, and not even `re`: the Stop hook imports it.
"""

from __future__ import annotations

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = frozenset("0123456789")
_SPACE = " \t"
# TOML allows no control character but tab outside strings' escapes (comments and
# strings alike); newlines are what lines are cut at, and a CR only before one.
_CONTROL = frozenset(chr(c) for c in (*range(0, 9), *range(11, 32), 127)) - {"\r"}
# More digits than this are left to tomllib (and Python's own limit on int()).
_MAX_DIGITS = 30


class _Outside(Exception):
    """The text is not of the shape this module reads."""


def loads(text: str) -> dict[str, object] | None:
    """The table tomllib.loads(text) gives, when `text` is of the plain shape above;
    None otherwise (then tomllib must read it, and may reject it)."""
    if _CONTROL.intersection(text):
        return None
    try:
        return _read(text)
    except _Outside:
        return None


def _read(text: str) -> dict[str, object]:
    root: dict[str, object] = {}
    table = root
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if line.endswith("\r"):
            if number == len(lines) - 1:  # a CR that ends the text ends no line
                raise _Outside
            line = line[:-1]
        if "\r" in line:
            raise _Outside
        rest = line.lstrip(_SPACE)
        if not rest or rest[0] == "#":
            continue
        if rest[0] == "[":
            name, rest = _key(rest[1:].lstrip(_SPACE))
            rest = rest.lstrip(_SPACE)
            if not rest.startswith("]") or name in root:
                raise _Outside  # `[[array]]`, `[a.b]`, a table named twice
            _end(rest[1:])
            table = {}
            root[name] = table
            continue
        key, rest = _key(rest)
        rest = rest.lstrip(_SPACE)
        if not rest.startswith("=") or key in table:
            raise _Outside  # `a.b = 1`, a key given twice
        value, rest = _value(rest[1:].lstrip(_SPACE))
        _end(rest)
        table[key] = value
    return root


def _key(text: str) -> tuple[str, str]:
    """A bare or quoted key at the start of `text`, and what follows it."""
    if text[:1] in ('"', "'"):
        return _string(text)
    end = 0
    while end < len(text) and text[end] in _BARE:
        end += 1
    if not end:
        raise _Outside
    return text[:end], text[end:]


def _string(text: str) -> tuple[str, str]:
    """A one-line string without escapes at the start of `text`, and what follows."""
    quote = text[0]
    if text.startswith(quote * 3):  # a multi-line string (or an empty one and a quote)
        raise _Outside
    end = text.find(quote, 1)
    if end < 0:
        raise _Outside
    content = text[1:end]
    if quote == '"' and "\\" in content:
        raise _Outside
    return content, text[end + 1 :]


def _value(text: str) -> tuple[object, str]:
    """A string, integer or boolean at the start of `text`, and what follows it."""
    if text[:1] in ('"', "'"):
        return _string(text)
    end = 0
    while end < len(text) and text[end] not in " \t#":
        end += 1
    token, rest = text[:end], text[end:]
    if token == "true":
        return True, rest
    if token == "false":
        return False, rest
    digits = token[1:] if token[:1] in ("+", "-") else token
    if (
        not digits
        or len(digits) > _MAX_DIGITS
        or not _DIGITS.issuperset(digits)
        or (digits[0] == "0" and len(digits) > 1)
    ):
        raise _Outside
    return int(token), rest


def _end(text: str) -> None:
    """What may follow a value or header on its line: spaces, then a comment."""
    rest = text.lstrip(_SPACE)
    if rest and rest[0] != "#":
        raise _Outside
