"""The transcript archive on PostgreSQL answers as it does on SQLite (docs/team.md):
the same transcripts ingested into both, then every kind of search, listing and
showing compared result for result; and many ingesting processes at once lose and
duplicate nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, Db, RunCli, write_leaf
from tests.test_archive import _record, _transcript

TOOL = "[Bash] pytest -q tests/test_cache.py"
MESSAGES = [
    ("u1", "user", "s-1", "the cache invalidation bug is back in search.py", "10:00"),
    ("a1", "assistant", "s-1", "I looked at isSyncingBackfill and the auth_token path", "10:01"),
    ("t1", "assistant", "s-1", TOOL, "10:02"),
    ("r1", "user", "s-1", "[tool result] 3 failed: cache invalidation error", "10:03"),
    ("a2", "assistant", "s-1", "The fix: clear the cache before the pre-commit hook runs", "10:04"),
    ("u2", "user", "s-2", "目录中的页码不对应实际页面", "11:00"),
    ("a3", "assistant", "s-2", "页面加载太慢, deployment on Tuesday", "11:01"),
    ("u3", "user", "s-2", "Deploy on Tuesday after the precommit checks", "11:02"),
    ("c1", "user", "s-3", "Error: connection refused at 10.0.0.1:5432 (retry 1)", "12:00"),
    ("c2", "user", "s-3", "Error: connection refused at 10.0.0.1:5432 (retry 2)", "12:01"),
    ("a4", "assistant", "s-3", "Postgres was not running; costs nothing to restart it", "12:02"),
    ("u4", "user", "s-4", "RealTimeProtection blocks café downloads", "13:00"),
]
QUERIES = [
    ["cache", "bug"],
    ["cache invalidation"],
    ['"deploy on tuesday"'],
    ["dep*"],
    ["deploy"],
    ["cost"],
    ["syncing"],
    ["is", "syncing", "backfill"],
    ["auth"],
    ["authtoken"],
    ["precommit"],
    ["pre-commit"],
    ["search.py"],
    ["realtime"],
    ["protection"],
    ["目录", "页码", "对不上"],
    ["页面"],
    ["connection", "refused"],
    ["postgres", "restart"],
    ["how", "to", "fix", "the", "cache"],
    ["zanzibarite"],
    ["cache", "tuesday"],  # never in one message: the second tier
    ["cache", "--sessions"],
    ["connection", "--sessions"],
    ["cache", "--role", "assistant"],
    ["cache", "--since", "2026-03-01T10:02"],
    ["cache", "--limit", "2"],
    ["fact", "keeping"],
    ["cache", "--facts"],
]


def _ingest_all(run: RunCli, db: str) -> dict[str, Any]:
    return json.loads(run("--db", db, "ingest", "--json").stdout)  # type: ignore[no-any-return]


def _twin(run: RunCli, server: str, tmp_path: Path, messages: int, generate: bool = True) -> str:
    """The transcripts written so far ingested (the facts generated first) into the
    server's database and into a SQLite twin under tmp_path, `messages` new in each:
    the twin's path."""
    sqlite = str(tmp_path / "twin.db")
    for url in (server, sqlite):
        if generate:
            run("--db", url, "generate")
        assert _ingest_all(run, url)["new_messages"] == messages
    return sqlite


def _answer(run: RunCli, db: str, *args: str) -> Any:
    """What a command prints as JSON, less the row numbers (each engine numbers its own)."""
    found = json.loads(run("--db", db, *args, "--json").stdout)

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "message_id"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(found)


@pytest.mark.engines("postgresql")
def test_both_engines_answer_alike(memory_dir: Path, db: Db, tmp_path: Path, run: RunCli) -> None:
    records = [
        _record(uuid, text, role=role, session=session, timestamp=f"2026-03-01T{time}:00Z")
        for uuid, role, session, text, time in MESSAGES
    ]
    _transcript("s.jsonl", *records)
    write_leaf(memory_dir, "cache_rule.md", "Clear the cache before a deploy.", body="A fact.")
    write_leaf(memory_dir, "keeping.md", "A fact worth keeping about 页面.")
    sqlite = _twin(run, db.url, tmp_path, len(MESSAGES))
    for query in QUERIES:
        args = ["search", *query, "--all-projects"]
        on_server, on_file = _answer(run, db.url, *args), _answer(run, sqlite, *args)
        assert on_server == on_file, query
    assert _answer(run, db.url, "search", "cache")  # and not everything empty
    listing = ["transcript", "list", "--all-projects"]
    assert _answer(run, db.url, *listing) == _answer(run, sqlite, *listing)
    for session in ("s-1", "s-2", "s-3"):
        show = ["transcript", "show", session]
        assert _answer(run, db.url, *show) == _answer(run, sqlite, *show)
        around = [*show, "--around", "a2" if session == "s-1" else "c2", "--context", "1"]
        if session != "s-2":
            assert _answer(run, db.url, *around) == _answer(run, sqlite, *around)


