"""How text becomes search terms, on the index side and on the query side. Standard
library only, pure.

The full-text index holds each message's words as FTS5's unicode61 tokenizer cuts
them (lowercase, diacritics removed, split at anything that is not a letter or a
digit, so `auth_token`, `pre-commit` and `src/app.py` are indexed as their parts),
plus one column of terms computed here (index_terms): each CJK character on its own
(subrosa.cjk), and the parts of camelCase identifiers (`RealTimeProtection` is also
`real`, `time`, `protection`). Everything else happens to the query (subrosa.query):

- English forms (word_forms): a query word also matches its inflected and derived
  forms, those that share its Porter stem (subrosa.stem): "costs" finds "cost" and
  "costing", "tiles" finds "tiling". The forms are generated from the word and
  matched as written, so the index needs no stemmed copy of every word.
- German forms (german_forms), in a German query only (is_german): "deutsch" finds
  "deutschen", judged by Snowball's German stemmer (subrosa.stem.stem_german).
- Identifiers: `isSyncingBackfill` typed as such also matches the words "is syncing
  backfill" (and the identifier's parts in the index); `pre-commit` also matches
  "precommit"; "precommit" also matches `pre-commit` (joined_splits).
- Stopwords (STOPWORDS) are never required: a query's other words decide what
  matches, the stopwords only add to the score.

Why this split between index and query, and how a PostgreSQL tsvector reproduces it
(the same terms column, the same expanded query): docs/search.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from subrosa.cjk import RUN_BREAK, cjk_index_text
from subrosa.lazyre import compile_lazily
from subrosa.stem import stem, stem_german

# Words as unicode61 cuts them, near enough (underscore separates; FTS5 keeps
# letters, digits and private-use characters).
WORD = compile_lazily(r"[^\W_]+")
# A camelCase identifier: a run of ASCII letters and digits with a lowercase letter or
# a digit followed by a capital somewhere inside (`useState`, `XMLHttpRequest`,
# `v2Config`). They are found in a text's UTF-8 bytes mapped to classes (a: lowercase
# letter or digit, A: capital, space: anything else), where bytes.find and rfind do the
# scanning at C speed: a regular expression over every message was a tenth of
# ingest's time.
_CLASSES = bytearray(b" " * 256)
for _byte in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _CLASSES[_byte] = ord("a")
for _byte in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _CLASSES[_byte] = ord("A")
_BYTE_CLASSES = bytes(_CLASSES)
# The UTF-8 lead bytes of subrosa.cjk's blocks: a text without one holds no CJK. Every
# other byte, deleted by bytes.translate, leaves those (three times faster than
# searching with a regular expression's class).
_CJK_LEAD = frozenset([0xE1, *range(0xE3, 0xEE), 0xEF, 0xF0])
_NOT_CJK_LEAD = bytes(byte for byte in range(256) if byte not in _CJK_LEAD)
_PARTS: dict[str, list[str]] = {}  # camel_parts, remembered (names repeat a lot)
# The parts of one: `XMLHttpRequest` is XML, Http, Request; digits stay with the part
# before them (`v2`, `utf8`).
_PART = compile_lazily(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+[0-9]*")
# Keeps CJK runs (and CJK from identifier parts) apart in the terms column, so that a
# phrase never matches across them.
BREAK = RUN_BREAK.strip()
# An identifier longer than this is no name a person types (a hash, base64).
MAX_IDENTIFIER = 64

_STOPWORDS = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up us very vs was we were what when where
    which while who whom why will with would you your yours
    aber als am auch auf aus bei bin bis das dass dem den der des die doch ein eine einem
    einen einer es für hat ich ist mit nach nicht noch oder sich sie sind und uns von vor
    warum was weil wie wir wo zu zum zur
    au aux ce ces dans de du elle en est et il je la le les leur mais ne nous ou par pas
    pour qu que qui sa se ses son sur un une vous
    al con del el es los las lo para por qué se su sus una y
"""
# English words, then the commonest German, French and Spanish function words.
STOPWORDS = frozenset(_STOPWORDS.split())

