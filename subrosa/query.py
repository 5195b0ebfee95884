"""The search query language, shared by both halves. Standard library only, pure.

What a user types becomes terms (words, "phrases", prefix*), and each term a quoted
FTS5 phrase, so that no input is a syntax error: the facts (subrosa.memory.recall)
and the archived messages (subrosa.archive.search) are each matched with it in their
own full-text table. Also shared: the filters a search is limited to, and the shape
of a result's score and snippet. Why the query runs the way it does: docs/search.md.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from datetime import UTC, datetime

from subrosa.cjk import cjk_runs, has_cjk
from subrosa.fold import fold, fold_text
from subrosa.lazyre import compile_lazily
from subrosa.plain import is_plain
from subrosa.terms import (
    MAX_IDENTIFIER,
    MAX_JOINED,
    WORD,
    camel_parts,
    emoji_tokens,
    german_forms,
    has_emoji,
    is_german,
    is_stopword,
    joined_splits,
    shown,
    split_emoji,
    symbol_words,
    word_forms,
)

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from subrosa.tuples import NamedTuple

MARK = ("**", "**")  # around a match in a snippet
MAX_UNITS = 32  # words of a query looked for (see query_units)
# In the second tier, a symbol word's bare word (`c` of C++) counts this much of a unit:
# as another form would (VARIANT in subrosa.archive.search).
BARE = 0.6
# What may stand between an emoji sequence's pictographs in a text (ZWJ, selectors, skin
# tones), and after its last, for snippets.
_BETWEEN_EMOJI = "[\u200d\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]*"
_AFTER_EMOJI = "[\ufe0e\ufe0f\U0001f3fb-\U0001f3ff]*"
_TERM = compile_lazily(r'"([^"]*)"(\*?)|([^\s"]+)')
_CONTROL = compile_lazily(r"[\x00-\x1f\x7f]")
# PostgreSQL's `sfloat` token at the start of a longer word (_server_words()).
_SFLOAT = compile_lazily(r"([0-9]+[eE][0-9]+)([^0-9].*)", re.DOTALL)
_WORD = WORD  # words as unicode61 cuts them (subrosa.terms)


class QueryError(ValueError):
    """A filter the user gave cannot be understood (the query text itself never fails)."""


class Term(NamedTuple):
    """One thing the user asked for: a word, a "phrase", or a prefix*."""

    text: str
    prefix: bool = False
    quoted: bool = False  # in quotes: matched as written, no other forms


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
            text, prefix, quoted = word.rstrip("*"), word.endswith("*"), False
        else:
            text, prefix, quoted = phrase, bool(phrase_star), True
        if any(ch.isalnum() for ch in text) or has_emoji(text):
            terms.append(Term(text, prefix, quoted))
    return terms


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def split_symbols(text: str) -> tuple[list[tuple[str, str]], str]:
    """The symbol words of a term's text (`C++`: its token and its bare word, `c`),
    and what is left with them taken out (`C++17`: ` 17`)."""
    data = text.encode()
    found = symbol_words(data)
    if not found:
        return [], text
    words, rest, at = [], [], 0
    for start, end, token in found:
        words.append((token, data[start:end].decode().lower().rstrip("+#")))
        rest.append(data[at:start])
        at = end
    rest.append(data[at:])
    return words, b" ".join(rest).decode()


def split_cjk(term: Term) -> tuple[list[str], str]:
    """A term's CJK runs, and what is left of it with them taken out."""
    if not has_cjk(term.text):
        return [], term.text
    runs = cjk_runs(term.text)
    rest = term.text
    for run in runs:
        rest = rest.replace(run, " ")
    return runs, rest


