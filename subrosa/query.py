"""The search query language, shared by both halves. Standard library only, pure.

What a user types becomes terms (words, "phrases", prefix*), and each term a quoted
FTS5 phrase, so that no input is a syntax error: the facts (subrosa.memory.recall)
and the archived messages (subrosa.archive.search) are each matched with it in their
own full-text table. Also shared: the filters a search is limited to, and the shape
of a result's score and snippet. Why the query runs the way it does: docs/search.md.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import NamedTuple

from subrosa.cjk import cjk_runs, has_cjk

MARK = ("**", "**")  # around a match in a snippet
_TERM = re.compile(r'"([^"]*)"(\*?)|([^\s"]+)')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Words as unicode61 sees them, near enough for ranking (underscore separates).
_WORD = re.compile(r"[^\W_]+")


class QueryError(ValueError):
    """A filter the user gave cannot be understood (the query text itself never fails)."""


class Term(NamedTuple):
    """One thing the user asked for: a word, a "phrase", or a prefix*."""

    text: str
    prefix: bool = False


def parse_query(query: str) -> list[Term]:
    """The terms of a user query. Balanced "quotes" make a phrase and a trailing * a
    prefix; everything else is words. Operators (AND, OR, NOT, NEAR, col:, -x, ^) are
    not operators here: each term is later quoted, so no input is a syntax error."""
    terms: list[Term] = []
    # FTS5 reads a query as a C string: a NUL would end it inside a quote.
    query = _CONTROL.sub(" ", query)
    for match in _TERM.finditer(query):
        phrase, phrase_star, word = match.groups()
        if word is not None:
            text, prefix = word.rstrip("*"), word.endswith("*")
        else:
            text, prefix = phrase, bool(phrase_star)
        if any(ch.isalnum() for ch in text):
            terms.append(Term(text, prefix))
    return terms


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def split_cjk(term: Term) -> tuple[list[str], str]:
    """A term's CJK runs, and what is left of it with them taken out."""
    if not has_cjk(term.text):
        return [], term.text
    runs = cjk_runs(term.text)
    rest = term.text
    for run in runs:
        rest = rest.replace(run, " ")
    return runs, rest


class Phrase(NamedTuple):
    """One quoted FTS5 phrase, and its tokens as the Python-side ranking sees them."""

    expr: str
    tokens: tuple[str, ...]
    prefix: bool = False
    cjk: bool = False


def query_phrases(terms: list[Term], cjk_column: str | None) -> list[Phrase]:
    """The phrases of an FTS5 MATCH expression: every term quoted, all required. CJK
    text is matched as a phrase of single characters in `cjk_column` (subrosa.cjk)."""
    phrases: list[Phrase] = []
    for term in terms:
        runs, rest = split_cjk(term)
        for run in runs:
            if cjk_column is not None:
                phrases.append(
                    Phrase(f"{cjk_column} : {_quote(' '.join(run))}", tuple(run), cjk=True)
                )
        if any(ch.isalnum() for ch in rest):
            tokens = tuple(_WORD.findall(rest.lower())) or (rest.strip().lower(),)
            expr = _quote(rest.strip()) + ("*" if term.prefix else "")
            phrases.append(Phrase(expr, tokens, prefix=term.prefix))
    return phrases


def fts_query(terms: list[Term], cjk_column: str | None) -> str:
    """The FTS5 MATCH expression for `terms` (never a syntax error)."""
    return " ".join(phrase.expr for phrase in query_phrases(terms, cjk_column))


# ---------------------------------------------------------------- filters


class Filters(NamedTuple):
    """What a search is limited to (NamedTuples, not dataclasses: importing
    dataclasses costs `subrosa search` more than its query)."""

    since: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    role: str | None = None
    transcript_project: str | None = None  # None: every project
    fact_project: str | None = None


def parse_since(value: str) -> str:
    """--since: a date or an ISO time, as stored ("YYYY-MM-DD HH:MM:SS", UTC)."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise QueryError(
            f"--since {value!r}: expected a date like 2026-11-29 or 2026-11-29T10:00."
        ) from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- results


def significant(score: float) -> float:
    """Six significant digits: FTS5 gives words in over half the rows an idf of 1e-6,
    so small archives have tiny scores whose order still matters."""
    return float(f"{score:.6g}")


def one_line(text: str) -> str:
    """One line, safe on a terminal and for the agent: whitespace collapsed, control and
    format characters (ESC sequences, bidi overrides) dropped, tags escaped, by
    subrosa.text's terminal_line; plain ASCII without `<` or `&` is returned without
    importing that module (it costs search ~4 ms)."""
    line = " ".join(text.split())
    if line.isascii() and line.isprintable() and "<" not in line and "&" not in line:
        return line  # nothing the sanitizer would touch: no tag, no entity, no escape
    from subrosa.text import terminal_line

    return terminal_line(line)
