"""A phrase's or a prefix's probe lists the ids of its newest matches, and the tiers
take their candidates from that list instead of walking the index again
(subrosa.archive.search._probe_listing(), _newest_listed()): `subrosa search` finds
exactly what it finds without the list, for every way the list is read (a phrase's
first window only or all its newest, a prefix's at once, a project's matches among
them or below them, a role, a time, a limit)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from subrosa.paths import project_transcript_dir
from tests.conftest import RunCli
from tests.test_archive import _interleaved, _record, _search, _transcript, _uuid_of

pytestmark = pytest.mark.engines("sqlite")  # a server's probes list nothing

QUERIES = [
    ['"the quokka"'],  # every message: dense
    ['"quokka wombat"'],  # every third
    ['"quokka wombat"', "--all-projects"],
    ['"quokka wombat"', "--all-projects", "--limit", "40"],
    ['"quokka wombat"', "--role", "assistant"],
    ['"quokka wombat"', "--all-projects", "--since", "2026-03-01T10:00:20"],
    ['"wombat note"', "--sessions"],
    ['"quokka wombat"', "zzyzx"],  # never all in one: the second tier
    ["quok*"],
    ["quok*", "--all-projects", "--limit", "25"],
    ['"note of"', "quokka", "--all-projects"],  # two required units: no list read
    ['"wombat the"', "--all-projects"],  # nowhere
    ["quokk*", "qqzz*"],  # a prefix nowhere
]

# How the list is made: (SELECTIVE, RERANK, PHRASES_COUNTED). A prefix lists its newest
# SELECTIVE, a phrase its newest RERANK in an archive larger than PHRASES_COUNTED, else
# its newest SELECTIVE as a word (_counted()).
LISTS = [(10, 5, 0), (40, 3, 0), (1000, 5, 0), (4, 3, 0), (1000, 1000, 0), (10, 5, 10**9)]
# How a project's matches are found: tested one by one (a big project: its spans), or
# from its runs (a small one: spans or a walk when the list holds too few).
PROJECTS = [{"SPAN_SHARE": 0.0}, {"SPAN_SHARE": 1.0, "SPAN_COST": 0}, {"SPAN_SHARE": 1.0}]


def _traced(monkeypatch: pytest.MonkeyPatch, seen: Callable[[str], None]) -> None:
    """Every statement of each SQLite connection opened from now on told to `seen`."""
    import sqlite3

    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(seen)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)


def _walks_of(phrase: str, walks: list[str]) -> Callable[[str], None]:
    """A trace that keeps in `walks` the statements asking the index for `phrase`."""

    def trace(sql: str) -> None:
        if "messages_fts MATCH" in sql and f"'{phrase}'" in sql:
            walks.append(sql)

    return trace


def test_search_finds_the_same_from_the_list_and_from_the_index(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subrosa.archive import search as archive_search

    _interleaved(run)
    (Path(project_transcript_dir()) / "replies.jsonl").write_text(
        "\n".join(
            _record(
                f"reply-{n}",
                f"the quokka wombat reply {n}",
                role="assistant",
                session="replies",
                timestamp=f"2026-03-01T11:00:{n:02d}Z",
            )
            for n in range(6)
        )
        + "\n"
    )
    run("ingest", "--all-projects")
    read: list[int] = []
    listed = archive_search._newest_listed

    def counted(*args: Any) -> Any:
        found = listed(*args)
        read.append(found is not None)
        return found

    monkeypatch.setattr(archive_search, "_newest_listed", counted)
    for selective, rerank, counted in LISTS:
        for project in PROJECTS:
            with monkeypatch.context() as patch:
                for name, value in {
                    "SELECTIVE": selective,
                    "RERANK": rerank,
                    "PHRASES_COUNTED": counted,
                    **project,
                }.items():
                    patch.setattr(archive_search, name, value)
                case = (selective, rerank, counted, project)
                read.clear()
                listing = [_search(run, *query) for query in QUERIES]
                assert any(read), case  # the list was read, not only made
                patch.setattr(archive_search, "_costly", lambda alts: False)
                indexed = [_search(run, *query) for query in QUERIES]
                assert listing == indexed, case
    # What they find: the phrase, not its words apart; a prefix's words.
    monkeypatch.setattr(archive_search, "SELECTIVE", 10)
    monkeypatch.setattr(archive_search, "RERANK", 5)
    found = _search(run, '"quokka wombat"', "--all-projects", "--limit", "200")
    assert found and all("quokka wombat" in r["snippet"].replace("**", "") for r in found)
    # (the six replies differ in a digit only: one result, its copies counted)
    assert any(_uuid_of(r).startswith("reply-") for r in found)
    assert _search(run, '"wombat the"', "--all-projects") == []
    assert json.loads(run("search", "--json", "quok*").stdout)
    # A prefix's probe alone says whether the index holds it (no lookup before it): one
    # found nowhere is a word the archive lacks, the query's other words still found.
    assert _search(run, "qqzz*", "--all-projects") == []
    some = _search(run, "qqzz*", "wombat", "--all-projects")
    assert some and all("wombat" in r["snippet"].lower() for r in some)


def test_a_rare_phrase_of_common_words_is_walked_once(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A phrase rarer than its words costs a walk over every message holding them: its
    probe's walk is the only one (not a second to count it, nor a third for the
    candidates)."""
    from subrosa.archive import search as archive_search

    _interleaved(run)
    walks: list[str] = []

    monkeypatch.setattr(archive_search, "SELECTIVE", 1000)
    _traced(monkeypatch, _walks_of('"wombat note"', walks))
    results = _search(run, '"wombat note"', "--all-projects", "--limit", "3")
    assert len(results) == 3
    # The existence check, then one listing walk; nothing else walks the phrase.
    listing = [sql for sql in walks if "group_concat" in sql]
    assert len(listing) == 1, walks
    assert len([sql for sql in walks if "LIMIT 1)" not in sql]) == 1, walks