class Alt(NamedTuple):
    """One way a unit of the query may appear in a text: a word, or a phrase of words
    (`pre commit`), as the index holds them; or a phrase of CJK characters in the
    terms column."""

    tokens: tuple[str, ...]
    exact: bool  # the spelling the user typed; other forms rank below it
    prefix: bool = False
    cjk: bool = False

    def expr(self, cjk_column: str | None) -> str:
        """This alternative as an FTS5 phrase (quoted: never a syntax error)."""
        phrase = _quote(" ".join(self.tokens)) + ("*" if self.prefix else "")
        return f"{cjk_column} : {phrase}" if self.cjk else phrase

    def tsquery(self) -> str:
        """This alternative as a PostgreSQL tsquery: a word, a phrase of words (`<->`),
        a prefix (`:*`); each token a quoted lexeme (never a syntax error), its
        diacritics folded as a server's words are (migration 0021, subrosa.fold)."""
        parts = [
            "'" + _tsquoted(part) + "'"
            for token in self.tokens
            for part in _server_words(fold(token))
        ]
        if self.prefix:
            parts[-1] += ":*"
        return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


def _server_words(token: str) -> tuple[str, ...]:
    """A token as a server's vector holds it: PostgreSQL's parser reads a word that
    starts with digits, `e` and digits as a number in scientific notation and the rest
    as a word of its own (`93e64f7bc6`, a git hash: `93e64` and `f7bc6`; `4e0e`: `4e0`
    and `e`), where FTS5 keeps one token."""
    number = _SFLOAT.match(token)
    return (number.group(1), number.group(2)) if number else (token,)


def _tsquoted(lexeme: str) -> str:
    return lexeme.replace("\\", "\\\\").replace("'", "''")


class Unit(NamedTuple):
    """What must match for a text to hold one word (or phrase, prefix, CJK run) of the
    query: any of its alternatives. A text holding every required unit is in the
    first tier of results; one holding some of them, in the second."""

    label: str  # as the user typed it (lowercased)
    alts: tuple[Alt, ...]
    stop: bool = False  # a stopword: never required
    cjk: bool = False
    # Cuts of a word typed as one ("precommit" -> "pre commit"): used only when the
    # word itself is (almost) nowhere, since most cuts of common words are noise.
    splits: tuple[Alt, ...] = ()
    # The words of an identifier or a path (`husky.sh`, `isSyncingBackfill`): in the
    # second tier, a text holding one of them counts too.
    words: tuple[str, ...] = ()
    # How much the unit counts in a score: the words of one identifier share one.
    weight: float = 1.0
    # A quoted phrase or a prefix: matches as typed, never joined with its neighbour.
    as_typed: bool = False
    # A symbol word's bare word (`c` of C++): a piece of the second tier (pieces()).
    bare: str = ""
    # A misspelt word read as the archive's words one typo away (its alternatives past
    # the form typed; subrosa.archive.search.read_misspelt): never outranks a word the
    # archive holds as typed.
    read: bool = False

    def expr(self, cjk_column: str | None, alts: tuple[Alt, ...] | None = None) -> str:
        """The FTS5 expression matching any of `alts` (default: this unit's own);
        empty when none is usable (a CJK phrase where there is no terms column)."""
        usable = [alt for alt in (self.alts if alts is None else alts)]
        exprs = [alt.expr(cjk_column) for alt in usable if cjk_column is not None or not alt.cjk]
        return any_of(exprs) if exprs else ""


def any_of(exprs: list[str]) -> str:
    """FTS5 expressions joined by OR (in parentheses when more than one)."""
    return exprs[0] if len(exprs) == 1 else "(" + " OR ".join(exprs) + ")"


