"""How text becomes search terms, on the index side and on the query side. Standard
library only, pure.

The full-text index holds each message's words as FTS5's unicode61 tokenizer cuts
them (lowercase, diacritics removed, split at anything that is not a letter or a
digit, so `auth_token`, `pre-commit` and `src/app.py` are indexed as their parts),
plus one column of terms computed here (index_terms): each CJK character on its own
(subrosa.cjk), the parts of camelCase identifiers (`RealTimeProtection` is also
`real`, `time`, `protection`), and a token for what unicode61 takes for separators:
a short word with `++` or `#` (`C++` is `zzsymcpp`, `C#` `zzsymcsharp`) and each
emoji (`🚀` is `zzemoji1f680`). Everything else happens to the query (subrosa.query):

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

from subrosa.cjk import RUN_BREAK, cjk_index_text, has_cjk
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
# ... and of the pictographs (see _E2_PICTOGRAPHS): both kept by one bytes.translate, which
# deletes every other byte (most non-ASCII texts keep none: German, French, Spanish).
_NOT_LEADS = bytes(b for b in range(256) if b not in _CJK_LEAD | {0xC2, 0xE2, 0xE3, 0xF0})
_NOT_EMOJI_LEAD = bytes(b for b in range(256) if b not in (0xC2, 0xE2, 0xE3, 0xF0))
_PARTS: dict[str, list[str]] = {}  # camel_parts, remembered (names repeat a lot)
# The parts of one: `XMLHttpRequest` is XML, Http, Request; digits stay with the part
# before them (`v2`, `utf8`).
_PART = compile_lazily(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+[0-9]*")
# Keeps CJK runs (and CJK from identifier parts) apart in the terms column, so that a
# phrase never matches across them.
BREAK = RUN_BREAK.strip()
_APART = f" {BREAK} "
# An identifier longer than this is no name a person types (a hash, base64).
MAX_IDENTIFIER = 64

# Symbol words: a run of one to three ASCII letters or digits, not preceded by a letter
# or digit (CJK excepted: `用C++写`), followed by `++` (C++, g++, c++17: digits may
# follow, a letter or a third + may not) or `#` (C#, F#: nothing alphanumeric may
# follow, so `pr#12` and `a#b` are no symbol words). unicode61 indexes `C++` as `c`;
# the terms column also holds SYMBOL + the word lowercased + `pp` or `sharp`
# (`zzsymcpp`, `zzsymcsharp`), a token unicode61 keeps whole and no text spells. Found
# with bytes.find: most texts hold neither mark.
SYMBOL = "zzsym"
_MARKS = ((b"++", "pp"), (b"#", "sharp"))
_SHOWN_MARKS = {"pp": "++", "sharp": "#"}
# Emoji: each Extended_Pictographic character (Unicode's emoji-data.txt, the property
# grapheme clusters are cut by; ranges generated from it, ℹ U+2139 left out: it is a
# letter to unicode61 already) gets EMOJI + its code point in hex (`zzemoji1f680`).
# What only modifies or joins one is left out: skin tones (U+1F3FB-1F3FF), variation
# selectors (VS15, VS16), the zero width joiner, keycaps, tags. Regional indicators
# (flags) are no pictographs and get no token. A ZWJ sequence (👨‍👩‍👧, ❤️‍🔥) is its
# pictographs in a row, a phrase, so a query of the sequence finds it and one of its
# pictographs finds it too; a sequence of more than MAX_JOINED_EMOJI is cut into such
# phrases.
EMOJI = "zzemoji"
_BMP_PICTOGRAPHS = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2194-\u2199\u21a9\u21aa\u231a\u231b\u2328\u2388"
    "\u23cf\u23e9-\u23f3\u23f8-\u23fa\u24c2\u25aa\u25ab\u25b6\u25c0\u25fb-\u25fe"
    "\u2600-\u2605\u2607-\u2612\u2614-\u2685\u2690-\u2705\u2708-\u2712\u2714\u2716"
    "\u271d\u2721\u2728\u2733\u2734\u2744\u2747\u274c\u274e\u2753-\u2755\u2757"
    "\u2763-\u2767\u2795-\u2797\u27a1\u27b0\u27bf\u2934\u2935\u2b05-\u2b07\u2b1b"
    "\u2b1c\u2b50\u2b55\u3030\u303d\u3297\u3299"
)
_ASTRAL_PICTOGRAPHS = (
    "\U0001f000-\U0001f0ff\U0001f10d-\U0001f10f\U0001f12f\U0001f16c-\U0001f171\U0001f17e\U0001f17f"
    "\U0001f18e\U0001f191-\U0001f19a\U0001f1ad-\U0001f1e5\U0001f201-\U0001f20f"
    "\U0001f21a\U0001f22f\U0001f232-\U0001f23a\U0001f23c-\U0001f23f"
    "\U0001f249-\U0001f3fa\U0001f400-\U0001f53d\U0001f546-\U0001f64f"
    "\U0001f680-\U0001f6ff\U0001f774-\U0001f77f\U0001f7d5-\U0001f7ff"
    "\U0001f80c-\U0001f80f\U0001f848-\U0001f84f\U0001f85a-\U0001f85f"
    "\U0001f888-\U0001f88f\U0001f8ae-\U0001f8ff\U0001f90c-\U0001f93a"
    "\U0001f93c-\U0001f945\U0001f947-\U0001faff\U0001fc00-\U0001fffd"
)
# What may stand between the pictographs of one sequence, or after one: presentation
# selectors, skin tones, keycap, tags.
_EMOJI_MARKS = "\ufe0e\ufe0f\U0001f3fb-\U0001f3ff\u20e3\U000e0020-\U000e007f"
MAX_JOINED_EMOJI = 8
_PICTOGRAPH = compile_lazily(f"[{_BMP_PICTOGRAPHS}{_ASTRAL_PICTOGRAPHS}]")
# Sequences are found with the astral pictographs' ranges taken as one (U+1F000-1FFFD):
# Python's `re` tests a class's ranges above U+FFFF one by one at every character (its
# BMP part is one table lookup); the pictographs of each sequence found are then told
# by _PICTOGRAPH (emoji_sequences).
_ANY_PICTOGRAPH = f"[{_BMP_PICTOGRAPHS}\U0001f000-\U0001fffd]"
_EMOJI_SEQUENCE = compile_lazily(
    f"{_ANY_PICTOGRAPH}[{_EMOJI_MARKS}]*"
    f"(?:\u200d[{_EMOJI_MARKS}]*{_ANY_PICTOGRAPH}[{_EMOJI_MARKS}]*){{0,{MAX_JOINED_EMOJI - 1}}}"
)
# The UTF-8 forms of every pictograph, near enough (a superset: U+1F000-1FFFF whole, a
# few neighbours elsewhere), looked for in a text's bytes (_may_hold_emoji) before an
# expression searches its characters: a class of 78 ranges costs Python's `re` a test
# of each range at every character (0.55 s for the non-ASCII tenth of 100 MB of text),
# and most non-ASCII texts hold no emoji but — … ’ → or box drawing. Each expression
# starts with one literal byte, which `re` scans for in a tight loop (an alternation
# of several first bytes costs it a class test at every byte: 1.5 % of an ingest's
# instructions). tests/test_symbols.py holds them to the class, code point by code point.
_E2_PICTOGRAPHS = compile_lazily(
    b"\xe2(?:[\x98-\x9e]|\x80\xbc|\x81\x89|\x84[\xa2\xb9]|\x86[\x94-\xaa]|\x8c[\x9a\x9b\xa8]"
    b"|\x8e\x88|\x8f[\x8f\xa9-\xba]|\x93\x82|\x96[\xaa\xab\xb6]|\x97[\x80\xbb-\xbe]"
    b"|\xa4[\xb4\xb5]|\xac[\x85-\x87\x9b\x9c]|\xad[\x90\x95])"
)
_E3_PICTOGRAPHS = compile_lazily(b"\xe3(?:\x80[\xb0\xbd]|\x8a[\x97\x99])")  # 〰 〽 ㊗ ㊙
# A text's symbol words and emoji sequences get a token each once, at most this many
# of each (a pasted wall of emoji or of `x++` is no list of things a person looks for).
MAX_SYMBOLS = 256

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


def symbol_words(data: bytes, classes: bytes | None = None) -> list[tuple[int, int, str]]:
    """The symbol words (see SYMBOL) in UTF-8 `data`, in order: where each starts and
    ends (byte offsets, ASCII boundaries) and its token. `classes`: `data` mapped by
    _BYTE_CLASSES, when the caller has it."""
    if not _marks(data):
        return []
    classes = data.translate(_BYTE_CLASSES) if classes is None else classes
    found = []
    for mark, name in _MARKS:
        at = data.find(mark)
        while at >= 0:
            end = at + len(mark)
            if at and classes[at - 1] != 32 and _ends_symbol(data, classes, end, name):
                space = classes.rfind(b" ", max(0, at - 4), at)
                start = space + 1
                # Four letters or digits before the mark (`libc++`), or a letter of a
                # script written with spaces (`éc++`): no symbol word. After CJK it is
                # one (`用C++写`: Chinese and Japanese put no space between).
                if (space >= 0 or at < 4) and (space < 0 or not _letter_before(data, start)):
                    word = data[start:at].decode().lower()
                    found.append((start, end, f"{SYMBOL}{word}{name}"))
            at = data.find(mark, end)
    found.sort()
    return found


def _letter_before(data: bytes, at: int) -> bool:
    """Whether the character before byte `at` of UTF-8 `data` is a letter or digit
    other than CJK (the caller saw that it is no ASCII letter or digit)."""
    if data[at - 1] < 0x80:
        return False
    start = at - 1
    while start > max(0, at - 4) and 0x80 <= data[start] < 0xC0:
        start -= 1
    char = data[start:at].decode(errors="replace")
    return char.isalnum() and not has_cjk(char)


def _marks(data: bytes) -> bool:
    """Whether `data` holds `#` or `++`: memchr for a byte first, and bytes.find, not
    `in` (which tries the operand as an integer first: twice the time on short texts)."""
    return data.find(b"#") >= 0 or (data.find(b"+") >= 0 and data.find(b"++") >= 0)


def _ends_symbol(data: bytes, classes: bytes, end: int, name: str) -> bool:
    """Whether what follows a mark at `end` lets it end a symbol word: `++` no letter
    and no third `+` (digits may follow: C++17), `#` no letter or digit."""
    if end >= len(data):
        return True
    after = data[end]
    if name == "pp":
        return after != 0x2B and not (classes[end] != 32 and not 0x30 <= after <= 0x39)
    return classes[end] == 32


def emoji_sequences(text: str) -> list[str]:
    """The emoji sequences of `text` as written (a pictograph, or several joined by
    ZWJ, with their selectors and skin tones), each once, in order."""
    if text.isascii():
        return []
    found = dict.fromkeys(_EMOJI_SEQUENCE.findall(text))
    return [sequence for sequence in found if _PICTOGRAPH.search(sequence)]


def has_emoji(text: str) -> bool:
    """Whether `text` holds a pictograph."""
    return not text.isascii() and _PICTOGRAPH.search(text) is not None


def split_emoji(text: str) -> tuple[list[str], str]:
    """The emoji sequences of `text` (each once, in order), and what is left of it with
    them taken out; linear in the text, however many it holds."""
    if text.isascii():
        return [], text
    found: dict[str, None] = {}

    def cut(match: re.Match[str]) -> str:
        sequence = match.group()
        if _PICTOGRAPH.search(sequence) is None:  # a skin tone or a flag alone
            return sequence
        found[sequence] = None
        return " "

    rest = _EMOJI_SEQUENCE.sub(cut, text)
    return list(found), rest


def emoji_tokens(sequence: str) -> tuple[str, ...]:
    """The tokens of one emoji sequence: its pictographs' (see EMOJI)."""
    return tuple(f"{EMOJI}{ord(char):x}" for char in _PICTOGRAPH.findall(sequence))


