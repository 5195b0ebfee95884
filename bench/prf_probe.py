"""Pseudo-relevance feedback for `subrosa search`, measured in-process (issue 12).

    python bench/prf_probe.py --archive DIR [--variant NAME ...] [--index] [--moves]
    python bench/prf_probe.py --archive DIR --fresh --variant NAME      # heldout5 too
    python bench/prf_probe.py --archive DIR --timing --variant NAME     # in-process cost

DIR is an archive kept by `python bench/recall.py --keep DIR` (copied before use: a
search counts its facts' hits). Every question is searched in-process (subrosa's
search, all projects, limit 10; question by question the same ranks as bench/recall.py's
whole processes): first as today, then with feedback from the first results (the
variants in VARIANTS, all by default), and scored as bench/recall.py scores it (first
answer among the top 10). The tuned sets are reported by set and by kind, and with
--moves question by question (what moved); heldout5 only with --fresh, aggregates only.
--index asks the index for the feedback words' document frequencies, as subrosa asks a
unit's (else they are counted over the archive in Python, faster for a grid); --timing
always does. Findings: bench/recall/README.md, "Pseudo-relevance feedback, measured".
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import recall as bench  # noqa: E402

from subrosa.archive import search as arch  # noqa: E402
from subrosa.memory.recall import search_facts  # noqa: E402
from subrosa.query import Alt, Filters, Unit, parse_query, query_units  # noqa: E402
from subrosa.recall import _archive_idf  # noqa: E402
from subrosa.schema import connect  # noqa: E402
from subrosa.terms import WORD, is_stopword  # noqa: E402

FILTERS = Filters()
PARTS: dict[str, float] = defaultdict(float)  # where a variant's time goes (--timing)
LIMIT = 10


class Cfg(NamedTuple):
    name: str
    k: int = 5  # feedback documents: the first k results
    m: int = 10  # expansion terms
    weight: float = 0.3  # an expansion term's weight (its unit's), the best one's
    min_docs: int = 1  # a term must be in this many feedback documents
    mode: str = "rescore"  # rescore: same tiers and candidates; fuse: RRF with a bag search
    gate: str = "always"  # always | thin (first tier < 5) | some (first result "some")
    fuse: float = 0.5  # the second list's weight in RRF
    source: str = "results"  # results | sessions (the messages of the top results' sessions)
    flat: bool = False  # every expansion term the same weight
    notool: bool = False  # feedback from what was said only (no tool call or output)
    maxdf: float = 1.0  # a term in more than this share of messages is no feedback term


# ---------------------------------------------------------------- the archive's words


class IndexVocabulary:
    """Document frequencies asked of the archive's index (subrosa.archive.search's
    probes, as a shipped variant would: one lookup per word, at most SELECTIVE doclist
    entries each), for the `probe` words with the most feedback weight."""

    def __init__(self, conn: Any, probe: int = 30) -> None:
        self.conn, self.probe_count = conn, probe
        self.n = arch._newest_id(conn)
        self.df: dict[str, float] = {}

    def learn(self, terms: list[str]) -> None:
        units = [Unit(t, (Alt((t,), True),)) for t in terms if t not in self.df]
        for stats in arch.unit_stats(self.conn, units):
            self.df[stats.unit.label] = stats.df

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))


class Vocabulary:
    """Document frequencies of the archive's words (messages), for the idf of a
    feedback term (the harness's shortcut; a shipped variant would ask the index)."""

    def __init__(self, conn: Any) -> None:
        self.df: Counter[str] = Counter()
        self.n = 0
        for (text,) in conn.execute("SELECT text FROM messages"):
            self.n += 1
            self.df.update(set(WORD.findall(text.lower())))

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))


def _usable(token: str) -> bool:
    return (
        len(token) >= 3
        and not is_stopword(token)
        and not any(ch.isdigit() for ch in token)
        and token.isascii()
        and len(token) <= 24
    )