def _word_unit(text: str, tokens: list[str], german: bool = False) -> Unit:
    """A word as typed: itself and its other English forms; an identifier also as its
    parts (`isSyncingBackfill`) or joined (`pre-commit` -> precommit)."""
    label = " ".join(tokens)
    if len(tokens) == 1:
        word = tokens[0]
        parts = camel_parts(text) if len(text) <= MAX_IDENTIFIER else []
        if len(parts) > 1:  # an identifier has no English forms; its parts are one
            alts = [Alt((word,), True), Alt(tuple(parts), False)]
        else:
            forms = word_forms(word)
            if german:
                forms += [form for form in german_forms(word) if form not in forms]
            alts = [Alt((form,), form == word) for form in forms]
        splits = tuple(
            alt for alt in (Alt(cut, False) for cut in joined_splits(word)) if alt not in alts
        )
        stop = is_stopword(word)
        words = tuple(parts) if len(parts) > 1 else ()
        return Unit(label, tuple(alts), stop=stop, splits=() if stop else splits, words=words)
    alts = [Alt(tuple(tokens), True)]
    joined = "".join(tokens)
    if len(tokens) <= 3 and len(joined) <= MAX_IDENTIFIER:
        alts.append(Alt((joined,), False))
    return Unit(label, tuple(alts), words=tuple(tokens))


def query_units(terms: list[Term]) -> list[Unit]:
    """The units of a query, in the order typed (see Unit). A quoted phrase and a
    prefix match as written; a word also matches its forms (subrosa.terms)."""
    units: list[Unit] = []
    german = is_german(_WORD.findall(" ".join(term.text for term in terms).lower()))
    for term in terms:
        runs, rest = split_cjk(term)
        for run in runs:
            units.append(Unit(run, (Alt(tuple(run), True, cjk=True),), cjk=True))
        sequences, rest = split_emoji(rest)
        for sequence in sequences[:MAX_UNITS]:
            units.append(Unit(sequence, (Alt(emoji_tokens(sequence), True),)))
        # A symbol word is its token; its bare word (`c`) only counts in the second
        # tier: as an alternative it would find every `-c` flag, and its frequency would
        # drown the rare symbol's weight (docs/search.md). In a quoted phrase of other
        # words too it stays a word of the phrase (`"C++ templates"`: c templates).
        symbols, left = split_symbols(rest)
        if symbols and (not (term.quoted or term.prefix) or not _WORD.search(left)):
            rest = left
            for token, word in list(dict.fromkeys(symbols))[:MAX_UNITS]:
                units.append(Unit(shown(token) or token, (Alt((token,), True),), bare=word))
        tokens = _WORD.findall(rest.lower())
        if not tokens:
            continue
        if term.quoted or term.prefix:
            alt = Alt(tuple(tokens), True, prefix=term.prefix)
            units.append(Unit(" ".join(tokens), (alt,), as_typed=True))
        else:
            units.append(_word_unit(rest.strip(), tokens, german))
    if units and all(unit.stop for unit in units):
        # A query of stopwords only ("to be or not"): each is required after all.
        units = [unit._replace(stop=False) for unit in units]
    # Each unit costs a few index lookups: a pasted page of text is searched by its
    # first MAX_UNITS words.
    return _joined(_unique(units)[:MAX_UNITS])


def _joined(units: list[Unit]) -> list[Unit]:
    """Two words typed one after the other also match as one word, written joined
    ("status line" finds `statusline`, "web hook" `webhook`, "dot files" `dotfiles`):
    the joined word is another alternative of each of the two (not the form typed, so
    it ranks below them), a text holding it holds both. The index is asked whether it
    holds it, as for every alternative. Quoted words and prefixes match as typed."""
    out = list(units)
    for i in range(len(out) - 1):
        left = out[i]
        if not (_plain(units[i]) and _plain(units[i + 1])):
            continue
        joined = left.label + units[i + 1].label
        if len(joined) > MAX_JOINED:
            continue
        alt = Alt((joined,), False)
        out[i] = left._replace(alts=_plus(left.alts, alt))
        out[i + 1] = out[i + 1]._replace(alts=_plus(out[i + 1].alts, alt))
    return out


def _plain(unit: Unit) -> bool:
    """A word of letters typed bare (no quote, prefix, identifier, CJK run or stopword)."""
    return (
        not unit.as_typed
        and not unit.cjk
        and not unit.stop
        and not unit.words
        and unit.label.isalpha()
    )


def _plus(alts: tuple[Alt, ...], alt: Alt) -> tuple[Alt, ...]:
    return alts if alt in alts else (*alts, alt)