def shown(token: str) -> str | None:
    """What a symbol word's or a pictograph's token stands for in a text (lowercase:
    `c++`, `🚀`); None for any other token."""
    if token.startswith(SYMBOL):
        for name, mark in _SHOWN_MARKS.items():
            word = token[len(SYMBOL) : -len(name)]
            if token.endswith(name) and 1 <= len(word) <= 3 and word.isalnum():
                return word + mark
        return None
    if token.startswith(EMOJI) and len(token) <= len(EMOJI) + 6:
        try:
            char = chr(int(token[len(EMOJI) :], 16))
        except ValueError:
            return None
        return char if _PICTOGRAPH.match(char) else None
    return None


def _may_hold_emoji(data: bytes, kept: bytes) -> bool:
    """Whether UTF-8 `data`, whose bytes that may lead a pictograph are `kept` (C2, E2,
    E3, F0), may hold one (see _E2_PICTOGRAPHS): F0 9F (U+1F000-1FFFF), © or ®, or an
    E2 or E3 form of one (E2 leads — … ’ → too, E3 CJK punctuation and kana)."""
    if kept.find(b"\xf0") >= 0 and data.find(b"\xf0\x9f") >= 0:
        return True
    if kept.find(b"\xc2") >= 0 and (data.find(b"\xc2\xa9") >= 0 or data.find(b"\xc2\xae") >= 0):
        return True
    if kept.find(b"\xe2") >= 0 and _E2_PICTOGRAPHS.search(data) is not None:
        return True
    return kept.find(b"\xe3") >= 0 and _E3_PICTOGRAPHS.search(data) is not None