def feedback_terms(
    texts: list[str], units: list[Unit], vocab: Vocabulary | IndexVocabulary, cfg: Cfg
) -> list[tuple[str, float]]:
    """The m words that tell the feedback texts from the archive: RM3's P(t|d) summed
    over the texts (each text weighs the same), times idf; the query's own words and
    their forms left out."""
    own = {tok for u in units for alt in (*u.alts, *u.splits) for tok in alt.tokens}
    own |= {u.label for u in units}
    weight: dict[str, float] = defaultdict(float)
    docs: Counter[str] = Counter()
    for text in texts:
        tokens = [t for t in WORD.findall(text.lower())]
        if not tokens:
            continue
        counts = Counter(t for t in tokens if _usable(t) and t not in own)
        for term, tf in counts.items():
            weight[term] += tf / len(tokens)
            docs[term] += 1
    if isinstance(vocab, IndexVocabulary):
        vocab.df = {}
        best = sorted(weight, key=lambda t: -weight[t])[: vocab.probe_count]
        vocab.learn(best)
        weight = {t: weight[t] for t in best}
    scored = [
        (term, w * vocab.idf(term))
        for term, w in weight.items()
        if docs[term] >= cfg.min_docs and 2 <= vocab.df.get(term, 0) <= cfg.maxdf * vocab.n
    ]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[: cfg.m]


def expansion_units(terms: list[tuple[str, float]], cfg: Cfg, stop: bool) -> list[Unit]:
    if not terms:
        return []
    top = terms[0][1]
    return [
        Unit(
            term, (Alt((term,), True),), stop=stop, weight=cfg.weight * (1 if cfg.flat else w / top)
        )
        for term, w in terms
    ]


# ---------------------------------------------------------------- searches


def search_units(
    conn: Any, units: list[Unit], limit: int, cache: arch.Cache
) -> list[dict[str, Any]]:
    """subrosa.recall.search for units already built (no hits recorded)."""
    facts = search_facts(conn, units, FILTERS, limit, _archive_idf(conn, cache))
    messages = arch.search_messages(conn, units, FILTERS, limit, cache)
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    for result in facts + messages:
        tier = result.get("tier", 1 if result["match"] == "all" else 2)
        result["tier"] = tier
        (first if tier == 1 else second).append(result)
    return (first + sorted(second, key=lambda r: -float(r["score"])))[:limit]


def key(result: dict[str, Any]) -> tuple[str, Any]:
    if result["kind"] == "fact":
        return ("fact", (result["project"], result["slug"]))
    return ("message", result["message_id"])


def texts_of(conn: Any, results: list[dict[str, Any]], cfg: Cfg) -> list[str]:
    out = []
    if cfg.source == "sessions":
        sessions = []
        for r in results:
            if r["kind"] == "message" and r["session_id"] not in sessions:
                sessions.append(r["session_id"])
        for sid in sessions:
            rows = conn.execute(
                "SELECT m.text FROM messages m JOIN sessions s ON s.id = m.session_pk"
                " WHERE s.session_id = ? AND m.text NOT LIKE '[%'",
                [sid],
            ).fetchall()
            out.append("\n".join(row[0] for row in rows))
        for r in results:
            if r["kind"] == "fact":
                out.append(fact_text(conn, r))
        return out
    for r in results:
        if r["kind"] == "fact":
            out.append(fact_text(conn, r))
        else:
            row = conn.execute(
                "SELECT text FROM messages WHERE id = ?", [r["message_id"]]
            ).fetchone()
            out.append(row[0])
    return out


def tool_io(conn: Any, r: dict[str, Any]) -> bool:
    role, text = conn.execute(
        "SELECT role, substr(text, 1, 200) FROM messages WHERE id = ?", [r["message_id"]]
    ).fetchone()
    return arch.is_tool_io(role, text)


def fact_text(conn: Any, r: dict[str, Any]) -> str:
    row = conn.execute(
        "SELECT title, description, hook, body FROM facts WHERE project = ? AND slug = ?",
        [r["project"], r["slug"]],
    ).fetchone()
    return " ".join(part or "" for part in row)