def test_a_phrase_in_a_project_is_walked_once_within_its_span(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In an archive larger than PROJECT_COUNTED, a project searched as one span counts
    a phrase within the span (_probe_listing() given it): one walk lists its newest matches
    there, which the tiers then take; the archive's newest (another project's) are not
    walked first. The results are those of the walk over the archive, in the same
    order."""
    from subrosa.archive import search as archive_search

    _interleaved(run)
    monkeypatch.setattr(archive_search, "SPAN_SHARE", 0.0)  # one span, whatever its share
    walks: list[str] = []

    _traced(monkeypatch, _walks_of('"wombat note"', walks))
    found = {}
    for counted in (0, 10**9):
        monkeypatch.setattr(archive_search, "PROJECT_COUNTED", counted)
        walks.clear()
        found[counted] = _search(run, '"wombat note"', "--limit", "3")
        listing = [sql for sql in walks if "group_concat" in sql]
        assert len(listing) == 1, walks
        assert ("BETWEEN" in listing[0]) == (counted == 0), listing
        if counted == 0:  # the existence check, then the span's listing: nothing else
            assert len([sql for sql in walks if "LIMIT 1)" not in sql]) == 1, walks
    assert len(found[0]) == 3
    assert [_uuid_of(r) for r in found[0]] == [_uuid_of(r) for r in found[10**9]]
    assert all(_uuid_of(r).startswith("mine-") for r in found[0])


def test_a_project_whose_runs_fill_its_span_is_not_tested_match_by_match(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project whose runs fill its one span of ids (Runs.whole: its sessions were
    ingested together) keeps its messages by the rowid range alone: no statement over
    the messages joins a match's session to test its project, and every search finds
    what the test finds (a role, a time, a limit, sessions, both tiers)."""
    from subrosa.archive import search as archive_search

    for name, project in (("mine", None), ("busy", "-some-busy-project")):
        for k in range(3):
            records = (
                _record(
                    f"{name}-{k}-{n}",
                    f"the quokka {'wombat ' if n % 3 == 0 else ''}note {n} of {name}",
                    role="assistant" if n % 2 else "user",
                    session=f"{name}-{k}",
                    timestamp=f"2026-03-0{k + 1}T10:{n:02d}:00Z",
                )
                for n in range(12)
            )
            _transcript(f"{name}-{k}.jsonl", *records, project=project)
        run("ingest", "--all-projects")
    # Half the sessions: read as one span from its runs (not from the archive's ends,
    # which a project of a quarter of the sessions or more takes, runs unread).
    monkeypatch.setattr(archive_search, "SPAN_SHARE", 0.3)
    asked: list[str] = []
    _traced(monkeypatch, asked.append)
    queries = [
        ["quokka"],
        ['"wombat note"'],
        ["quok*", "--limit", "20"],
        ["wombat", "--role", "assistant"],
        ["quokka", "--since", "2026-03-02"],
        ["wombat", "--sessions"],
        ["wombat", "zzyzx"],  # never all in one: the second tier
    ]
    found = [_search(run, *query) for query in queries]
    tested = [sql for sql in asked if "s.project = " in sql and "message_runs" not in sql]
    assert not tested, tested
    assert all(found) and all(r["project"] != "-some-busy-project" for f in found for r in f)
    asked.clear()
    monkeypatch.setattr(archive_search, "_untested", lambda filters: filters)
    assert [_search(run, *query) for query in queries] == found
    assert [sql for sql in asked if "s.project = " in sql and "message_runs" not in sql]


