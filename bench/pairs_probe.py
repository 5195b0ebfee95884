"""Adjacent word pairs as index tokens, measured (not built): what they would cost an
SQLite archive and what they would spare a phrase of common words.

    python bench/pairs_probe.py --archive PATH            # the newest 100,000 messages
    python bench/pairs_probe.py --archive PATH --newest 20000 --phrase '"of the"'

A phrase rarer than its words is subrosa's slowest query on both engines: FTS5 tests
the positions of every message holding all its words, a server's GIN index holds no
positions at all (docs/search.md and docs/team.md, "Still over 150 ms", "A phrase
counted to 1,000"). The fix every note names is an index of adjacent pairs: `of the`
as a token of its own, so the phrase's matches are that token's doclist. This script
measures its price and gain on an archive's messages (a bench archive, or the real
transcripts of bench/recall.py --keep): each message's text and terms inserted into a
bare FTS5 table as ingest would (same tokenizer and prefixes, 5,000 a transaction),
once without pairs and once per policy, with a third column of pair tokens
(`zzp` + the first word's length in two digits + both words: letters and digits only,
one unicode61 token). The words are Python's (`[^\\W_]+`, lowercased), close to
unicode61's, not the same (diacritics are kept): a product would have to match FTS5's
tokenizer exactly, or a phrase could miss a match.

Policies: `stop` (both words stopwords: subrosa.terms.is_stopword), `any-stop` (either
one), `all` (every adjacent pair). Then each phrase's newest 1,000 matches, asked as the
phrase (FTS5's walk) and as its pairs' tokens ANDed before it (`pairs : zzp… AND
"…"`: the phrase only confirms), best of 3, with the count each finds.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _table import print_table  # noqa: E402

from subrosa.terms import is_stopword  # noqa: E402

TOKENIZE = "unicode61 remove_diacritics 2"
WORDS = re.compile(r"[^\W_]+")
POLICIES = ("none", "stop", "any-stop", "all")
PHRASES = ['"of the"', '"the in"', '"to a"', '"it deploy"', '"dependency the"', '"in the"']


def pair_token(first: str, second: str) -> str:
    return f"zzp{len(first):02d}{first}{second}"


def pairs(text: str, policy: str) -> str:
    words = WORDS.findall(text.lower())
    out = []
    for first, second in zip(words, words[1:], strict=False):
        if len(first) > 99:
            continue
        stop = (is_stopword(first), is_stopword(second))
        if (
            policy == "all"
            or (policy == "stop" and all(stop))
            or (policy == "any-stop" and any(stop))
        ):
            out.append(pair_token(first, second))
    return " ".join(out)


def build(rows: list[tuple[int, str, str | None]], policy: str, folder: Path) -> dict[str, float]:
    path = folder / f"{policy}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        f"CREATE VIRTUAL TABLE t USING fts5(text, terms, pairs, tokenize='{TOKENIZE}',"
        " prefix='2 3')"
    )
    tokens = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(rows), 5000):
        batch = []
        for rowid, text, terms in rows[start : start + 5000]:
            made = "" if policy == "none" else pairs(text, policy)
            tokens += made.count(" ") + 1 if made else 0
            batch.append((rowid, text, terms or "", made))
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t(rowid, text, terms, pairs) VALUES (?, ?, ?, ?)", batch)
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "size": float(os.path.getsize(path)),
        "tokens": float(tokens),
    }


def timed(conn: sqlite3.Connection, expr: str) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        count = conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid DESC"
            " LIMIT 1000)",
            [expr],
        ).fetchone()[0]
        best = min(best, time.perf_counter() - start)
    return best * 1000, int(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, required=True, help="a subrosa.db (SQLite)")
    parser.add_argument("--newest", type=int, default=100_000, help="messages taken (newest)")
    parser.add_argument("--phrase", action="append", help="a phrase to time (repeatable)")
    args = parser.parse_args()
    if not args.archive.is_file():
        raise SystemExit(f"{args.archive}: no such archive.")
    source = sqlite3.connect(f"file:{args.archive}?mode=ro", uri=True)
    rows = source.execute(
        "SELECT id, text, terms FROM messages ORDER BY id DESC LIMIT ?", [args.newest]
    ).fetchall()[::-1]
    source.close()
    phrases = args.phrase or PHRASES
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        built = {policy: build(rows, policy, folder) for policy in POLICIES}
        base = built["none"]
        print(f"{len(rows):,} messages of {args.archive} (the newest), inserted as ingest would\n")
        print_table(
            [
                (
                    f"policy `{policy}`",
                    f"{b['tokens'] / len(rows):.1f} pairs a message",
                    f"{b['size'] / 2**20:.1f} MB, {b['cpu']:.1f} s CPU",
                    f"{b['size'] / base['size']:.2f}x size, {b['cpu'] / base['cpu']:.2f}x CPU",
                    "",
                )
                for policy, b in built.items()
            ],
            ("table", "pairs", "file, insert", "vs no pairs (same run)", ""),
        )
        print()
        table = []
        for policy in ("any-stop", "all"):
            conn = sqlite3.connect(folder / f"{policy}.db")
            for phrase in phrases:
                words = WORDS.findall(phrase.lower())
                tokens = [
                    pair_token(a, b)
                    for a, b in zip(words, words[1:], strict=False)
                    if policy == "all" or is_stopword(a) or is_stopword(b)
                ]
                walked = timed(conn, phrase)
                if not tokens:
                    table.append((f"{phrase} ({policy})", f"{walked[0]:.1f} ms", "no pair", "", ""))
                    continue
                expr = " AND ".join([*(f"pairs : {t}" for t in tokens), phrase])
                paired = timed(conn, expr)
                table.append(
                    (
                        f"{phrase} ({policy})",
                        f"{walked[0]:.1f} ms ({walked[1]})",
                        f"{paired[0]:.1f} ms ({paired[1]})",
                        f"{paired[0] / walked[0]:.2f}x",
                        "same count" if walked[1] == paired[1] else "COUNTS DIFFER",
                    )
                )
            conn.close()
        print_table(
            table,
            ("phrase, newest 1,000", "walked (found)", "by its pairs (found)", "ratio", ""),
        )


if __name__ == "__main__":
    main()