# Suffixes whose removal may give a word's base ("tiling" -> "til" + e), and the
# suffixes forms are built with. word_forms keeps only what shares the Porter stem.
_STRIP = (
    ("ies", "y"),
    ("ied", "y"),
    ("iest", "y"),
    ("ier", "y"),
    ("ily", "y"),
    ("sses", "ss"),
    ("es", ""),
    ("es", "e"),
    ("s", ""),
    ("ed", ""),
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
    ("ers", ""),
    ("ers", "e"),
    ("er", ""),
    ("er", "e"),
    ("ly", ""),
    ("ments", ""),
    ("ment", ""),
    ("ations", "e"),
    ("ations", ""),
    ("ation", "e"),
    ("ation", ""),
    ("ions", ""),
    ("ion", ""),
    ("ion", "e"),
    ("ness", ""),
)
_VOWELS = frozenset("aeiou")
MAX_FORMS = 24


# ---------------------------------------------------------------- the index side


def camel_parts(identifier: str) -> list[str]:
    """The lowercase parts of a camelCase identifier (`isSyncingBackfill` -> is,
    syncing, backfill)."""
    return [part.lower() for part in _PART.findall(identifier)]


def identifiers(text: str) -> list[str]:
    """The camelCase identifiers in `text`, each once, in order."""
    return _identifiers(text.encode(), None)


def _identifiers(data: bytes, classes: bytes | None) -> list[str]:
    classes = data.translate(_BYTE_CLASSES) if classes is None else classes
    at = classes.find(b"aA")
    if at < 0:
        return []
    found: dict[bytes, None] = {}
    while at >= 0:
        start = classes.rfind(b" ", 0, at) + 1
        end = classes.find(b" ", at)
        if end < 0:
            end = len(classes)
        found[data[start:end]] = None
        at = classes.find(b"aA", end)
    return [name.decode() for name in found]


def identifier_terms(found: Iterable[str]) -> list[str]:
    """The parts of the identifiers (MAX_IDENTIFIER characters at most), each once:
    a message's identifiers share most of their parts (getUser, setUser, userId)."""
    parts: dict[str, None] = {}
    for name in found:
        if len(name) <= MAX_IDENTIFIER:
            split = _PARTS.get(name)
            if split is None:
                if len(_PARTS) >= 65536:
                    _PARTS.clear()
                split = _PARTS[name] = camel_parts(name)
            parts.update(dict.fromkeys(split))
    return list(parts)


def index_terms(text: str, found: list[str] | None = None) -> str | None:
    """The terms column of a message: its CJK characters one per token (subrosa.cjk),
    then the parts of its camelCase identifiers, each once; None when there are none
    (most messages). `found`: the identifiers (what identifiers() returns), when the
    caller found them already (ingest finds them faster)."""
    if found is None:
        data = text.encode()
        found = _identifiers(data, data.translate(_BYTE_CLASSES))
        ascii_only = len(data) == len(text)
        cjk = (
            None if ascii_only or not data.translate(None, _NOT_CJK_LEAD) else cjk_index_text(text)
        )
    else:
        cjk = None if text.isascii() else cjk_index_text(text)
    if not found:
        return cjk
    parts = " ".join(identifier_terms(found))
    if not parts:
        return cjk
    return f"{cjk}{RUN_BREAK}{parts}" if cjk else parts


# ---------------------------------------------------------------- the query side


def is_stopword(token: str) -> bool:
    return token in STOPWORDS


def _bases(word: str) -> set[str]:
    bases = {word}
    for suffix, replacement in _STRIP:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            base = word[: -len(suffix)] + replacement
            bases.add(base)
            if len(base) >= 3 and base[-1] == base[-2] and base[-1] not in _VOWELS | {"l", "s"}:
                bases.add(base[:-1])  # stopped -> stopp -> stop
    return bases


def _syllables(word: str) -> int:
    return len(re.findall(r"[aeiouy]+", word))


def _grown(base: str) -> Iterable[str]:
    """Forms built from `base` by the regular rules of English spelling."""
    yield base
    if base.endswith("e"):
        short = base[:-1]
        yield from (base + s for s in ("s", "d", "ly", "ment", "ments", "ness"))
        yield from (short + s for s in ("ing", "er", "ers", "ation", "ations", "ion", "ions"))
        yield from (short + s for s in ("able", "ive"))
        return
    if base.endswith("y") and len(base) > 2 and base[-2] not in _VOWELS:
        short = base[:-1]
        yield from (short + s for s in ("ies", "ied", "ier", "iest", "ily", "iness"))
        yield base + "ing"
        return
    sibilant = base.endswith(("s", "x", "z", "ch", "sh", "o"))
    yield base + ("es" if sibilant else "s")
    yield from (base + s for s in ("ed", "ing", "er", "ers", "ly", "ment", "ments", "ness"))
    yield from (base + s for s in ("ation", "ations", "ion", "ions", "able", "ive"))
    if (
        len(base) >= 3
        and base[-1] not in _VOWELS | {"w", "x", "y"}
        and base[-2] in _VOWELS
        and base[-3] not in _VOWELS
        and _syllables(base) == 1
    ):
        yield from (base + base[-1] + s for s in ("ed", "ing", "er", "ers"))  # stop: stopped