def bag(conn: Any, units: list[Unit], cache: arch.Cache, limit: int) -> list[dict[str, Any]]:
    """Every unit (query and expansion) as the second tier ranks them: any may match;
    facts and messages on one bm25 scale, as in subrosa's second tier."""
    stats = arch.unit_stats(conn, units, cache)
    hits, _texts, _used = arch._second_tier(conn, stats, FILTERS, set(), cache, limit)
    found: list[dict[str, Any]] = [
        {"kind": "message", "message_id": h.rowid, "score": h.score} for h in hits[:limit]
    ]
    found += search_facts(conn, units, FILTERS, limit, _archive_idf(conn, cache))
    found.sort(key=lambda r: -float(r["score"]))
    return found[:limit]


def today(conn: Any, query: str) -> list[dict[str, Any]]:
    return search_units(conn, query_units(parse_query(query)), LIMIT, {})


def _prf(
    conn: Any, vocab: Vocabulary | IndexVocabulary, cfg: Cfg, query: str
) -> list[dict[str, Any]]:
    return prf(conn, query, vocab, cfg)[0]


def prf(
    conn: Any, query: str, vocab: Vocabulary | IndexVocabulary, cfg: Cfg
) -> tuple[list[dict[str, Any]], list[str]]:
    units = query_units(parse_query(query))
    cache: arch.Cache = {}
    depth = 50 if cfg.mode == "fuse" else LIMIT
    first = search_units(conn, units, max(depth, cfg.k), cache)
    if not first:
        return first, []
    tier1 = sum(1 for r in first if r["tier"] == 1)
    if cfg.gate == "thin" and tier1 >= 5:
        return first[:LIMIT], []
    if cfg.gate == "some" and first[0]["tier"] == 1:
        return first[:LIMIT], []
    pool = first
    if cfg.notool:
        pool = [r for r in first if r["kind"] == "fact" or not tool_io(conn, r)]
    started = time.perf_counter()
    terms = feedback_terms(texts_of(conn, pool[: cfg.k], cfg), units, vocab, cfg)
    PARTS["feedback words"] += time.perf_counter() - started
    PARTS["fired"] += 1
    if not terms:
        return first[:LIMIT], []
    if cfg.mode == "rescore":
        more = expansion_units(terms, cfg, stop=True)
        started = time.perf_counter()
        found = search_units(conn, units + more, LIMIT, cache)
        PARTS["second round"] += time.perf_counter() - started
        return found, [t for t, _ in terms]
    more = expansion_units(terms, cfg, stop=False)
    second = bag(conn, units + more, cache, 50)
    fused: dict[tuple[str, Any], float] = defaultdict(float)
    by_key: dict[tuple[str, Any], dict[str, Any]] = {}
    for rank, r in enumerate(first, 1):
        fused[key(r)] += 1 / (60 + rank)
        by_key[key(r)] = r
    for rank, r in enumerate(second, 1):
        fused[key(r)] += cfg.fuse / (60 + rank)
        by_key.setdefault(key(r), r)
    order = sorted(fused, key=lambda k: -fused[k])
    return [by_key[k] for k in order[:LIMIT]], [t for t, _ in terms]


# ---------------------------------------------------------------- scoring


def locate(conn: Any, results: list[dict[str, Any]]) -> list[dict[str, str]]:
    out = []
    for r in results:
        if r["kind"] == "fact":
            out.append({"memory_dir": Path(str(r["project"])).name, "slug": r["slug"]})
            continue
        uuid, sid = conn.execute(
            "SELECT m.uuid, s.session_id FROM messages m JOIN sessions s ON s.id = m.session_pk"
            " WHERE m.id = ?",
            [r["message_id"]],
        ).fetchone()
        out.append({"uuid": uuid, "session_id": sid})
    return out


