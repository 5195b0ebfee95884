"""Are two SQLite archives the same? What a change to ingest's speed must not change.

    python bench/same_archive.py A.db B.db

Two archives ingested from the same transcripts (one by main, one by a branch) are
compared part by part: the messages (id, session, uuid, role, timestamp, text, terms),
the sessions (every column), the runs and shared messages (by session), the files'
states (all but the time of the write), and the full-text index's answers (the ids
it matches, and the first twenty by bm25 with their scores) for a few hundred words
drawn from the texts and the terms column: the commonest, a spread of rarer ones,
their three-letter prefixes, and a few phrases. Each archive's index also passes
FTS5's integrity check against its messages. Prints one line per part (rows, a hash,
same or DIFFERENT) and exits 1 when any part differs.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable

WORD = re.compile(r"[^\W_]+")
PARTS = {
    "messages": "SELECT m.id, s.session_id, m.uuid, m.role, m.timestamp, m.text, m.terms"
    " FROM messages m JOIN sessions s ON s.id = m.session_pk ORDER BY m.id",
    "sessions": "SELECT id, session_id, project, cwd, git_branch, title, summary, first_at,"
    " last_at, message_count, host, username FROM sessions ORDER BY id",
    "runs": "SELECT s.session_id, r.lo, r.hi FROM message_runs r"
    " JOIN sessions s ON s.id = r.session_pk ORDER BY s.session_id, r.lo",
    "shared": "SELECT s.session_id, x.message_id, x.position FROM shared_messages x"
    " JOIN sessions s ON s.id = x.session_pk ORDER BY s.session_id, x.message_id",
    "files": 'SELECT path, project, inode, size, mtime_ns, "offset", head_hash, queue_state'
    " FROM ingested_files ORDER BY path",
}


def digest(rows: Iterable[tuple[object, ...]]) -> tuple[int, str]:
    count, sha = 0, hashlib.sha256()
    for row in rows:
        count += 1
        sha.update(repr(row).encode("utf-8", "surrogatepass"))
    return count, sha.hexdigest()[:16]


def queries(conn: sqlite3.Connection) -> list[str]:
    """A few hundred FTS5 queries from the archive's own words (the same for both
    archives when their texts are the same)."""
    words: Counter[str] = Counter()
    terms: Counter[str] = Counter()
    for text, extra in conn.execute("SELECT text, terms FROM messages ORDER BY id"):
        words.update(w.lower() for w in WORD.findall(text) if len(w) > 1)
        if extra:
            terms.update(extra.split())
    common = [w for w, _ in words.most_common(150)]
    ranked = sorted(words, key=lambda w: (-words[w], w))
    rare = ranked[150 :: max(1, (len(ranked) - 150) // 150)][:150]
    extra_terms = [t for t, _ in terms.most_common(60) if t.isalnum()]
    quoted = [f'"{w}"' for w in [*common, *rare, *extra_terms]]
    prefixes = sorted({w[:3] for w in common[:80] if len(w) >= 3})
    phrases = [f'"{a} {b}"' for a, b in zip(common[:20], common[1:21], strict=True)]
    return [*quoted, *(f'"{p}"*' for p in prefixes), *phrases]


def answers(conn: sqlite3.Connection, asked: list[str]) -> Iterable[tuple[object, ...]]:
    for query in asked:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (query,)
            )
        ]
        top = [
            (r[0], round(r[1], 9))
            for r in conn.execute(
                "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?"
                " ORDER BY bm25(messages_fts), rowid LIMIT 20",
                (query,),
            )
        ]
        yield query, len(ids), tuple(ids), tuple(top)


def main() -> int:
    first, second = (sqlite3.connect(path) for path in sys.argv[1:3])
    same = True
    for name, sql in PARTS.items():
        a, b = digest(first.execute(sql)), digest(second.execute(sql))
        same &= a == b
        print(f"{name:10s} {a[0]:9d} rows {a[1]}  {'same' if a == b else f'DIFFERENT: {b}'}")
    asked = queries(first)
    a, b = digest(answers(first, asked)), digest(answers(second, asked))
    same &= a == b and asked == queries(second)
    print(f"{'fts':10s} {a[0]:9d} queries {a[1]}  {'same' if a == b else f'DIFFERENT: {b}'}")
    for label, conn in (("first", first), ("second", second)):
        try:
            conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as error:
            print(f"integrity-check of the {label} archive: {error}")
            same = False
    print("SAME" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
