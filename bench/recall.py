"""Recall of `subrosa search` on natural questions, against a plain BM25 over the same texts.

    python bench/recall.py                      # dev and held-out 1-4, whole corpus
    python bench/recall.py --questions bench/recall/heldout2.jsonl   # one set only
    python bench/recall.py --kinds cjk,error    # some kinds only
    python bench/recall.py --json               # one JSON document instead of tables
    python bench/recall.py --typos              # each question also with one word misspelt

Builds a throwaway archive (a temporary HOME and database) with the command-line interface
only, so that it keeps measuring while the internals move: `subrosa ingest --all-projects`
for every Claude root under `<corpus>/transcripts` and under `bench/recall/fixtures/claude`,
and `subrosa adopt --materialize` on a copy of every memory dir under `<corpus>/memory` and
`bench/recall/fixtures/memory`. Then, for every question of bench/recall/*.jsonl (written and
committed before this script existed; see bench/recall/README.md), it runs
`subrosa search --json --all-projects --limit 10 QUERY` as a whole process and finds the
first result that is one of the question's answers: a message by its transcript uuid (looked
up by `message_id` in the archive when the result has no `uuid`), a session by the result's
`session_id`, a fact by its memory dir and slug.

The baseline, computed in the same run over the same stored texts (`messages.text`; each
fact's title, description, hook and body): Okapi BM25, k1 1.2, b 0.75, Lucene's idf, a
lowercase word tokenizer with every CJK character a word of its own, any query word may match.

Reported per question set and kind: Recall@1, Recall@5, MRR over the top 10, and how many
queries came back empty. Issue 12's targets: held-out Recall@5 >= 0.90 and never below BM25;
no empty result while any query word is in the archive. `--typos` (below, make_typo) asks
each question also with its longest plain word misspelt, as a person types fast, and
reports both sets side by side on the same questions. Since round 7 the tuner reads all
five sets one by one (`--misses`, `--json`); a later fresh set's questions are never printed
one by one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _table import print_table  # bench/ is on sys.path when run as a script

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = HERE / "recall" / "fixtures"
# The sets a tuner may read one by one (round 6: the first three; round 7: all five).
TUNED = ("dev", "heldout", "heldout2", "heldout3", "heldout4")
FRESH = ("heldout5",)  # aggregates only: a round's untuned test sets
QUESTION_FILES = tuple(HERE / "recall" / f"{name}.jsonl" for name in TUNED + FRESH)
KINDS = ("identifier", "error", "path", "paraphrase", "cjk", "fact", "session")
LIMIT = 10
K1, B = 1.2, 0.75


def default_corpus() -> Path:
    """../shared/corpus beside the main checkout; worktrees sit one level deeper."""
    for candidate in (REPO.parent / "shared" / "corpus", REPO.parent.parent / "shared" / "corpus"):
        if candidate.is_dir():
            return candidate
    return Path("/work/shared/corpus")


# ---------------------------------------------------------------- questions


@dataclass
class Question:
    id: str
    split: str
    kind: str
    query: str
    answers: list[dict[str, str]]
    ranks: dict[str, int | None] = field(default_factory=dict)  # system -> 1-based rank
    counts: dict[str, int] = field(default_factory=dict)  # system -> results returned
    top: dict[str, list[str]] = field(default_factory=dict)  # system -> result locations


def load_questions(paths: Sequence[Path], kinds: set[str]) -> list[Question]:
    questions = []
    for path in paths:
        split = path.stem
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            raw = json.loads(line)
            if raw["kind"] in kinds:
                questions.append(
                    Question(raw["id"], split, raw["kind"], raw["query"], raw["answers"])
                )
    return questions


def is_answer(location: dict[str, str], answers: list[dict[str, str]]) -> bool:
    """Whether one result location (kind + ids) is one of the question's answers."""
    for answer in answers:
        if answer["type"] == "message" and location.get("uuid") == answer["uuid"]:
            return True
        if answer["type"] == "session" and location.get("session_id") == answer["session_id"]:
            return True
        if (
            answer["type"] == "fact"
            and location.get("memory_dir") == answer["memory_dir"]
            and location.get("slug") == answer["slug"]
        ):
            return True
    return False


def first_hit(locations: list[dict[str, str]], answers: list[dict[str, str]]) -> int | None:
    for rank, location in enumerate(locations[:LIMIT], start=1):
        if is_answer(location, answers):
            return rank
    return None