def _cache_session(text: Callable[[int, str], str]) -> list[str]:
    """Twenty records of one session about a cache, the user's and the assistant's in
    turn, a minute apart: `text(n, word)` writes the n-th, `word` one of ten."""
    words = ["bug", "fix", "flaky", "slow", "stale", "cold", "warm", "lost", "found", "late"]
    return [
        _record(
            f"m{n}",
            text(n, word),
            role="assistant" if n % 2 else "user",
            timestamp=f"2026-03-01T10:{n:02d}:00Z",
        )
        for n, word in enumerate(words * 2)
    ]


@pytest.mark.engines("postgresql")
def test_a_phrase_past_its_window_ranks_alike_on_both_engines(
    memory_dir: Path, db: Db, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A phrase (or an identifier, also its parts' phrase) with more matches than RERANK,
    in an archive larger than PHRASES_COUNTED, is counted no further
    (subrosa.archive.search._counted(), pgsearch._target()): both engines stop their
    walks there and rank its newest matches with the same document frequency, score for
    score; in a smaller archive it is counted as a word, alike too."""
    from subrosa.archive import pgsearch
    from subrosa.archive import search as archive_search

    for module in (archive_search, pgsearch):  # pgsearch holds its own copies
        monkeypatch.setattr(module, "RERANK", 4)
        monkeypatch.setattr(module, "SELECTIVE", 40)
    records = _cache_session(
        lambda n, word: (
            f"the cache invalidation {word} in isSyncingBackfill"
            + " again" * (n % 3)
            + (" with the auth token" if n % 4 == 0 else "")
        )
    )
    _transcript("s.jsonl", *records)
    sqlite = _twin(run, db.url, tmp_path, len(records), generate=False)
    queries = (
        ['"cache invalidation"'],
        ['"cache invalidation"', "auth"],
        ['"invalidation stale"', "again"],
        ["isSyncingBackfill", "token"],
        ['"the cache"', "--limit", "15"],
    )
    found = {}
    for counted in (0, 10**9):  # a large archive, a small one
        for module in (archive_search, pgsearch):
            monkeypatch.setattr(module, "PHRASES_COUNTED", counted)
        for query in queries:
            args = ["search", *query, "--all-projects"]
            on_server, on_file = _answer(run, db.url, *args), _answer(run, sqlite, *args)
            assert on_file and on_server == on_file, (query, counted)
            found[counted, tuple(query)] = on_file
    # Counted to RERANK, a phrase's document frequency is estimated: the scores differ.
    first = tuple(queries[0])
    assert found[0, first] != found[10**9, first]


@pytest.mark.engines("postgresql")
def test_a_costly_unit_counted_in_its_project_ranks_alike_on_both_engines(
    memory_dir: Path, db: Db, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In an archive larger than PROJECT_COUNTED, a search of one project whose messages
    are one span of ids counts a phrase or a prefix within that span, not over the
    archive (subrosa.archive.search._probe_listing()): both engines count the same
    matches and rank alike, score for score, every way the span's count is read (the
    tiers, the facts' idf, sessions, a role, a limit); and the scores then differ from
    the archive's count (the other project holds the phrase in every message)."""
    from subrosa.archive import pgsearch
    from subrosa.archive import search as archive_search

    for module in (archive_search, pgsearch):  # pgsearch holds its own copies
        monkeypatch.setattr(module, "RERANK", 4)
        monkeypatch.setattr(module, "SELECTIVE", 12)
    records = _cache_session(
        lambda n, word: (
            ("the cache invalidation" if n % 2 else "the cache was")
            + f" {word} in isSyncingBackfill"
            + (" with the auth token" if n % 4 == 0 else "")
        )
    )
    _transcript("s.jsonl", *records)
    elsewhere = (
        _record(
            f"o{n}",
            f"the cache invalidation in another project's isSyncingBackfill, take {n}",
            session="o",
            timestamp=f"2026-03-02T10:{n:02d}:00Z",
        )
        for n in range(30)
    )
    _transcript("o.jsonl", *elsewhere, project="-other-project")
    write_leaf(memory_dir, "cache-rule", body="The cache invalidation runs before the hook.")
    sqlite = str(tmp_path / "twin.db")
    for url in (db.url, sqlite):
        ingested = json.loads(run("--db", url, "ingest", "--all-projects", "--json").stdout)
        assert ingested["new_messages"] == len(records) + 30
        run("--db", url, "adopt")
    queries = (
        ['"cache invalidation"'],
        ['"cache invalidation"', "auth"],
        ["inval*"],
        ["isSyncingBackfill", "token"],
        ['"the cache"', "--limit", "15"],
        ['"cache invalidation"', "--sessions"],
        ['"cache invalidation"', "--role", "assistant"],
    )
    found = {}
    for counted in (0, 10**9):  # a large archive, a small one
        monkeypatch.setattr(archive_search, "PROJECT_COUNTED", counted)
        for query in queries:
            args = ["search", *query]  # this project's (the default)
            on_server, on_file = _answer(run, db.url, *args), _answer(run, sqlite, *args)
            assert on_file and on_server == on_file, (query, counted)
            found[counted, tuple(query)] = on_file
    first = tuple(queries[0])
    assert [r.get("uuid") for r in found[0, first]] == [r.get("uuid") for r in found[10**9, first]]
    assert found[0, first] != found[10**9, first]  # the span's count: other scores


ACCENTED = [
    ("m1", "the café on the corner has wifi"),
    ("m2", "the cafe menu changed"),
    ("m3", "Größe und Ärger: über alles"),
    ("m4", "ecole and école, and ÉCOLE in capitals"),
    ("m5", "e\u0301cole written decomposed, and cafe\u0301 too"),  # macOS file names are
    ("m6", "straße, smørrebrød and łódź keep what FTS5 keeps"),
    ("m7", "the naïveCoder_résumé identifier"),
]
ACCENTED_QUERIES = [
    ["café"],
    ["cafe"],
    ["CAFÉ"],
    ["é*"],
    ["ec*"],
    ["uber"],
    ["ärger"],
    ["grosse"],
    ["école"],
    ["ecole", "capitals"],
    ['"café on the"'],
    ['"cafe menu"'],
    ["strasse"],
    ["straße"],
    ["smørrebrød"],
    ["lodz"],
    ["łódź"],
    ["naive"],
    ["resume"],
    ["naïvecoder"],
    ["crème", "brûlée"],  # facts only
    ["creme*"],
]


@pytest.mark.engines("postgresql")
def test_accented_words_find_alike_on_both_engines(
    memory_dir: Path, db: Db, tmp_path: Path, run: RunCli
) -> None:
    """What a word with a diacritic finds, and the same word typed without it, is the
    same on both engines: FTS5's unicode61 folds é to e in the index and the query, and
    a server folds its words with the same table (migration 0021). Found on the real
    transcripts by bench/sweep.py's shapes: `é*` there found 20 messages on SQLite and
    none on a server."""
    _transcript(
        "s.jsonl",
        *(
            _record(uuid, text, timestamp=f"2026-03-01T10:0{n}:00Z")
            for n, (uuid, text) in enumerate(ACCENTED)
        ),
    )
    write_leaf(memory_dir, "dessert.md", "Crème brûlée is the café's dessert.", body="Très bon.")
    write_leaf(memory_dir, "plain.md", "Creme brulee typed plainly.")
    sqlite = _twin(run, db.url, tmp_path, len(ACCENTED))
    for query in ACCENTED_QUERIES:
        args = ["search", *query, "--all-projects"]
        assert _answer(run, db.url, *args) == _answer(run, sqlite, *args), query
    found = _answer(run, db.url, "search", "cafe", "--all-projects", "--transcripts")
    assert {r["uuid"] for r in found} == {"m1", "m2", "m5"}
    facts = _answer(run, db.url, "search", "creme", "brulee", "--all-projects", "--facts")
    assert len(facts) == 2


NUMBERED = [
    ("h1", "reverted 93e64f7bc67a1b75928f300ebc218d512fa4ec7e on main"),
    ("h2", "the short hash is 93e64f7 in the log"),
    ("h3", "tile 4e0e, then 0e0b"),
    ("h4", "1e5 is a number in scientific notation"),
    ("h5", "build 085e2218 of 9e30, then 9e14291e04c"),
]
NUMBERED_QUERIES = [
    ["93e64f7bc67a1b75928f300ebc218d512fa4ec7e"],
    ["93e64f7"],
    ["93e64f*"],
    ["4e0e"],
    ["0e0b"],
    ["1e5"],
    ['"tile 4e0e"'],
    ["4e0e*"],
    ["085e2218"],
    ["9e30"],
    ["9e14*"],
]


@pytest.mark.engines("postgresql")
def test_hex_words_with_a_digit_e_digit_find_alike_on_both_engines(
    memory_dir: Path, db: Db, tmp_path: Path, run: RunCli
) -> None:
    """A word that starts like a number in scientific notation (`93e64f7bc6…`, a git
    hash; `4e0e`) is found on both engines: PostgreSQL's parser stores it as two words
    (`93e64`, `f7bc6…`) where FTS5 stores one. Found on the real transcripts: a commit
    hash found nothing on a server."""
    _transcript(
        "s.jsonl",
        *(
            _record(uuid, text, timestamp=f"2026-03-01T10:0{n}:00Z")
            for n, (uuid, text) in enumerate(NUMBERED)
        ),
    )
    sqlite = _twin(run, db.url, tmp_path, len(NUMBERED), generate=False)
    for query in NUMBERED_QUERIES:
        args = ["search", *query, "--all-projects"]
        on_server, on_file = _answer(run, db.url, *args), _answer(run, sqlite, *args)
        assert on_file and on_server == on_file, query


@pytest.mark.engines
def test_reingest_stores_nothing_twice(memory_dir: Path, db: Db, run: RunCli) -> None:
    path = _transcript("s-1.jsonl", *(_record(f"m{i}", f"message {i}") for i in range(20)))
    first = json.loads(run("ingest", "--json").stdout)
    assert first["new_messages"] == 20
    again = json.loads(run("ingest", "--json").stdout)
    assert again["new_messages"] == 0 and again["files_read"] == 0
    # Rewritten with a new first line: read again from the start, the rest duplicates.
    path.write_text(_record("m20", "message 20") + "\n" + path.read_text())
    rewritten = json.loads(run("ingest", "--json").stdout)
    assert (rewritten["new_messages"], rewritten["duplicate_messages"]) == (1, 20)
    listed = json.loads(run("transcript", "list", "--json").stdout)
    assert [s["message_count"] for s in listed] == [21]
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)
    assert sorted(m["uuid"] for m in shown["messages"]) == sorted(f"m{i}" for i in range(21))


def _writer(folder: Path, db: str, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SUBROSA_DB": db}
    return subprocess.Popen(
        [sys.executable, "-m", "subrosa", "ingest", "--json", str(folder), *extra],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.engines("postgresql")
def test_concurrent_ingests_lose_and_duplicate_nothing(
    memory_dir: Path, db: Db, tmp_path: Path, run: RunCli
) -> None:
    """Six processes at once into one server: four each with sessions of their own, two
    more reading all of them (a resumed session read on two machines): every message
    stored once, every session's count exact."""
    folders = []
    for w in range(4):
        folder = tmp_path / f"machine-{w}"
        folder.mkdir()
        for s in range(3):
            lines = [
                _record(
                    f"w{w}-s{s}-{i}", f"writer {w} session {s} line {i} cache", session=f"w{w}s{s}"
                )
                for i in range(300)
            ]
            (folder / f"w{w}s{s}.jsonl").write_text("\n".join(lines) + "\n")
        folders.append(folder)
    procs = [_writer(folder, db.url) for folder in folders]
    procs += [_writer(tmp_path, db.url) for _ in range(2)]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        reports.append(json.loads(out))
    assert sum(r["new_messages"] for r in reports) == 4 * 3 * 300
    listed = json.loads(run("transcript", "list", "--all-projects", "--json").stdout)
    assert sorted(s["message_count"] for s in listed) == [300] * 12
    again = json.loads(run("ingest", "--json", str(tmp_path)).stdout)
    assert again["new_messages"] == 0
    found = json.loads(run("search", "cache", "--all-projects", "--json", "--limit", "3").stdout)
    assert found[0]["copies"] > 1  # the lines differ by their digits only: copies


@pytest.mark.engines("postgresql")
def test_search_uses_the_index(memory_dir: Path, db: Db, run: RunCli) -> None:
    """The query spells the index's expression (migration 0005), so the server uses it."""
    import psycopg

    from subrosa.archive.pgsearch import VECTOR
    from subrosa.memory.pgfacts import VECTOR as FACTS
    from subrosa.pg import conninfo

    _transcript("s-1.jsonl", _record("m1", "zanzibarite"))
    run("ingest")
    with psycopg.connect(conninfo(db.url), autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        for table, vector in (("messages m", VECTOR), ("facts x", FACTS)):
            plan = conn.execute(
                f"EXPLAIN SELECT 1 FROM {table} WHERE {vector} @@ 'zanzibarite'::tsquery"
            ).fetchall()
            assert "_words" in " ".join(str(row[0]) for row in plan), plan


@pytest.mark.engines("postgresql")
def test_a_search_asks_which_words_exist_once(memory_dir: Path, db: Db, run: RunCli) -> None:
    """Whether the index holds each word of a query (and each form of it) is asked of
    the server in one statement for all of them, not one per word; and the result is
    the one asking word by word gives."""
    from subrosa.archive import pgsearch
    from subrosa.archive.pgstore import open_server
    from subrosa.query import Filters
    from subrosa.recall import search

    _transcript(
        "s-1.jsonl",
        _record("m1", "the deploy checks failed with a timeout"),
        _record("m2", "how to fix the linter before the deploy"),
        _record("m3", "zanzibarite glimmerwick"),
    )
    run("ingest")
    query = "how to fix glimmerwick deploys with the linters"
    with open_server(db.url) as conn:
        ran: list[str] = []
        run_statement = conn._run  # type: ignore[attr-defined]

        def counted(sql: str, params: Any) -> Any:
            ran.append(sql)
            return run_statement(sql, params)

        conn._run = counted  # type: ignore[attr-defined]
        found = search(conn, query, Filters(), 10)
        asked = [sql for sql in ran if sql.startswith("SELECT") and "EXISTS (SELECT 1" in sql]
        assert len(asked) == 1, asked
        assert [r for r in found if r["kind"] == "message"]
        ahead = pgsearch.existing_ahead
        try:
            pgsearch.existing_ahead = lambda conn, alts: None  # type: ignore[assignment]
            alone = search(conn, query, Filters(), 10)
        finally:
            pgsearch.existing_ahead = ahead
        assert alone == found


@pytest.mark.engines("postgresql")
def test_a_phrase_of_common_words_is_looked_for_among_the_newest_first(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    """Whether a phrase of common words is anywhere is asked of the newest messages
    first, up to EXIST_WALK_MAX of them, not after the words' share: it may be far
    rarer than its words (`"of the"` at 1 GB: the index's bitmap of every message
    holding both cost ~140 ms). The answer is the index's."""
    from subrosa.archive import pgsearch
    from subrosa.archive.pgstore import open_server
    from subrosa.query import Filters
    from subrosa.recall import search
    from tests.test_postings_store import _sql

    records = [_record("old", "the best of the lot", timestamp="2026-03-01T09:00:00Z")]
    records += [
        _record(f"m{i}", f"the {i} items of {i} boxes", timestamp=f"2026-03-01T10:{i:02d}:00Z")
        for i in range(40)
    ]
    _transcript("s-1.jsonl", *records)
    run("ingest")
    _sql(db.url, "ANALYZE messages")
    with open_server(db.url) as conn:
        asked: list[Any] = []
        run_statement = conn._run  # type: ignore[attr-defined]

        def kept(sql: str, params: Any) -> Any:
            if sql.startswith("SELECT array_agg((a.walk > 0"):
                asked.append(params)
            return run_statement(sql, params)

        conn._run = kept  # type: ignore[attr-defined]
        found = search(conn, '"of the"', Filters(), 10)
    assert [r["uuid"] for r in found if r["kind"] == "message"] == ["old"]
    walks = [w for params in asked for w in params[1].strip("{}").split(",")]
    assert walks == [str(pgsearch.EXIST_WALK_MAX)]


def test_in_lists_go_to_the_server_as_one_array() -> None:
    """sqlite3's `IN (?,…)` is sent as `= ANY(?)` with the values as one array (one
    statement text for any number of ids), the other parameters kept in place; a list
    of integers goes as an array's text, any other list as it is."""
    from subrosa.pg import _arrays, _ids_as_text, _in_lists

    sql = "SELECT a FROM t WHERE x = ? AND id IN (?,?,?) AND k IN (?) LIMIT ?"
    native, lists = _in_lists(sql)
    assert native == "SELECT a FROM t WHERE x = ? AND id = ANY(?) AND k = ANY(?) LIMIT ?"
    params = _arrays(["x", 3, 1, 2, "k", 10], lists)
    assert params == ["x", [3, 1, 2], ["k"], 10]
    assert _ids_as_text(params) == ["x", "{3,1,2}", ["k"], 10]
    assert _in_lists("SELECT 1 WHERE a = ?") == ("SELECT 1 WHERE a = ?", ())


@pytest.mark.engines("postgresql")
def test_each_id_range_has_its_index(
    memory_dir: Path, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0008 builds the index of the first id range and of ranges ahead; ingest
    builds the next one before the ids reach it; a word's newest matches read range by
    range, newest range first, are its newest matches, in order, across a border (with
    the rows _probe_ahead() sends along for a word with few, and those a one-word search's
    probe sends along for its candidates), cut at a floor or not."""
    from subrosa.archive import pgsearch
    from subrosa.archive.pgsearch import RANGE, RANGES_AHEAD, index_ranges
    from subrosa.archive.pgstore import AHEAD, open_server

    _transcript("s-1.jsonl", *(_record(f"a{i}", f"deploy step {i}") for i in range(6)))
    run("ingest")
    with open_server(db.url) as conn:
        built = index_ranges(conn)
        assert built == set(range(len(built))) and len(built) > 1  # some ahead, empty
        definition = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_messages_words_r0'"
        ).fetchone()[0]
        assert definition.endswith(f"USING gin (words) WHERE ((id / {RANGE}) = 0)")
        # The ids come within AHEAD of the first range not built: ingest builds it.
        border = len(built) * RANGE
        sequence = "SELECT setval(pg_get_serial_sequence('messages', 'id'), ?)"
        conn.execute(sequence, [border - AHEAD - 3])
    _transcript(
        "s-2.jsonl",
        *(_record(f"b{i}", f"deploy again {i}", session="s-2") for i in range(6)),
    )
    run("ingest")
    with open_server(db.url) as conn:
        assert index_ranges(conn) == set(range(len(built) + 1))
        conn.execute(sequence, [border - 3])
    _transcript(
        "s-3.jsonl",
        *(_record(f"c{i}", f"deploy once more {i}", session="s-3") for i in range(6)),
    )
    run("ingest")
    with open_server(db.url) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM messages ORDER BY id DESC")]
        assert min(ids) < border - AHEAD <= border <= max(ids)
        newest = pgsearch.newest_id(conn)
        assert pgsearch._by_range(conn, newest)
        every = "SELECT id, text, terms, role FROM messages ORDER BY id DESC"
        texts = {row[0]: tuple(row) for row in conn.execute(every)}

        def newest_by_range(*args: Any) -> Any:
            """_newest_by_range(), asked without rows and with them (the same answer; the
            rows those of the ids it sends, newest first)."""
            rows: list[Any] = []
            found = pgsearch._newest_by_range(conn, *args, rows=rows)
            assert found == pgsearch._newest_by_range(conn, *args)
            assert rows == [texts[rowid] for rowid in found[0]]
            return found

        assert newest_by_range("'deploy'", newest) == (ids, 18, ids[-1])
        assert newest_by_range("'again'", newest) == (ids[6:12], 6, ids[11])
        assert pgsearch._probe_by_range(conn, "'deploy'", newest) == (18, ids[-1])
        # Cut at a floor (a common word): the same ids, in order, whether the parts
        # of the ids are asked one per statement or several under one LIMIT.
        for segments in (1, 2, pgsearch.SEGMENTS):
            monkeypatch.setattr(pgsearch, "SEGMENTS", segments)
            for floor in (border - 2, border + 1, max(ids) - 1, RANGE - 2):
                found = newest_by_range("'deploy'", newest, floor)
                assert found == (ids, 18, ids[-1])
            again = newest_by_range("'again'", newest, border + 1)
            assert again == (ids[6:12], 6, ids[11])
            # An AND of units (its matches sorted from the index, no project to test):
            # range by range from the floor its units' shares give, deeper when they
            # are too few there: its newest matches, in order, across the border.
            for query in ("'deploy' & 'again'", "'deploy' & ('once' | 'step')"):
                every_and = conn.execute(
                    "SELECT id, text, terms, role FROM messages m"
                    f" WHERE {pgsearch.VECTOR} @@ ?::tsquery ORDER BY id DESC",
                    [query],
                ).fetchall()
                for share in (None, 1e-6, 0.9):  # the units' shares: unknown, tiny, most
                    conn.matches.pop("'deploy'", None)
                    if share is not None:
                        conn.matches["'deploy'"] = share * newest
                    for wanted in (1, 5, 6, 100):
                        rows = pgsearch._newest_by_range_rows(
                            conn, "m.id, m.text, m.terms, m.role", query, ("", []), wanted, newest
                        )
                        assert [tuple(row) for row in rows] == every_and[:wanted]
                for role, expected in (("user", every_and), ("assistant", [])):
                    filtered = (" AND m.role = ?", [role])
                    rows = pgsearch._newest_by_range_rows(
                        conn, "m.id", query, filtered, 100, newest
                    )
                    assert [row[0] for row in rows] == [row[0] for row in expected]
            # A word with SELECTIVE matches or more: its newest `keep` ids are sent, its
            # SELECTIVE-th newest match's id, and the count up to SELECTIVE.
            selective = pgsearch.SELECTIVE
            monkeypatch.setattr(pgsearch, "SELECTIVE", 10)
            for floor in (0, border - 2, max(ids) - 1):
                for keep in (3, 10, 12):
                    found = newest_by_range("'deploy'", newest, floor, keep)
                    assert found == (ids[: min(keep, 10)], 10, ids[9])
            monkeypatch.setattr(pgsearch, "SELECTIVE", selective)
        assert conn.answers[("rows", "'deploy'")] == list(texts.values())
        # Asked ahead (texts_ahead()), the rows come in the probe's own statement.
        conn.answers.clear()
        pgsearch.texts_ahead(conn, True)
        assert pgsearch._probe_by_range(conn, "'again'", newest) == (6, ids[11])
        assert conn.answers[("rows", "'again'")] == [texts[rowid] for rowid in ids[6:12]]
        # Rows asked by id: those the probe sent from memory, the others from the server.
        asked = [ids[7], ids[0], ids[11], ids[15]]
        assert pgsearch.texts(conn, asked) == [texts[rowid] for rowid in asked]
        # The server asks the range's own index.
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_indexscan = off")
        plan = " ".join(
            row[0]
            for row in conn.execute(
                f"EXPLAIN SELECT m.id FROM messages m WHERE {pgsearch.VECTOR} @@ 'deploy'"
                f" AND {pgsearch._in_range('m.id', 0)}"
            )
        )
        assert "ix_messages_words_r0" in plan, plan
    # The owner's `db upgrade` builds RANGES_AHEAD ranges past the newest id.
    run("db", "upgrade")
    with open_server(db.url) as conn:
        assert index_ranges(conn) == set(range(max(ids) // RANGE + 1 + RANGES_AHEAD))


@pytest.mark.engines("postgresql")
def test_doctor_says_when_the_range_indexes_fall_behind(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    """doctor on a server: the id-range indexes reach past the newest message (ok), or
    they do not (a warning whose fix is the owner's `db upgrade`, which builds them)."""
    from subrosa.archive.pgsearch import RANGE
    from subrosa.archive.pgstore import open_server

    def ranges_check() -> dict[str, Any]:
        data = json.loads(run("doctor", "--json", expect=None).stdout)
        return next(c for c in data["checks"] if c["name"] == "search ranges")

    _transcript("s-1.jsonl", _record("m1", "deploy step"))
    run("ingest")
    assert ranges_check()["ok"] is True
    with open_server(db.url) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ix\\_messages\\_words\\_r%'"
            )
        ]
        for name in names:
            if name != "ix_messages_words_r0":
                conn.execute(f"DROP INDEX {name}")
    # A message past the ranges built (as when members, whose role may not build
    # indexes, archived past the ones the owner built ahead).
    with open_server(db.url) as conn:
        conn.execute(
            "INSERT INTO messages (id, session_pk, uuid, role, text) SELECT ?, session_pk,"
            " 'm-late', role, 'late' FROM messages LIMIT 1",
            [RANGE + 5],
        )
    check = ranges_check()
    assert check["ok"] is False and check["severity"] == "warning"
    assert "db upgrade" in check["fix"]
    run("db", "upgrade")
    assert ranges_check()["ok"] is True


# Text as said: an indented code block, a YAML snippet, a tab, blank lines around.
INDENTED = [
    ("i1", "user", "    def cached(key):\n        return CACHE[key]\n"),
    ("i2", "assistant", "  redis:\n    host: zanzibar.internal\n  port: 6379"),
    ("i3", "user", "\n\n\tpassword = Tr0ub4dor3xyzzy!\n"),
]
# The key of a message without a uuid, as ingest computed it before the text was kept
# as said (on the stripped text): an archive made then holds this, and a re-ingest
# must find it, not add the message again.
NO_UUID = "\tno uuid, indented\n\tsecond line\n"
NO_UUID_KEY = "sha1:72104b3914861a6393c590ad4a7ad7778d1728aa"


@pytest.mark.engines
def test_a_message_keeps_its_indent(memory_dir: Path, db: Db, tmp_path: Path, run: RunCli) -> None:
    records = [_record(u, text, role=role) for u, role, text in INDENTED]
    no_uuid = json.loads(_record("-", NO_UUID, timestamp="2026-03-01T10:02:00Z"))
    del no_uuid["uuid"]
    blank = _record("i4", " \n\t \u3000\n")  # all whitespace: an empty message
    path = _transcript("s-1.jsonl", *records, json.dumps(no_uuid), blank)
    first = _ingest_all(run, db.url)
    assert first["new_messages"] == 4 and first["skipped"] == {"empty": 1}
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)["messages"]
    said = [INDENTED[0][2], INDENTED[1][2], "\n\n\tpassword = [REDACTED:password]\n", NO_UUID]
    assert [m["text"] for m in shown] == said
    assert shown[3]["uuid"] == NO_UUID_KEY
    text = run("transcript", "show", "s-1").stdout
    assert "│     def cached(key):\n│         return CACHE[key]" in text.replace("  │", "│")
    found = json.loads(run("search", "zanzibar", "--json").stdout)
    assert [r["uuid"] for r in found] == ["i2"]
    assert found[0]["snippet"].startswith("redis: host: **zanzibar**")
    # Rewritten with a new first line, read again from the start: nothing twice.
    path.write_text(
        _record("i0", "  first", timestamp="2026-03-01T10:03:00Z") + "\n" + path.read_text()
    )
    again = _ingest_all(run, db.url)
    assert (again["new_messages"], again["duplicate_messages"]) == (1, 4)
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)["messages"]
    said = [*said, "  first"]  # in the order archived
    assert [m["text"] for m in shown] == said
    # Exported and imported elsewhere: the same text.
    exported = tmp_path / "out.jsonl"
    run("export", str(exported))
    twin = str(tmp_path / "twin.db")
    run("--db", twin, "import", str(exported))
    copied = json.loads(run("--db", twin, "transcript", "show", "s-1", "--json").stdout)
    assert [m["text"] for m in copied["messages"]] == said


def _queued(operation: str, at: str, content: str | None = None, **extra: Any) -> str:
    """A queue-operation record as Claude Code writes it (corpus, 2.1.332)."""
    record: dict[str, Any] = {
        "type": "queue-operation",
        "operation": operation,
        "timestamp": f"2026-03-01T10:00:{at}.000Z",
        "sessionId": "s-1",
        **extra,
    }
    if content is not None:
        record["content"] = content
    return json.dumps(record, ensure_ascii=False)


def _attached(uuid: str, at: str, prompt: str, source: str) -> str:
    """2.1.332's record of a queued prompt taken into the running turn."""
    attachment = {"type": "queued_command", "prompt": prompt, "source_uuid": source}
    return json.dumps(
        {
            "type": "attachment",
            "uuid": uuid,
            "sessionId": "s-1",
            "timestamp": f"2026-03-01T10:00:{at}.000Z",
            "cwd": "/work/app",
            "attachment": {"timestamp": f"2026-03-01T10:00:{at}.000Z", **attachment},
        }
    )


_SLEPT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "slept"}],
}
PROMPT = "then look at the NUMBAT logs"
# A transcript up to a prompt waiting in the queue (the first ingest runs then), and what
# Claude Code writes after it, by how the prompt is taken up.
WAITING = [
    _record("u1", "Sleep a little.", timestamp="2026-03-01T10:00:01Z"),
    _queued("enqueue", "03", PROMPT, commandUuid="c1"),
]
TAKEN_UP = {
    "as the next turn": [
        _record("a1", "Slept.", role="assistant", timestamp="2026-03-01T10:00:05Z"),
        _queued("dequeue", "06", commandUuid="c1"),
        _record("u2", PROMPT, timestamp="2026-03-01T10:00:06Z"),
        _record("a2", "The NUMBAT logs are clean.", role="assistant"),
    ],
    "into the running turn": [
        json.dumps({"type": "user", "uuid": "u2", "sessionId": "s-1", "message": _SLEPT}),
        _attached("q1", "03", PROMPT, "c1"),
        _queued("remove", "05", PROMPT, commandUuid="c1"),
        _record("a1", "Slept; the NUMBAT logs are clean.", role="assistant"),
    ],
    "put back into the input box, then sent": [
        _queued("popAll", "04", PROMPT),
        _record("a1", "Slept.", role="assistant", timestamp="2026-03-01T10:00:05Z"),
        _record("u2", PROMPT, timestamp="2026-03-01T10:00:07Z"),
        _record("a2", "The NUMBAT logs are clean.", role="assistant"),
    ],
    "never": [
        _record("a1", "Slept.", role="assistant", timestamp="2026-03-01T10:00:05Z"),
        _record("a2", "Still here.", role="assistant", timestamp="2026-03-01T10:00:06Z"),
    ],
}


