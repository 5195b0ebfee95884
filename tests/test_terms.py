"""How text becomes search terms (subrosa.terms, subrosa.stem) and a query becomes units
(subrosa.query): pure functions, tested without a database."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subrosa.cjk import cjk_index_text
from subrosa.query import parse_query, pieces, query_units
from subrosa.stem import stem, stem_german
from subrosa.terms import (
    BREAK,
    camel_parts,
    german_forms,
    identifier_terms,
    identifiers,
    index_terms,
    is_german,
    joined_splits,
    word_forms,
)

# Porter's own examples (his paper and the reference implementation's vocabulary).
PORTER = {
    "caresses": "caress",
    "ponies": "poni",
    "ties": "ti",
    "cats": "cat",
    "agreed": "agre",
    "plastered": "plaster",
    "motoring": "motor",
    "sing": "sing",
    "conflated": "conflat",
    "troubled": "troubl",
    "sized": "size",
    "hopping": "hop",
    "falling": "fall",
    "hissing": "hiss",
    "failing": "fail",
    "filing": "file",
    "happy": "happi",
    "sky": "sky",
    "relational": "relat",
    "conditional": "condit",
    "rational": "ration",
    "digitizer": "digit",
    "operator": "oper",
    "hopefulness": "hope",
    "formalize": "formal",
    "electrical": "electr",
    "goodness": "good",
    "allowance": "allow",
    "adjustable": "adjust",
    "replacement": "replac",
    "dependent": "depend",
    "adoption": "adopt",
    "generalization": "gener",
    "controll": "control",
    "roll": "roll",
}


def test_the_porter_stemmer_agrees_with_its_author() -> None:
    assert {word: stem(word) for word in PORTER} == PORTER


@given(st.text(max_size=30))
def test_the_stemmer_takes_any_text(word: str) -> None:
    assert isinstance(stem(word), str)


@pytest.mark.parametrize(
    ("word", "expected", "not_expected"),
    [
        ("cost", {"costs", "costing", "costed"}, set()),
        ("costs", {"cost", "costing"}, set()),
        ("tiles", {"tile", "tiling", "tiled"}, set()),
        ("freezes", {"freeze", "freezing"}, set()),
        ("arrays", {"array"}, set()),
        ("stopped", {"stop", "stopping", "stops"}, set()),
        ("study", {"studies", "studied", "studying"}, set()),
        ("configure", {"configuration", "configured", "configuring"}, set()),
        ("general", set(), {"generous", "generate"}),  # Porter's "gener", not generated
    ],
)
def test_a_word_finds_its_forms(word: str, expected: set[str], not_expected: set[str]) -> None:
    forms = word_forms(word)
    assert forms[0] == word
    assert expected <= set(forms)
    assert not (not_expected & set(forms))
    assert all(stem(form) == stem(word) for form in forms)


# Snowball's German stemmer on words from its own sample vocabulary and others; the
# classic algorithm and the revised one (snowballstemmer 3) agree on every one.
SNOWBALL_GERMAN = {
    "aufeinander": "aufeinand",
    "aufeinanderfolge": "aufeinanderfolg",
    "aufeinanderfolgenden": "aufeinanderfolg",
    "aufeinanderprallten": "aufeinanderprallt",
    "käufer": "kauf",
    "kategorie": "kategori",
    "kätzchen": "katzch",
    "katze": "katz",
    "deutschen": "deutsch",
    "englische": "englisch",
    "entscheidungen": "entscheid",
    "häufigkeit": "haufig",
    "ergebnisse": "ergebnis",
    "kenntnisse": "kenntnis",
    "möglichkeiten": "moglich",
    "freundlichkeit": "freundlich",
    "fröhlichen": "frohlich",
    "schönheit": "schonheit",
    "leistungen": "leistung",
    "vollständig": "vollstand",
    "wichtigsten": "wichtig",
    "gestern": "gest",
    "läuft": "lauft",
    "straße": "strass",
    "bedeutung": "bedeut",
}


def test_the_german_stemmer_agrees_with_snowball() -> None:
    assert {word: stem_german(word) for word in SNOWBALL_GERMAN} == SNOWBALL_GERMAN


@given(st.text(max_size=30))
def test_the_german_stemmer_takes_any_text(word: str) -> None:
    assert isinstance(stem_german(word), str)


def test_a_german_word_finds_its_forms() -> None:
    assert {"deutsche", "deutschen", "deutscher"} <= set(german_forms("deutsch"))
    assert {"stimmen"} <= set(german_forms("stimme"))
    assert {"warte", "wart"} <= set(german_forms("warten"))
    assert {"entscheidung"} <= set(german_forms("entscheidungen"))
    for word in ("deutsch", "stimme", "warten", "läuft"):
        assert all(stem_german(form) == stem_german(word) for form in german_forms(word))
    assert german_forms("und") == german_forms("ist") == german_forms("ton") == []


def test_german_forms_only_in_a_german_query() -> None:
    # An English query never matches German forms ("build" is not "builder", "list"
    # not "listen"); a German one, told by its function words or letters, does.
    def forms(query: str) -> set[str]:
        return {alt.tokens[0] for unit in query_units(parse_query(query)) for alt in unit.alts}

    assert not {"builder", "listen"} & forms("build list")
    assert not {"builder", "listen"} & forms("perf start timer cache dir")
    assert {"builder", "listen"} <= forms("ich build list")
    assert "deutschen" in forms("warum deutsch")
    assert "deutschen" in forms("deutsch für alle")
    assert "deutschen" in forms("zeitstrahl der deutsch mit")  # two weak cues
    assert "deutschen" not in forms("deutsch mit")  # one: MIT, a licence
    assert is_german(["öfter"]) and is_german(["nicht"]) and not is_german(["was", "die"])
    exact = [alt for unit in query_units(parse_query("warum deutsch")) for alt in unit.alts]
    assert [alt.tokens[0] for alt in exact if alt.exact] == ["warum", "deutsch"]


@pytest.mark.parametrize("word", ["the", "with", "is", "go", "x", "東京", "café", "k8s", "utf8"])
def test_stopwords_short_and_foreign_words_have_no_other_forms(word: str) -> None:
    assert word_forms(word) == [word]


def test_identifiers_by_their_parts() -> None:
    assert camel_parts("isSyncingBackfill") == ["is", "syncing", "backfill"]
    assert camel_parts("XMLHttpRequest") == ["xml", "http", "request"]
    assert camel_parts("RealTimeProtection") == ["real", "time", "protection"]
    assert camel_parts("v2Config") == ["v2", "config"]
    text = "use isSyncingBackfill, then isSyncingBackfill again; plain words and snake_case"
    assert identifiers(text) == ["isSyncingBackfill"]
    assert identifier_terms(identifiers(text)) == ["is", "syncing", "backfill"]
    assert identifier_terms(["getUserName", "setUserName"]) == ["get", "user", "name", "set"]
    assert identifier_terms(["a" * 30 + "B" + "c" * 40]) == []  # no name: a hash, base64


# What a camelCase identifier is, as a regular expression (subrosa.terms finds the same
# names faster, in bytes).
CAMEL = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*?[a-z0-9][A-Z])[A-Za-z0-9]+")


@given(st.text(alphabet="aAbZz09_-. /éK東→가ᄀ\U00020000\uff70", max_size=60))
def test_identifiers_are_what_the_expression_says(text: str) -> None:
    assert identifiers(text) == list(dict.fromkeys(CAMEL.findall(text)))
    cjk = cjk_index_text(text)
    assert (index_terms(text) or "").startswith(cjk or "")


def test_the_terms_column_holds_cjk_and_identifier_parts_apart() -> None:
    assert index_terms("plain English, nothing else") is None
    assert index_terms("会議 at RealTimeProtection") == f"会 議 {BREAK} real time protection"
    assert index_terms("useState and 東京") == f"東 京 {BREAK} use state"
    # The caller may give the identifiers it found already (ingest does, faster).
    assert index_terms("useState", []) is None


def test_a_word_typed_as_one_is_cut_in_two() -> None:
    assert ("pre", "commit") in joined_splits("precommit")
    assert ("real", "time") in joined_splits("realtime")
    assert joined_splits("fix") == []
    assert joined_splits("x" * 3000) == []  # a pasted run is not cut thousands of ways


def _alts(query: str) -> list[set[str]]:
    return [{" ".join(alt.tokens) for alt in unit.alts} for unit in query_units(parse_query(query))]


def test_a_query_becomes_units() -> None:
    units = query_units(parse_query('how to cache "in the" dep* isSyncingBackfill pre-commit'))
    labels = [(unit.label, unit.stop) for unit in units]
    assert labels == [
        ("how", True),
        ("to", True),
        ("cache", False),
        ("in the", False),
        ("dep", False),
        ("issyncingbackfill", False),
        ("pre commit", False),
    ]
    alts = _alts('how to cache "in the" dep* isSyncingBackfill pre-commit')
    assert {"cache", "caches", "cached", "caching"} <= alts[2]
    assert alts[3] == {"in the"}  # a phrase keeps its meaning: no other forms
    assert alts[4] == {"dep"} and units[4].alts[0].prefix
    assert alts[5] == {"issyncingbackfill", "is syncing backfill"}
    assert alts[6] == {"pre commit", "precommit"}
    (joined,) = query_units(parse_query("precommit"))
    assert ("pre", "commit") in {alt.tokens for alt in joined.splits}


def test_a_query_of_stopwords_only_requires_them() -> None:
    assert [unit.stop for unit in query_units(parse_query("to be or not"))] == [False] * 4


def test_quoted_words_match_as_written() -> None:
    assert _alts('"costs"') == [{"costs"}]


def test_the_second_tier_looks_for_pieces() -> None:
    cjk = query_units(parse_query("對不上"))[0]
    assert [piece.label for piece in pieces(cjk)] == ["對不", "不上", "對", "不", "上"]
    path = query_units(parse_query("husky.sh"))[0]
    assert [piece.label for piece in pieces(path)] == ["husky sh", "husky", "sh"]
    word = query_units(parse_query("cache"))[0]
    assert pieces(word) == [word]