def describe(location: dict[str, str]) -> str:
    if location.get("slug"):
        return f"fact {location.get('memory_dir')}/{location['slug']}"
    return f"message {location.get('uuid', '?')[:8]} in {location.get('session_id', '?')[:8]}"


# ---------------------------------------------------------------- typos

# Keys beside each other on a QWERTY keyboard (same row, and the rows above and below).
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbours(row: int, col: int) -> str:
    near = [_ROWS[row][i] for i in (col - 1, col + 1) if 0 <= i < len(_ROWS[row])]
    for other in (row - 1, row + 1):
        if 0 <= other < len(_ROWS):
            near += [_ROWS[other][i] for i in (col - 1, col, col + 1) if 0 <= i < len(_ROWS[other])]
    return "".join(dict.fromkeys(near))


NEIGHBOURS = {key: _neighbours(r, c) for r, row in enumerate(_ROWS) for c, key in enumerate(row)}
TYPO_KINDS = ("swap", "drop", "double", "neighbour")
TYPO_MIN = 5  # letters a word needs to be misspelt
_EDGE = ",;:?!()[]{}'"


def typo_word(query: str) -> tuple[int, int, str] | None:
    """Where the word a typo goes into is in `query` (start, end) and the word: the
    longest of TYPO_MIN letters or more (the first of equals) that is no stopword,
    identifier with `_`, `.` or `/`, path, CJK or part of a quoted phrase."""
    from subrosa.cjk import has_cjk
    from subrosa.terms import is_stopword

    best: tuple[int, int, str] | None = None
    quoted = [(m.start(), m.end()) for m in re.finditer(r'"[^"]*"', query)]
    for match in re.finditer(r"\S+", query):
        if any(lo <= match.start() < hi for lo, hi in quoted):
            continue
        token = match.group(0)
        word = token.strip(_EDGE)
        start = match.start() + token.index(word) if word else match.start()
        if len(word) < TYPO_MIN or not word.isalpha() or has_cjk(word):
            continue
        if is_stopword(word.lower()):
            continue
        if best is None or len(word) > len(best[2]):
            best = (start, start + len(word), word)
    return best


def misspell(word: str, seed: str) -> str:
    """One realistic typo in `word`, chosen by `seed` (the question's id: the same on
    every run): two neighbouring letters swapped, a letter dropped or doubled, or a
    letter replaced by a key beside it on a QWERTY keyboard. Never the word itself."""
    import random

    rng = random.Random(seed)
    for _ in range(100):
        kind = rng.choice(TYPO_KINDS)
        if kind == "swap":
            at = rng.randrange(len(word) - 1)
            typo = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        elif kind == "drop":
            at = rng.randrange(len(word))
            typo = word[:at] + word[at + 1 :]
        elif kind == "double":
            at = rng.randrange(len(word))
            typo = word[:at] + word[at] + word[at:]
        else:
            at = rng.randrange(len(word))
            near = NEIGHBOURS.get(word[at].lower())
            if not near:
                continue
            key = rng.choice(near)
            typo = word[:at] + (key.upper() if word[at].isupper() else key) + word[at + 1 :]
        if typo.lower() != word.lower():
            return typo
    raise ValueError(f"no typo found for {word!r}")


def with_typos(questions: list[Question]) -> list[Question]:
    """The questions holding a word to misspell, each as asked and misspelt (split
    `<set>+typo`), the originals first."""
    kept, typoed = [], []
    for q in questions:
        found = typo_word(q.query)
        if found is None:
            continue
        start, end, word = found
        query = q.query[:start] + misspell(word, q.id) + q.query[end:]
        kept.append(q)
        typoed.append(Question(q.id, f"{q.split}+typo", q.kind, query, q.answers))
    return kept + typoed


# ---------------------------------------------------------------- the archive


def claude_roots(transcripts: Path) -> list[Path]:
    """Every folder holding a Claude Code `projects/` layout (hidden folders included)."""
    roots = set()
    for directory, subdirs, _files in os.walk(transcripts):
        if "projects" in subdirs:
            roots.add(Path(directory))
            subdirs.remove("projects")
    return sorted(roots)