def table(questions: list[bench.Question], systems: list[str]) -> None:
    sets = list(dict.fromkeys(q.split for q in questions))
    print("| system | " + " | ".join(sets) + " | tuned R@5 | tuned MRR |")
    print("| --- |" + " --- |" * (len(sets) + 2))
    for system in systems:
        cells = []
        for split in sets:
            s = bench.score([q for q in questions if q.split == split], system)
            cells.append(f"{s.r5:.2f} / {s.mrr:.3f}")
        tuned = [q for q in questions if q.split in bench.TUNED]
        s = bench.score(tuned, system)
        print(f"| {system} | " + " | ".join(cells) + f" | {s.r5:.3f} | {s.mrr:.3f} |")


def by_kind(questions: list[bench.Question], systems: list[str]) -> None:
    """R@5 / MRR by kind over the tuned sets together."""
    tuned = [q for q in questions if q.split in bench.TUNED]
    print("\n| kind | n | " + " | ".join(systems) + " |")
    print("| --- | --- |" + " --- |" * len(systems))
    for kind in (*bench.KINDS, "all"):
        chosen = [q for q in tuned if kind in ("all", q.kind)]
        cells = []
        for system in systems:
            s = bench.score(chosen, system)
            cells.append(f"{s.r5:.2f} / {s.mrr:.3f}")
        print(f"| {kind} | {len(chosen)} | " + " | ".join(cells) + " |")


def moved(questions: list[bench.Question], system: str) -> None:
    for q in questions:
        if q.split not in bench.TUNED:
            continue
        a, b = q.ranks["subrosa"], q.ranks[system]
        if a != b:
            print(f"    {q.id:14} {q.query[:48]!r:50} {a or '-'} -> {b or '-'}")


VARIANTS: dict[str, Cfg] = {}


def variant(cfg: Cfg) -> None:
    VARIANTS[cfg.name] = cfg


for k in (3, 5, 10):
    for w in (0.1, 0.2, 0.3, 0.5):
        variant(Cfg(f"rescore-k{k}-w{w}", k=k, weight=w))
for w in (0.1, 0.2, 0.3):
    variant(Cfg(f"rescore-k5-w{w}-d2", k=5, weight=w, min_docs=2))
    variant(Cfg(f"rescore-k10-w{w}-d2", k=10, weight=w, min_docs=2))
    variant(Cfg(f"rescore-sess-w{w}", k=3, weight=w, source="sessions"))
    variant(Cfg(f"rescore-k5-w{w}-thin", k=5, weight=w, gate="thin"))
    variant(Cfg(f"rescore-k5-w{w}-some", k=5, weight=w, gate="some"))
for w in (0.2, 0.3, 0.5):
    for f in (0.3, 0.5, 1.0):
        variant(Cfg(f"fuse-k5-w{w}-f{f}", k=5, weight=w, mode="fuse", fuse=f))
    variant(Cfg(f"fuse-k5-w{w}-f0.5-some", k=5, weight=w, mode="fuse", fuse=0.5, gate="some"))
    variant(Cfg(f"fuse-k5-w{w}-f0.5-thin", k=5, weight=w, mode="fuse", fuse=0.5, gate="thin"))

for w in (0.05, 0.1, 0.2):
    variant(Cfg(f"rescore-k5-w{w}-thin-notool", k=5, weight=w, gate="thin", notool=True))
    variant(
        Cfg(f"rescore-k5-w{w}-thin-notool-df2", k=5, weight=w, gate="thin", notool=True, maxdf=0.02)
    )
    variant(Cfg(f"rescore-k5-w{w}-notool-df2", k=5, weight=w, notool=True, maxdf=0.02))
variant(Cfg("rescore-k5-w0.05-thin", k=5, weight=0.05, gate="thin"))
variant(
    Cfg("rescore-k3-w0.1-thin-notool-df2", k=3, weight=0.1, gate="thin", notool=True, maxdf=0.02)
)
variant(
    Cfg("rescore-k10-w0.1-thin-notool-df2", k=10, weight=0.1, gate="thin", notool=True, maxdf=0.02)
)