def _unique(units: list[Unit]) -> list[Unit]:
    """Each unit once (a word typed twice is asked for once)."""
    seen: set[tuple[Alt, ...]] = set()
    out = []
    for unit in units:
        if unit.alts not in seen:
            seen.add(unit.alts)
            out.append(unit)
    return out


def pieces(unit: Unit) -> list[Unit]:
    """What the second tier looks for, for one unit: a CJK run's overlapping pairs of
    characters and its characters (the classic units of CJK retrieval, bm25 weighing
    each), so that a text holding part of a run ("一日ずれ" for "一日ずれる", "不对应"
    for "对不上") still counts; an identifier or a path as a whole and each of its
    words (`husky.sh`: also "husky"), the words sharing one unit's weight. Anything
    else as it is."""
    if unit.cjk:
        run = unit.label
        if len(run) == 1:
            return [unit]
        grams = dict.fromkeys([run[i : i + 2] for i in range(len(run) - 1)] + list(run))
        return [Unit(gram, (Alt(tuple(gram), True, cjk=True),), cjk=True) for gram in grams]
    out = [unit]
    if unit.bare:
        return [*out, Unit(unit.bare, (Alt((unit.bare,), False),), weight=BARE)]
    words = [w for w in unit.words if len(w) >= 2 and not is_stopword(w) and not w.isdigit()]
    for word in words:
        alts = tuple(Alt((form,), form == word) for form in word_forms(word))
        # Together they count as much as the whole: one name, not several words.
        out.append(Unit(word, alts, weight=1.0 / len(words)))
    return out


# ---------------------------------------------------------------- filters


class Runs(NamedTuple):
    """A project's messages as spans of ids, newest first (its sessions' runs, table
    message_runs, joined where little lies between), and the share of the archive's
    ids they cover. A span may hold other projects' messages too: the project is still
    tested for each match in one. `exact`: the runs themselves, oldest first (read for
    a project holding a small share): each holds the project's messages only, so a
    match inside one needs no test of its project. `whole`: one span that the
    project's runs fill, every id in it the project's: no match in it needs the test
    either (on SQLite; a server tests it still, with the same answer)."""

    spans: tuple[tuple[int, int], ...]
    share: float
    exact: tuple[tuple[int, int], ...] = ()
    sessions: tuple[int, ...] = ()  # with `exact`: the project's sessions holding messages
    whole: bool = False

    @property
    def bounds(self) -> tuple[int, int]:
        """The first and last id of every span."""
        return self.spans[-1][0], self.spans[0][1]


class Filters(NamedTuple):
    """What a search is limited to (NamedTuples, not dataclasses: importing
    dataclasses costs `subrosa search` more than its query)."""

    since: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    role: str | None = None
    transcript_project: str | None = None  # None: every project
    fact_project: str | None = None
    # (facts key, memory dir) of the project the search runs in: the hits its facts
    # get are counted under that memory dir's lock (a key is not always a path).
    home: tuple[str, str] | None = None
    # Where transcript_project's messages are, set by the search
    # (subrosa.archive.search.for_project): implied by the project, it lets the index
    # skip the other projects' matches instead of testing each.
    runs: Runs | None = None

    @property
    def narrows_messages(self) -> bool:
        """Whether the messages searched are fewer than every one (a role, a time, a
        project): each match is then tested against the messages' rows."""
        return bool(self.role or self.since or self.transcript_project)


SINCE_FORMS = "a day like 2026-11-29 or a time like 2026-11-29T10:00"


def not_a_date(option: str, value: str, forms: str = SINCE_FORMS) -> str:
    """What every date option says of a value that is no date (2026-02-30, "tomorrow")."""
    return f"{option}: not a date: {value!r} (give {forms})."