class Archive:
    """A throwaway HOME and database, driven through the `subrosa` command line only."""

    def __init__(self, work: Path, db: str | None = None) -> None:
        self.work = work
        # An SQLite file in `work`, or the empty database of a PostgreSQL server (--db).
        self.db = db or str(work / "subrosa.db")
        (work / "home").mkdir(parents=True, exist_ok=True)
        (work / "memory").mkdir(exist_ok=True)
        (work / "no-claude").mkdir(exist_ok=True)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("SUBROSA_", "CLAUDE_", "XDG_"))
        }
        self.env = {
            **env,
            "HOME": str(work / "home"),
            "XDG_DATA_HOME": str(work / "home" / ".local" / "share"),
            "XDG_CONFIG_HOME": str(work / "home" / ".config"),
            "SUBROSA_DB": str(self.db),
            "SUBROSA_MEMORY_DIR": str(work / "memory" / "_none"),
            "CLAUDE_CONFIG_DIR": str(work / "no-claude"),
            "TERM": "dumb",
            "NO_COLOR": "1",
        }
        script = Path(sys.executable).parent / "subrosa"
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "subrosa"]

    def run(self, args: list[str], claude_root: Path | None = None) -> str:
        env = dict(self.env)
        if claude_root is not None:
            env["CLAUDE_CONFIG_DIR"] = str(claude_root)
        proc = subprocess.run(
            [*self.command, *args],
            env=env,
            cwd=self.work,
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"subrosa {shlex.join(args)}: exit {proc.returncode}\n{proc.stderr}")
        return proc.stdout

    def ingest(self, roots: Iterable[Path]) -> int:
        total = 0
        for root in roots:
            report = json.loads(self.run(["ingest", "--all-projects", "--json"], claude_root=root))
            total += int(report.get("new_messages", 0))
        return total

    def adopt(self, memory_dirs: Iterable[Path]) -> None:
        """Each memory dir is copied first: adopt writes MEMORY.md and materialized leaves."""
        (self.work / "memory" / "_none").mkdir(exist_ok=True)
        for source in memory_dirs:
            copy = self.work / "memory" / source.name
            shutil.copytree(source, copy)
            self.run(["--memory-dir", str(copy), "adopt", "--materialize", "--json"])

    def search(self, query: str, *options: str) -> list[dict[str, Any]]:
        # The words as a shell would pass them: `subrosa search spinner stuck at bottom`;
        # a query a shell cannot split (a pasted error with one apostrophe) as one
        # argument, as its writer would quote it whole.
        try:
            words = shlex.split(query)
        except ValueError:
            words = [query]
        args = ["search", "--json", "--all-projects", "--limit", str(LIMIT), *options]
        out = self.run([*args, "--", *words])
        results: list[dict[str, Any]] = json.loads(out) if out.strip() else []
        return results

    def has_option(self, option: str) -> bool:
        """Whether this subrosa's `search` takes `option` (older ones lack --sessions)."""
        return option in self.run(["search", "--help"])

    def connect(self) -> Any:
        """A DB-API connection to the archive: sqlite3's, or subrosa.pg's for a server."""
        from subrosa.pg import connect, is_server

        if is_server(self.db):
            return connect(self.db)
        return sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)


def locate(results: list[dict[str, Any]], conn: sqlite3.Connection) -> list[dict[str, str]]:
    """Each search result as a location: facts by memory dir and slug, messages by uuid."""
    locations = []
    for result in results:
        if result.get("slug") is not None and result.get("kind") == "fact":
            locations.append(
                {"memory_dir": Path(str(result.get("project", ""))).name, "slug": result["slug"]}
            )
            continue
        uuid = result.get("uuid")
        if uuid is None and result.get("message_id") is not None:
            # Today's JSON has only the database row id; the uuid is the stable location.
            row = conn.execute(
                "SELECT uuid FROM messages WHERE id = ?", [result["message_id"]]
            ).fetchone()
            uuid = row[0] if row else None
        location = {"session_id": str(result.get("session_id", ""))}
        if uuid is not None:
            location["uuid"] = str(uuid)
        locations.append(location)
    return locations


# ---------------------------------------------------------------- the BM25 baseline

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u1100-\u11ff\u3130-\u318f"
TOKEN = re.compile(f"[{CJK}]|[^\\W{CJK}]+")