def _emoji_terms(text: str) -> str:
    """The tokens of a text's emoji sequences, each once (MAX_SYMBOLS at most), the
    sequences apart, so that a phrase of pictographs (a ZWJ sequence) is found only
    where they are joined."""
    sequences = list(dict.fromkeys(map(emoji_tokens, emoji_sequences(text))))
    return _APART.join(map(" ".join, sequences[:MAX_SYMBOLS]))


def index_terms(text: str, found: list[str] | None = None) -> str | None:
    """The terms column of a message: its CJK characters one per token (subrosa.cjk),
    then the parts of its camelCase identifiers, each once, then the tokens of its
    symbol words and emoji (see SYMBOL, EMOJI), each once; None when there are none
    (most messages). `found`: the identifiers (what identifiers() returns), when the
    caller found them already."""
    data = text.encode()
    classes = data.translate(_BYTE_CLASSES)
    if found is None:
        found = _identifiers(data, classes)
    joined = " ".join(identifier_terms(found)) if found else ""
    # Most texts hold neither `#` nor `++` (_marks, inlined: this runs for every
    # message), and most are ASCII.
    if data.find(b"#") >= 0 or (data.find(b"+") >= 0 and data.find(b"++") >= 0):
        words = dict.fromkeys(token for _, _, token in symbol_words(data, classes))
        joined = " ".join([joined, *list(words)[:MAX_SYMBOLS]]).strip()
    if len(data) == len(text):
        return joined or None
    leads = data.translate(None, _NOT_LEADS)  # what can lead a CJK character or an emoji
    emoji = leads.translate(None, _NOT_EMOJI_LEAD)  # C2 E2 E3 F0 (E3 and F0 lead CJK too)
    if emoji and _may_hold_emoji(data, emoji):
        joined = f"{joined} {_emoji_terms(text)}".strip()
    if len(emoji) < len(leads) or emoji.find(b"\xe3") >= 0 or emoji.find(b"\xf0") >= 0:
        cjk = cjk_index_text(text)
    else:
        cjk = None
    if not joined:
        return cjk
    return f"{cjk}{RUN_BREAK}{joined}" if cjk else joined


# ---------------------------------------------------------------- the query side


def is_stopword(token: str) -> bool:
    return token in STOPWORDS


# A word typed that the archive holds in no form is read as the archive's words one
# typo away (docs/search.md, "Misspelt words"), when it has this many letters: below,
# too many real words are one typo from each other (`form`: from, fork, foam).
TYPO_MIN = 5
# ... and at most this many: a longer word is pasted, not typed (and its ~50
# candidates per letter would cost more than the query).
TYPO_MAX = 32
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def one_typo_away(word: str) -> list[str]:
    """The words one edit from `word` (lowercase ASCII letters), in Damerau-Levenshtein
    distance: a letter dropped, added, replaced, or two neighbours swapped. Sorted,
    without `word`; ~50 per letter of the word."""
    out: set[str] = set()
    for at in range(len(word) + 1):
        head, tail = word[:at], word[at:]
        if tail:
            out.add(head + tail[1:])
            if len(tail) > 1:
                out.add(head + tail[1] + tail[0] + tail[2:])
        for letter in _LETTERS:
            out.add(head + letter + tail)
            if tail:
                out.add(head + letter + tail[1:])
    out.discard(word)
    return sorted(out)


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