def parse_since(value: str) -> str:
    """--since: a date or an ISO time, as stored ("YYYY-MM-DD HH:MM:SS", UTC)."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise QueryError(not_a_date("--since", value)) from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- results


def snippet_pattern(alts: list[Alt]) -> re.Pattern[str] | None:
    """A regex marking where these alternatives occur in a text, for snippets."""
    parts = []
    for alt in sorted(set(alts), key=lambda a: -sum(map(len, a.tokens))):
        if alt.cjk:
            parts.append(re.escape("".join(alt.tokens)))
            continue
        written = alt_shown(alt)
        if written is not None:
            parts.append(_shown_pattern(written))
            continue
        body = r"[\W_]*".join(re.escape(fold(token)) for token in alt.tokens)
        parts.append(r"(?<![^\W_])" + body + (r"\w*" if alt.prefix else r"(?![^\W_])"))
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def alt_shown(alt: Alt) -> tuple[str, ...] | None:
    """What an alternative of symbol-word or pictograph tokens stands for in a text
    (`c++`; an emoji sequence's pictographs), or None for words."""
    if alt.cjk or alt.prefix:
        return None
    written = tuple(shown(token) for token in alt.tokens)
    return None if None in written else written  # type: ignore[return-value]


def unit_written(unit: Unit) -> tuple[str, ...] | None:
    """What a symbol word's or an emoji's unit looks for in a lowercased text (`c++`;
    a sequence's pictographs, each), where no index holds its tokens (the facts' index
    has no terms column: subrosa.memory.recall tests their text, as for CJK); None for
    any other unit."""
    return alt_shown(unit.alts[0]) if len(unit.alts) == 1 and not unit.cjk else None


def _shown_pattern(written: tuple[str, ...]) -> str:
    if written[0][-1] in "+#":  # a symbol word, where no letter or digit comes before
        return r"(?<![^\W_])" + re.escape(written[0])
    return _BETWEEN_EMOJI.join(map(re.escape, written)) + _AFTER_EMOJI


def text_snippet(text: str, pattern: re.Pattern[str] | None, width: int = 110) -> str:
    """About `width` characters of `text` around its first match, matches in bold (the
    text is in hand; FTS5's snippet() would look the terms up in the index again,
    milliseconds each for a word in most messages, and sees one column only). The
    pattern's words are folded as the index folds them (snippet_pattern()) and are
    looked for in the text folded alike, so `cafe` marks `Café`."""
    folded, places = fold_text(text)

    def place(i: int) -> int:  # a place in `folded`, in `text`
        return i if places is None else places[i]

    first = pattern.search(folded) if pattern is not None else None
    at = place(first.start()) if first else 0
    start = max(0, at - width // 3)
    if start:
        space = text.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", at, end)
        end = space if space > at else end
    window = text[start:end]
    if pattern is not None:
        # Matches that touch (CJK words, written without spaces) are one bold run.
        runs = re.compile(f"(?:{pattern.pattern})+", pattern.flags)
        low = start if places is None else bisect_left(places, start)
        high = end if places is None else bisect_left(places, end)
        marked, done = [], 0
        for run in runs.finditer(folded[low:high]):
            a, b = place(low + run.start()) - start, place(low + run.end()) - start
            marked += [window[done:a], MARK[0], window[a:b], MARK[1]]
            done = b
        window = "".join(marked) + window[done:]
    return ("…" if start else "") + window + ("…" if end < len(text) else "")


def significant(score: float) -> float:
    """Six significant digits: FTS5 gives words in over half the rows an idf of 1e-6,
    so small archives have tiny scores whose order still matters."""
    return float(f"{score:.6g}")


def one_line(text: str) -> str:
    """One line, safe on a terminal and for the agent: whitespace collapsed, control and
    format characters (ESC sequences, bidi overrides) dropped, tags and links escaped,
    by subrosa.text's terminal_line; plain ASCII without `<`, `&`, `](` or `[[` is
    returned without importing that module (it costs search ~4 ms)."""
    line = " ".join(text.split())
    if is_plain(line):
        return line  # nothing the sanitizer would touch: no tag, entity, link or escape
    from subrosa.text import terminal_line

    return terminal_line(line)