@pytest.mark.engines
@pytest.mark.parametrize("taken", list(TAKEN_UP))
def test_a_prompt_queued_while_an_ingest_runs_is_archived_once(
    memory_dir: Path, db: Db, run: RunCli, taken: str
) -> None:
    # An ingest while the prompt waits (a user's `subrosa ingest`, the SessionEnd ingest
    # of a session resumed later) keeps it: what a person said is never dropped. The next
    # ingest reads the file on from there, and the prompt taken up: archived once.
    path = _transcript("s-1.jsonl", *WAITING)
    assert _ingest_all(run, db.url)["new_messages"] == 2
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(record + "\n" for record in TAKEN_UP[taken]))
    _ingest_all(run, db.url)
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)["messages"]
    said = [(m["role"], m["text"]) for m in shown if "NUMBAT" in m["text"]]
    assert said.count(("user", PROMPT)) == 1, said
    assert [m["text"] for m in shown].count(PROMPT) == 1
    found = json.loads(run("search", "NUMBAT", "logs", "--role", "user", "--json").stdout)
    assert [r["snippet"] for r in found] == ["then look at the **NUMBAT** **logs**"]
    # More lines after it (the session goes on): still once.
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_record("u9", "Thanks.", timestamp="2026-03-01T10:00:09Z") + "\n")
    assert _ingest_all(run, db.url)["new_messages"] == 1
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)["messages"]
    assert [m["text"] for m in shown].count(PROMPT) == 1
