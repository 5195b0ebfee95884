"""The Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980), as
its author's reference implementation has it. Standard library only, pure.

Search uses it as the judge of which spellings of an English word are one word
("cost", "costs", "costing"; "tile", "tiles", "tiling"): subrosa.terms generates the
inflected and derived forms of a query word and keeps those whose stem is the word's.
The index stores words as written, so nothing here runs at ingest (docs/search.md
says why), and the same code can build the query for any engine.

stem_german, Snowball's German stemmer, judges German forms the same way (in a German
query only: subrosa.terms.is_german).

Written here rather than imported: the algorithm is a page long, and `subrosa
search` must not load a package (NLTK, snowballstemmer) for it.
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiou")

# Step 2, 3 and 4 suffixes: (suffix, replacement), tried longest first within a step.
_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _by_length(rules: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(rules, key=lambda rule: -len(rule[0])))


_STEP2_SORTED = _by_length(_STEP2)
_STEP3_SORTED = _by_length(_STEP3)
_STEP4_SORTED = tuple(sorted(_STEP4, key=len, reverse=True))


def _consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: how many vowel-consonant sequences `stem` has."""
    count, previous_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            count += 1
        previous_vowel = vowel
    return count


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (hop, not hoop or snow)."""
    if len(word) < 3 or word[-1] in "wxy":
        return False
    n = len(word)
    return _consonant(word, n - 3) and not _consonant(word, n - 2) and _consonant(word, n - 1)


def _step1a(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-2]
    if word.endswith("ss"):
        return word
    if word.endswith("s"):
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if not _has_vowel(stem):
                return word
            return _step1b_tidy(stem)
    return word


def _step1b_tidy(stem: str) -> str:
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if _double_consonant(stem) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _cvc(stem):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    if word.endswith("y") and _has_vowel(word[:-1]):
        return word[:-1] + "i"
    return word


def _replace(word: str, rules: tuple[tuple[str, str], ...]) -> str:
    for suffix, replacement in rules:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > 0 else word
    return word


def _step4(word: str) -> str:
    for suffix in _STEP4_SORTED:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) <= 1:
                return word
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return word
            return stem
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """The Porter stem of a lowercase English word (words of two letters or fewer,
    and anything not plain lowercase ASCII letters, are returned as they are)."""
    if len(word) <= 2 or not (word.isascii() and word.isalpha() and word.islower()):
        return word
    word = _step1c(_step1b(_step1a(word)))
    word = _replace(word, _STEP2_SORTED)
    word = _replace(word, _STEP3_SORTED)
    return _step5(_step4(word))


# ---------------------------------------------------------------- German

# The German stemmer of the Snowball project (M. F. Porter, snowballstem.org, "German
# stemming algorithm", the classic version): the judge of which spellings of a German
# word are one word ("deutsch", "deutsche", "deutschen"; "entscheidung",
# "entscheidungen"), as stem() is for English.
_DE_VOWELS = frozenset("aeiouyäöü")
_S_ENDING = frozenset("bdfghklmnrt")
_ST_ENDING = frozenset("bdfghklmnt")
_UMLAUTS = str.maketrans("äöü", "aou")


def _de_regions(word: str) -> tuple[int, int]:
    """R1 and R2 (where the region after the first non-vowel following a vowel
    starts, and the same again after R1); R1 leaves at least three letters before it."""

    def after(start: int) -> int:
        for i in range(start + 1, len(word)):
            if word[i] not in _DE_VOWELS and word[i - 1] in _DE_VOWELS:
                return i + 1
        return len(word)

    r1 = after(0)
    return max(r1, 3), after(r1)


@lru_cache(maxsize=4096)
def stem_german(word: str) -> str:
    """The Snowball stem of a lowercase German word, umlauts folded (ä -> a), as an
    index that removes diacritics holds it. Anything that is not lowercase letters is
    returned as it is."""
    if not (word.isalpha() and word.islower()):
        return word
    word = word.replace("ß", "ss")
    # u and y between vowels are consonants (U, Y).
    chars = list(word)
    for i in range(1, len(chars) - 1):
        if chars[i] in "uy" and chars[i - 1] in _DE_VOWELS and chars[i + 1] in _DE_VOWELS:
            chars[i] = chars[i].upper()
    word = "".join(chars)
    r1, r2 = _de_regions(word)
    # Step 1: em ern er | e en es | s (after a valid s-ending), in R1.
    for suffix in ("ern", "em", "er", "en", "es", "e", "s"):
        if word.endswith(suffix):
            at = len(word) - len(suffix)
            if at >= r1 and (suffix != "s" or (at > 0 and word[at - 1] in _S_ENDING)):
                word = word[:at]
                if suffix in ("e", "en", "es") and word.endswith("niss"):
                    word = word[:-1]
            break
    # Step 2: en er est | st (after a valid st-ending, itself after three letters), in R1.
    for suffix in ("est", "en", "er", "st"):
        if word.endswith(suffix):
            at = len(word) - len(suffix)
            if at >= r1 and (suffix != "st" or (at > 3 and word[at - 1] in _ST_ENDING)):
                word = word[:at]
            break
    # Step 3: derivational suffixes, in R2.
    for suffix in ("heit", "lich", "isch", "keit", "end", "ung", "ig", "ik"):
        if not word.endswith(suffix):
            continue
        at = len(word) - len(suffix)
        if at < r2:
            break
        if suffix in ("end", "ung"):
            word = word[:at]
            if word.endswith("ig") and len(word) - 2 >= r2 and not word[:-2].endswith("e"):
                word = word[:-2]
        elif suffix in ("ig", "ik", "isch"):
            if not word[:at].endswith("e"):
                word = word[:at]
        elif suffix in ("lich", "heit"):
            word = word[:at]
            if word.endswith(("er", "en")) and len(word) - 2 >= r1:
                word = word[:-2]
        else:  # keit
            word = word[:at]
            if word.endswith("lich") and len(word) - 4 >= r2:
                word = word[:-4]
            elif word.endswith("ig") and len(word) - 2 >= r2:
                word = word[:-2]
        break
    return word.lower().translate(_UMLAUTS)