def _thrice(
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    windows: tuple[int, int],
    texts: list[str],
    mixed: bool = False,
) -> list[str]:
    """An archive of each of `texts` three times, with apple, banana or cherry after it
    (no two alike: copies would be one result; `mixed`: every other one the assistant's,
    in three sessions and on three days), searched with the windows (SELECTIVE, RERANK);
    the statements every connection runs from now on."""
    from subrosa.archive import search as archive_search

    directory = Path(project_transcript_dir())
    directory.mkdir(parents=True)
    copies = [(text, word) for word in ("apple", "banana", "cherry") for text in texts]
    lines = [
        _record(
            f"m-{n}",
            f"{text} {word}",
            role="assistant" if mixed and n % 2 else "user",
            session=f"s-{n % 3}" if mixed else "s-1",
            timestamp=f"2026-03-0{1 + n % 3 if mixed else 1}T10:{n:02d}:00Z",
        )
        for n, (text, word) in enumerate(copies)
    ]
    (directory / "s.jsonl").write_text("\n".join(lines) + "\n")
    run("ingest")
    selective, rerank = windows
    monkeypatch.setattr(archive_search, "SELECTIVE", selective)
    monkeypatch.setattr(archive_search, "RERANK", rerank)
    asked: list[str] = []
    _traced(monkeypatch, asked.append)
    return asked


ONE_LETTER = [
    "t",
    "T9 rollout",
    "the tiling",
    "Tłumacz says tø",  # past ASCII after t (ł, ø: remove_diacritics keeps them)
    "tá and té",  # folded: ta, te
    "tʃ sound",
    "a quiet wombat",  # no word starts with t (t inside words only)
    "Tokyo tz2 tests stone",
    "Élan über Ärger",  # folded: elan, uber, arger (é* is e*, Ä* is a*)
]


@pytest.mark.parametrize("windows", [(4000, 1000), (1000, 3), (2, 1)])
def test_a_one_letter_prefix_finds_what_the_merge_finds(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, windows: tuple[int, int]
) -> None:
    """`t*` is asked as the OR of the word t and its two-letter prefixes, the characters
    past ASCII read from the index's vocabulary (_one_letter()): it finds exactly what
    FTS5's merge of every t-word finds, in the same order, whether the prefix is
    selective (bm25 over the units as typed), listed, or walked; and with more such
    characters than WIDE_SECONDS, it is merged as before."""

    from subrosa.archive import search as archive_search

    asked = _thrice(run, monkeypatch, windows, ONE_LETTER)
    queries = [["t*"], ["T*", "--limit", "40"], ["t*", "wombat"], ["t*", "rollout"], ["q*"]]
    queries += [["st*"], ["ti*", "tz*"]]  # two letters (`st` is in "...rstu...")
    queries += [["é*"], ["Ä*", "--limit", "40"], ["ü*", "apple"]]  # folded by the index
    expanded = [_search(run, *query) for query in queries]
    assert any('"tł"*' in sql and '"tø"*' in sql and '"tʃ"*' in sql for sql in asked)
    assert any('"e" OR "e0"*' in sql for sql in asked)
    assert any('"u" OR "u0"*' in sql for sql in asked)
    # (the facts' index, and FTS5's bm25 over the units as typed, read it merged)
    merging = [sql for sql in asked if '"t"*' in sql and "facts_fts" not in sql]
    assert not [sql for sql in merging if "bm25(" not in sql]
    with monkeypatch.context() as patch:
        patch.setattr(archive_search, "_is_one_letter", lambda alt: False)
        merged = [_search(run, *query) for query in queries]
    assert expanded == merged
    found = {_uuid_of(r) for r in expanded[1]}
    # all but the wombat and Élan
    assert found == {f"m-{n}" for n in range(27) if n % 9 not in (6, 8)}
    elan = {f"m-{n}" for n in range(27) if n % 9 == 8}
    assert {_uuid_of(r) for r in expanded[-3]} == elan  # é*: no other word starts with e
    assert elan <= {_uuid_of(r) for r in expanded[-2]}
    asked.clear()
    monkeypatch.setattr(archive_search, "WIDE_SECONDS", 2)  # tł, tø, tʃ: too many
    assert [_search(run, *query) for query in queries] == merged
    assert any('"t"*' in sql for sql in asked)


