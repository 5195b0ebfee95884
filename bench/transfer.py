"""Export / import bench: a whole archive moved into another database and back.

    python bench/transfer.py                # 100 MB of transcripts
    python bench/transfer.py --size 300

On the deterministic corpus of bench/transcripts.py (bench/gen_transcripts.py, under
bench/out/, never committed), in the same run, each figure against the ingest of the
same corpus (the baseline: the other way the same messages reach an archive):
  - `subrosa export --all-projects` to a .jsonl.gz file (and its size against the
    database's);
  - `subrosa import` of that file into a new SQLite file (through ingest's write path:
    ids, terms, FTS5 rows), which should not be slower than ingesting the transcripts;
  - the same import again, which adds nothing (it still reads and checks the file);
  - the moved archive answers the same: 20 rare and 20 medium queries give the same
    (kind, uuid) lists in both databases (printed as a count of queries that differ).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _table import print_table  # noqa: E402
from gen_transcripts import MEDIUM, RARE  # noqa: E402
from transcripts import corpus, run_measured  # noqa: E402

from subrosa.archive.connection import connect  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402


def _answers(db: Path) -> list[list[tuple[str, object]]]:
    conn = connect(db)
    try:
        found = []
        for query in RARE + MEDIUM:
            hits = search(conn, query, Filters(), 10)
            ids = [h.get("message_id") for h in hits if h["kind"] == "message"]
            marks = ",".join("?" * len(ids))
            uuids = dict(conn.execute(f"SELECT id, uuid FROM messages WHERE id IN ({marks})", ids))
            found.append([(h["kind"], uuids.get(h.get("message_id"))) for h in hits])
        return found
    finally:
        conn.close()


def bench(size_mb: int, out: Path) -> None:
    import os

    root, jsonl_bytes = corpus(size_mb, out)
    work = out / f"transfer-{size_mb}mb"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source, target = work / "source.db", work / "target.db"
    env = {
        **os.environ,
        "HOME": str(work),
        "CLAUDE_CONFIG_DIR": str(root),
        "SUBROSA_DB": str(source),
        "SUBROSA_MEMORY_DIR": str(work / "memory"),
        "XDG_DATA_HOME": str(work / "data"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (work / "memory").mkdir()
    subrosa = [str(Path(sys.executable).parent / "subrosa")]
    run_measured([*subrosa, "ingest"], env)  # creates and migrates the archive
    run_measured([*subrosa, "--db", str(target), "ingest"], env)
    ingest_s, ingest_rss, _ = run_measured([*subrosa, "ingest", "--all-projects"], env)
    file = work / "all.jsonl.gz"
    export_s, export_rss, _ = run_measured([*subrosa, "export", str(file), "--all-projects"], env)
    import_s, import_rss, _ = run_measured(
        [*subrosa, "--db", str(target), "import", str(file)], env
    )
    again_s, _, _ = run_measured([*subrosa, "--db", str(target), "import", str(file)], env)
    messages = sqlite3.connect(target).execute("SELECT count(*) FROM messages").fetchone()[0]
    differ = sum(a != b for a, b in zip(_answers(source), _answers(target), strict=True))
    db_mb = sum(p.stat().st_size for p in work.glob("source.db*")) / 1e6
    mb = jsonl_bytes / 1e6
    print(f"\n## {size_mb} MB corpus: {mb:.0f} MB of JSONL, {messages:,} messages\n")
    print_table(
        [
            ("ingest --all-projects", f"{ingest_s:.1f} s", "(the baseline)", "1.00", ""),
            (
                "export (gzip)",
                f"{export_s:.1f} s",
                f"ingest {ingest_s:.1f} s",
                f"{export_s / ingest_s:.2f}",
                "",
            ),
            (
                "export file size",
                f"{file.stat().st_size / 1e6:.0f} MB",
                f"database {db_mb:.0f} MB",
                f"{file.stat().st_size / 1e6 / db_mb:.2f}",
                "",
            ),
            (
                "import into a new file",
                f"{import_s:.1f} s",
                f"ingest {ingest_s:.1f} s",
                f"{import_s / ingest_s:.2f}",
                "<= 1.0",
            ),
            (
                "import again (adds 0)",
                f"{again_s:.1f} s",
                f"ingest {ingest_s:.1f} s",
                f"{again_s / ingest_s:.2f}",
                "",
            ),
            (
                "peak RSS export / import",
                f"{export_rss / 1e6:.0f} / {import_rss / 1e6:.0f} MB",
                f"ingest {ingest_rss / 1e6:.0f} MB",
                f"{import_rss / ingest_rss:.2f}",
                "",
            ),
            ("queries answered differently", f"{differ} of {len(RARE + MEDIUM)}", "", "", "0"),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100, help="MB of transcripts")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args()
    bench(args.size, args.out)


if __name__ == "__main__":
    main()
