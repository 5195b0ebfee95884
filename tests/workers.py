"""Worker processes for the concurrency and crash tests: `python -m tests.workers KIND ...`.

Each worker drives the real CLI in-process (click's main, standalone) many times, so a
test can run many of them at once as separate OS processes against one memory dir and
one database. Any failure exits non-zero with the message on stderr.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

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


# Audit events (PEP 578) that read, list or change a file, and what they name.
_WATCHED = {
    "open",
    "os.listdir",
    "os.scandir",
    "os.rename",
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.utime",
    "shutil.copyfile",
    "shutil.rmtree",
    "sqlite3.connect",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _event_record(event: str, args: tuple[Any, ...]) -> dict[str, Any]:
    named = args[:1] if event != "os.rename" else args[:2]  # the rest are modes and flags
    paths = [
        os.path.abspath(os.fsdecode(a))
        for a in named
        if isinstance(a, str | bytes | os.PathLike) and a
    ]
    writes = event not in ("open", "os.listdir", "os.scandir", "sqlite3.connect")
    if event == "open":
        mode, flags = args[1], args[2]
        writes = bool(
            (isinstance(mode, str) and set(mode) & set("wax+"))
            or (isinstance(flags, int) and flags & _WRITE_FLAGS)
        )
    return {"event": event, "paths": paths, "writes": writes}


def audited(log: Path, commands_json: str) -> int:
    """Run each command (a JSON list of argument lists) as a user would, recording its
    exit code, stderr and every file it opened, listed or changed; write them to `log`."""
    records: list[dict[str, Any]] = []

    def hook(event: str, event_args: tuple[Any, ...]) -> None:
        if event in _WATCHED:
            records.append(_event_record(event, event_args))

    sys.addaudithook(hook)
    results = []
    for args in json.loads(commands_json):
        records.clear()
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            try:
                cli.main(list(args), prog_name="subrosa")  # standalone: exit codes as users see
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            else:
                code = 0
        results.append({"code": code, "stderr": stderr.getvalue(), "events": list(records)})
    text = json.dumps(results)
    with open(log, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


def loop(stop: Path, pause: float, *args: str) -> int:
    """Run one command again and again (`pause` seconds apart, as sessions would) until
    the file `stop` exists; print how many runs there were."""
    runs = 0
    while runs == 0 or not stop.exists():
        code = _cli(*args)
        if code not in (0, 1):
            return code
        runs += 1
        time.sleep(pause)
    print(runs)
    return 0


def transcribe(folder: Path, sessions: int, lines: int) -> int:
    """Append `lines` messages to each of `sessions` transcripts in `folder`, ten at a time
    with a pause, as live Claude Code sessions would while others ingest them."""
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, lines, 10):
        for session in range(sessions):
            path = folder / f"session-{session}.jsonl"
            with path.open("a", encoding="utf-8") as handle:
                for i in range(start, min(start + 10, lines)):
                    record = {
                        "type": "user" if i % 2 else "assistant",
                        "uuid": f"s{session}-m{i}",
                        "sessionId": f"session-{session}",
                        "timestamp": "2026-03-01T10:00:00Z",
                        "message": {"role": "user", "content": f"message {i} of {session}"},
                    }
                    handle.write(json.dumps(record) + "\n")
        time.sleep(0.05)
    return 0


def main(argv: list[str]) -> int:
    kind = argv[0]
    if kind == "upsert":
        return upsert(Path(argv[1]), int(argv[2]), int(argv[3]))
    if kind == "repeat":
        return repeat(int(argv[1]), *argv[2:])
    if kind == "loop":
        return loop(Path(argv[1]), float(argv[2]), *argv[3:])
    if kind == "transcribe":
        return transcribe(Path(argv[1]), int(argv[2]), int(argv[3]))
    if kind == "audited":
        return audited(Path(argv[1]), argv[2])
    print(f"unknown worker kind {kind!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