LONG_PREFIX = [
    "deploy",
    "Deployed the app",
    "deploying tonight",
    "redeploy later",
    "deployłódź and deployé",  # past ASCII after the prefix (ł kept, é folded to e)
    "deployManager restarted",  # an identifier: its parts in the terms column too
    "deploy_check passed",
    "dep and depl only",  # shorter than the prefix
    "a quiet wombat",
    "2026-03-01 and 20260301 and 2026x",  # digits
]


@pytest.mark.parametrize("windows", [(4000, 1000), (1000, 3), (2, 1)])
def test_a_long_prefix_finds_what_the_merge_finds(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, windows: tuple[int, int]
) -> None:
    """`deploy*` in a large archive is asked as the OR of the words the index holds that
    start with it, read from FTS5's vocabulary of instances (_long_prefix()): it finds
    exactly what FTS5's merge of every such word finds, in the same order, whether the
    prefix is selective, listed or walked, in every scope; past LONG_WORDS words, or in
    an archive of LONG_FROM messages or fewer, it is merged as before."""

    from subrosa.archive import search as archive_search

    asked = _thrice(run, monkeypatch, windows, LONG_PREFIX, mixed=True)
    monkeypatch.setattr(archive_search, "LONG_FROM", 0)  # this archive is "large"
    queries = [["deploy*"], ["Deploy*", "--limit", "40"], ["deploy*", "apple"], ["depl*"]]
    queries += [["deploy*", "--role", "assistant"], ["deploy*", "--sessions"]]
    queries += [["deploy*", "--since", "2026-03-02"], ["deploy*", "wombat"]]
    queries += [["deploym*"], ["2026*"], ["deployz*"], ["deploy*", "deploying"]]
    expanded = [_search(run, *query) for query in queries]
    assert any('"deploy" OR "deploye" OR "deployed"' in sql for sql in asked)  # é folded
    assert any('"deploymanager" OR "deployłodz")' in sql for sql in asked)  # ł kept
    assert any('"2026" OR "20260301" OR "2026x"' in sql for sql in asked)
    with monkeypatch.context() as patch:
        patch.setattr(archive_search, "_is_long", lambda alt: False)
        merged = [_search(run, *query) for query in queries]
    assert expanded == merged
    found = {_uuid_of(r) for r in expanded[1]}
    # (redeploy, an assistant's message right after a prompt saying deploying, as
    # the prompt's reply: docs/search.md, "The reply to a match")
    assert found == {f"m-{n}" for n in range(30) if n % 10 < 7}  # not dep, depl, ...
    assert not expanded[10]  # deployz*: nowhere
    for large, words in ((0, 2), (10**9, archive_search.LONG_WORDS)):  # merged as before
        asked.clear()
        monkeypatch.setattr(archive_search, "LONG_FROM", large)
        monkeypatch.setattr(archive_search, "LONG_WORDS", words)
        assert [_search(run, *query) for query in queries] == merged
        assert any('"deploy"*' in sql and "bm25(" not in sql for sql in asked)