def timings(conn: Any, questions: list[bench.Question], chosen: list[Cfg], rounds: int = 3) -> None:
    """In-process time of today's search and of each variant (its df asked of the
    index), question by question alternately, `rounds` times; the median per question."""
    index = IndexVocabulary(conn)
    systems: dict[str, Callable[[str], Any]] = {"subrosa": partial(today, conn)}
    for cfg in chosen:
        systems[cfg.name] = partial(_prf, conn, index, cfg)
    per: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        times: dict[str, list[float]] = defaultdict(list)
        for _ in range(rounds):
            for name, fn in systems.items():
                start = time.perf_counter()
                fn(q.query)
                times[name].append(time.perf_counter() - start)
        for name, ts in times.items():
            per[name].append(sorted(ts)[len(ts) // 2])
    runs = rounds * len(questions)
    fired = max(1.0, PARTS["fired"])
    words, again = 1000 * PARTS["feedback words"] / fired, 1000 * PARTS["second round"] / fired
    print(
        f"  fired on {PARTS['fired'] / runs / len(chosen):.0%} of queries; per firing:"
        f" feedback words (texts, tokens, df probes) {words:.1f} ms, second round {again:.1f} ms"
    )
    base = per["subrosa"]
    for name, ts in per.items():
        ratios = sorted(t / b for t, b in zip(ts, base, strict=True))
        ordered = sorted(ts)
        print(
            f"  {name}: median {1000 * ordered[len(ordered) // 2]:.1f} ms,"
            f" p95 {1000 * ordered[int(0.95 * len(ordered))]:.1f} ms,"
            f" max {1000 * ordered[-1]:.1f} ms; per question / today's: median"
            f" {ratios[len(ratios) // 2]:.2f}, p95 {ratios[int(0.95 * len(ratios))]:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--archive", type=Path, required=True)
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--fresh", action="store_true", help="also heldout5, aggregates only")
    parser.add_argument("--moves", action="store_true", help="list the questions that moved")
    parser.add_argument(
        "--index", action="store_true", help="feedback words' df asked of the index (as shipped)"
    )
    parser.add_argument(
        "--timing",
        action="store_true",
        help="time each variant against today's search, the df asked of the index",
    )
    args = parser.parse_args()
    # A copy: a search counts its facts' hits, and the kept archive stays as built.
    temp = Path(tempfile.mkdtemp(prefix="subrosa-prf-"))
    work = temp / "subrosa.db"
    shutil.copy(args.archive / "subrosa.db", work)
    try:
        measure(args, connect(work))
    finally:
        shutil.rmtree(temp)


def measure(args: argparse.Namespace, conn: Any) -> None:
    files = [HERE / "recall" / f"{name}.jsonl" for name in bench.TUNED]
    if args.fresh:
        files += [HERE / "recall" / f"{name}.jsonl" for name in bench.FRESH]
    questions = bench.load_questions(files, set(bench.KINDS))
    chosen = [VARIANTS[v] for v in args.variant] if args.variant else list(VARIANTS.values())
    if args.timing:
        timings(conn, questions, chosen)
        return
    vocab = IndexVocabulary(conn) if args.index else Vocabulary(conn)

    def run(system: str, fn: Callable[[str], list[dict[str, Any]]]) -> None:
        for q in questions:
            results = fn(q.query)
            q.ranks[system] = bench.first_hit(locate(conn, results), q.answers)
            q.counts[system] = len(results)

    run("subrosa", partial(today, conn))
    for cfg in chosen:
        run(cfg.name, partial(_prf, conn, vocab, cfg))
    table(questions, ["subrosa", *[c.name for c in chosen]])
    by_kind(questions, ["subrosa", *[c.name for c in chosen]])
    if args.moves:
        for cfg in chosen:
            print(f"\n  {cfg.name}:")
            moved(questions, cfg.name)


if __name__ == "__main__":
    main()
