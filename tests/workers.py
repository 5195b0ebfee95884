"""Worker processes for the concurrency and crash tests: `python -m tests.workers KIND ...`.

Each worker drives the real CLI in-process (click's main, standalone) many times, so a
test can run many of them at once as separate OS processes against one memory dir and
one database. Any failure exits non-zero with the message on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from subrosa.cli.app import cli


def _cli(*args: str) -> int:
    try:
        cli.main(list(args), prog_name="subrosa", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:  # noqa: BLE001 - report any failure to the test
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    return 0


def upsert(memory_dir: Path, worker: int, count: int) -> int:
    """Write and register `count` leaves of this worker's own."""
    for i in range(count):
        name = f"w{worker:02d}_fact_{i:03d}.md"
        (memory_dir / name).write_text(
            f"---\nname: {name[:-3].replace('_', '-')}\ndescription: Worker {worker} fact {i}.\n"
            f"metadata:\n  type: {('user', 'feedback', 'project', 'reference')[i % 4]}\n---\n\n"
            f"Body {worker}/{i}.\n",
            encoding="utf-8",
        )
        code = _cli("fact", "upsert", "--leaf", name, "--hook", f"worker {worker} fact {i}")
        if code:
            return code
    return 0


def repeat(times: int, *args: str) -> int:
    """Run one command `times` times (generate, ingest ...)."""
    for _ in range(times):
        code = _cli(*args)
        if code not in (0, 1):  # 1: a problem found (e.g. pins that do not fit) is not a crash
            return code
    return 0


def main(argv: list[str]) -> int:
    kind = argv[0]
    if kind == "upsert":
        return upsert(Path(argv[1]), int(argv[2]), int(argv[3]))
    if kind == "repeat":
        return repeat(int(argv[1]), *argv[2:])
    print(f"unknown worker kind {kind!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