def word_forms(word: str) -> list[str]:
    """`word` and its other English forms: inflections and common derivations built
    from it, kept when their Porter stem is the word's (at most MAX_FORMS, the word
    first). Words under three letters, stopwords, and anything but lowercase ASCII
    letters have no other forms."""
    if len(word) < 3 or not (word.isascii() and word.isalpha()) or word in STOPWORDS:
        return [word]
    target = stem(word)
    forms = [word]
    seen = {word}
    for base in sorted(_bases(word)):
        for form in _grown(base):
            if form not in seen:
                seen.add(form)
                if stem(form) == target:
                    forms.append(form)
    return forms[:1] + sorted(forms[1:], key=lambda f: (len(f), f))[: MAX_FORMS - 1]


# Words that say a query is German (its words then also match their German forms,
# german_forms): common German function words that are no English words or names
# ("was", "die", "also", "will", "mit", "der" are), and any of ä ö ü ß.
_GERMAN_CUES = """
    aber alle allem allen aller alles als andere anderen anders auch auf aus bei bisher
    bist bitte dann dass dein deine denn derzeit dich diese diesem diesen dieser dieses
    doch dort durch ein eine einem einen einer eines etwa etwas euch gegen gibt habe
    haben hast hatte hier ich ihm ihn ihr ihre immer ist jetzt kann kein keine keinen
    mehr mein meine mich mir muss nach nicht nichts noch nur oder ohne schon sehr seit
    sich sie sind soll sollte sondern und uns unter viel vom warum weil welche welcher
    welches wenn werden wie wieder wir wird wurde zum zur zwischen
"""
GERMAN_CUES = frozenset(_GERMAN_CUES.split())
# German function words that English text also has (a name, a word, an abbreviation):
# two of them make a query German ("zeitstrahl der sessions mit uhrzeiten").
GERMAN_WEAK_CUES = frozenset(["das", "dem", "den", "der", "des", "die", "mit", "von", "wo"])
_GERMAN_LETTERS = frozenset("äöüß")


def is_german(words: Iterable[str]) -> bool:
    """Whether a query's (lowercase) words look German: one of them a German function
    word (GERMAN_CUES) or holding ä, ö, ü or ß, or two of them GERMAN_WEAK_CUES."""
    weak = 0
    for word in words:
        if word in GERMAN_CUES or not _GERMAN_LETTERS.isdisjoint(word):
            return True
        weak += word in GERMAN_WEAK_CUES
    return weak >= 2


# German inflection: what Snowball's German stemmer strips (step 1 and 2), the
# endings German forms are built with.
_DE_ENDINGS = ("ern", "em", "er", "en", "es", "e", "s", "n", "est", "st")
MAX_GERMAN = 12


def german_forms(word: str) -> list[str]:
    """The other German forms of `word` (deutsch: deutsche, deutschen, deutscher; stimme:
    stimmen): endings taken off and put on, kept when their Snowball German stem is
    the word's (subrosa.stem.stem_german); at most MAX_GERMAN, shortest first. Words
    under four letters, stopwords and anything but lowercase letters have none."""
    if len(word) < 4 or not word.isalpha() or not word.islower() or word in STOPWORDS:
        return []
    target = stem_german(word)
    bases = {word} | {word[: -len(ending)] for ending in _DE_ENDINGS if word.endswith(ending)}
    forms = {base + ending for base in bases if len(base) >= 3 for ending in ("", *_DE_ENDINGS)}
    forms.discard(word)
    kept = [form for form in forms if stem_german(form) == target]
    return sorted(kept, key=lambda f: (len(f), f))[:MAX_GERMAN]


MAX_JOINED = 32


def joined_splits(word: str) -> list[tuple[str, str]]:
    """Where a word typed as one may be two in the text ("precommit" for `pre-commit`,
    "realtime" for "real time"): each cut into two parts of three letters or more. A
    word longer than any English compound (MAX_JOINED letters) is not cut: a pasted hash
    or a run of one letter would give thousands of cuts to look up."""
    if not 6 <= len(word) <= MAX_JOINED or not word.isalnum():
        return []
    return [(word[:i], word[i:]) for i in range(3, len(word) - 2)]