def tokenize(text: str) -> list[str]:
    """Lowercase words (letters, digits, underscore); every CJK character a word of its own."""
    return TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 over every stored message and fact, any query word may match."""

    def __init__(self, documents: list[tuple[dict[str, str], str]]) -> None:
        self.locations = [location for location, _text in documents]
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for doc, (_location, text) in enumerate(documents):
            counts = Counter(tokenize(text))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((doc, tf))
        self.average = sum(self.lengths) / max(1, len(self.lengths))

    def search(self, query: str, limit: int = LIMIT) -> list[dict[str, str]]:
        scores: dict[int, float] = defaultdict(float)
        n = len(self.lengths)
        for term in dict.fromkeys(tokenize(query)):
            posting = self.postings.get(term, [])
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting:
                norm = K1 * (1 - B + B * self.lengths[doc] / self.average)
                scores[doc] += idf * tf * (K1 + 1) / (tf + norm)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [self.locations[doc] for doc, _score in best]


def stored_documents(conn: sqlite3.Connection) -> list[tuple[dict[str, str], str]]:
    """The texts subrosa stores, read from its database: messages, then facts."""
    documents: list[tuple[dict[str, str], str]] = [
        ({"uuid": uuid, "session_id": session_id}, text)
        for uuid, session_id, text in conn.execute(
            "SELECT m.uuid, s.session_id, m.text FROM messages m"
            " JOIN sessions s ON s.id = m.session_pk ORDER BY m.id"
        )
    ]
    for project, slug, title, description, hook, body in conn.execute(
        "SELECT project, slug, title, description, hook, body FROM facts ORDER BY id"
    ):
        text = " ".join(part or "" for part in (title, description, hook, body))
        documents.append(({"memory_dir": Path(project).name, "slug": slug}, text))
    return documents


# ---------------------------------------------------------------- metrics and output

SYSTEMS = ("subrosa", "bm25")


@dataclass
class Scores:
    n: int
    r1: float
    r5: float
    mrr: float
    empty: int


def score(questions: list[Question], system: str) -> Scores:
    ranks = [q.ranks[system] for q in questions]
    n = len(ranks)
    return Scores(
        n,
        sum(1 for r in ranks if r is not None and r <= 1) / n,
        sum(1 for r in ranks if r is not None and r <= 5) / n,
        sum(1 / r for r in ranks if r is not None) / n,
        sum(1 for q in questions if q.counts[system] == 0),
    )


def groups(questions: list[Question]) -> list[tuple[str, str, list[Question]]]:
    """(split, kind or 'all', questions) in a stable order."""
    out = []
    for split in dict.fromkeys(q.split for q in questions):
        in_split = [q for q in questions if q.split == split]
        for kind in KINDS:
            chosen = [q for q in in_split if q.kind == kind]
            if chosen:
                out.append((split, kind, chosen))
        out.append((split, "all", in_split))
    return out


def print_tables(questions: list[Question]) -> None:
    header = (
        "set",
        "kind",
        "n",
        "subrosa R@1",
        "R@5",
        "MRR",
        "empty",
        "BM25 R@1",
        "R@5",
        "MRR",
        "empty",
    )
    rows = []
    for split, kind, chosen in groups(questions):
        s, b = score(chosen, "subrosa"), score(chosen, "bm25")
        rows.append(
            (
                split,
                f"**{kind}**" if kind == "all" else kind,
                str(s.n),
                f"{s.r1:.2f}",
                f"{s.r5:.2f}",
                f"{s.mrr:.2f}",
                str(s.empty),
                f"{b.r1:.2f}",
                f"{b.r5:.2f}",
                f"{b.mrr:.2f}",
                str(b.empty),
            )
        )
    print_table(rows, header)
    print()
    summary = []
    for split in dict.fromkeys(q.split for q in questions):
        chosen = [q for q in questions if q.split == split]
        s, b = score(chosen, "subrosa"), score(chosen, "bm25")
        target = ">= 0.90 and >= BM25" if split.startswith("heldout") else ">= BM25"
        summary.append(
            (
                f"{split} Recall@5 ({s.n} questions)",
                f"{s.r5:.2f}",
                f"{b.r5:.2f} (plain BM25)",
                f"{s.r5 / b.r5:.2f}x" if b.r5 else "-",
                target,
            )
        )
        summary.append(
            (f"{split} empty results", str(s.empty), str(b.empty), "", "0 (a word is present)")
        )
    print_table(summary)
    print_sessions(questions)


def print_sessions(questions: list[Question]) -> None:
    """The session questions asked of `search --sessions` (when this subrosa has it)."""
    rows = []
    for split in dict.fromkeys(q.split for q in questions):
        chosen = [q for q in questions if q.split == split and "sessions" in q.ranks]
        if chosen:
            s = score(chosen, "sessions")
            rows.append((split, str(s.n), f"{s.r1:.2f}", f"{s.r5:.2f}", f"{s.mrr:.2f}"))
    if rows:
        print("\nsession questions through `search --sessions`:\n")
        print_table(rows, ("set", "n", "R@1", "R@5", "MRR"))


def print_misses(questions: list[Question]) -> None:
    misses = [q for q in questions if q.split in TUNED and (q.ranks["subrosa"] or 99) > 5]
    print(f"\n{'/'.join(TUNED)} questions not in subrosa's top 5 ({len(misses)}):")
    for q in misses:
        first = q.top["subrosa"][0] if q.top["subrosa"] else "(no result)"
        print(
            f"  {q.id:13} {q.query!r}: subrosa {q.counts['subrosa']} results, rank"
            f" {q.ranks['subrosa'] or '-'}; BM25 rank {q.ranks['bm25'] or '-'}; first: {first}"
        )


def as_json(questions: list[Question]) -> dict[str, Any]:
    aggregates = [
        {"set": split, "kind": kind, **{system: vars(score(chosen, system)) for system in SYSTEMS}}
        for split, kind, chosen in groups(questions)
    ]
    # Per-question detail for the tuned sets only: later held-out sets stay unseen by the tuner.
    detail = [
        {
            "id": q.id,
            "split": q.split,
            "kind": q.kind,
            "query": q.query,
            "rank": q.ranks,
            "results": q.counts,
            "top": q.top,
        }
        for q in questions
        if q.split.removesuffix("+typo") in TUNED
    ]
    return {"aggregates": aggregates, "questions": detail}


# ---------------------------------------------------------------- main


def build(corpus: Path, work: Path, db: str | None = None) -> tuple[Archive, int]:
    """The archive of the corpus's transcripts and memory dirs, and of the fixtures."""
    archive = Archive(work, db)
    roots = [*claude_roots(corpus / "transcripts"), FIXTURES / "claude"]
    messages = archive.ingest(roots)
    memory = [
        path
        for parent in (corpus / "memory", FIXTURES / "memory")
        if parent.is_dir()
        for path in sorted(parent.iterdir())
        if path.is_dir()
    ]
    archive.adopt(memory)
    return archive, messages


def run(questions: list[Question], archive: Archive) -> None:
    sessions = archive.has_option("--sessions")
    conn = archive.connect()
    try:
        baseline = BM25(stored_documents(conn))
        for q in questions:
            locations = locate(archive.search(q.query), conn)
            expected = baseline.search(q.query)
            for system, found in (("subrosa", locations), ("bm25", expected)):
                q.ranks[system] = first_hit(found, q.answers)
                q.counts[system] = len(found)
                q.top[system] = [describe(location) for location in found[:5]]
            if q.kind == "session" and sessions:
                # "In which session did we …": the same question asked of --sessions.
                grouped = archive.search(q.query, "--sessions")
                found = [{"session_id": str(r["session_id"])} for r in grouped]
                q.ranks["sessions"] = first_hit(found, q.answers)
                q.counts["sessions"] = len(found)
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument(
        "--questions",
        type=Path,
        action="append",
        help="a questions file, repeatable (default: dev and heldout 1-4)",
    )
    parser.add_argument("--kinds", help=f"comma-separated, of: {','.join(KINDS)}")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--misses", action="store_true", help="list the tuned sets' misses")
    parser.add_argument(
        "--typos",
        action="store_true",
        help="only the questions with a word to misspell, each also asked misspelt",
    )
    parser.add_argument("--keep", type=Path, help="build the archive here and keep it")
    parser.add_argument(
        "--db", help="an empty PostgreSQL database's URL to build the archive in (default: SQLite)"
    )
    args = parser.parse_args()
    if not (args.corpus / "transcripts").is_dir():
        print(f"skipped: no corpus at {args.corpus} (give --corpus PATH)")
        return
    kinds = set(args.kinds.split(",")) if args.kinds else set(KINDS)
    questions = load_questions(args.questions or QUESTION_FILES, kinds)
    if args.typos:
        questions = with_typos(questions)
    if not questions:
        raise SystemExit("no questions of those kinds")
    with tempfile.TemporaryDirectory(prefix="subrosa-recall-") as temp:
        work = args.keep or Path(temp)
        if args.keep and args.keep.exists():
            raise SystemExit(f"{args.keep} exists: give a new folder to --keep")
        archive, messages = build(args.corpus, work, args.db)
        run(questions, archive)
    if args.json:
        print(json.dumps(as_json(questions), ensure_ascii=False, indent=2))
        return
    print(f"\n## Recall: {len(questions)} questions, {messages:,} messages archived\n")
    print_tables(questions)
    if args.misses:
        print_misses(questions)


if __name__ == "__main__":
    main()
