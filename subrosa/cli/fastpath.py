"""The commands the extraction skill runs once per fact, without click: `fact upsert`,
`fact pin`, `fact unpin`, `fact archive`, `checkpoint-mark`, and `generate` after them;
and `ingest`, which the SessionEnd hook starts after every session.

Why this exists: each is a whole process, a few milliseconds of work, and click cost
~40 ms of CPU to import (SQLAlchemy, ~0.4 s, is kept out by the use cases themselves:
subrosa.memory.rows, subrosa.memory.quick, subrosa.archive.connection). So
subrosa.cli.__init__ hands these commands to main() first; it parses exactly the
options the click command takes and calls the same use case, printing through the
same functions (below, and subrosa.cli.output). Anything else
(`--help`, an option or value it does not know, a missing option) returns None and
the click command runs: it says what is wrong. A test holds each command's options
here to the click command's.

Each command's output is defined once, here, and the click commands call it too.
Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from subrosa.cli.fastsearch import JSON_HELP, ROOT_OPTIONS, Option, root_options_first
from subrosa.cli.output import error_of, note, print_json, say, show_error, warn
from subrosa.config import BYTE_CAP, LINE_CAP

if TYPE_CHECKING:
    from subrosa.archive.ingest import Ingested, IngestReport
    from subrosa.memory.facts import Upserted
    from subrosa.memory.generate import Outcome
    from subrosa.memory.generator import TooLong
    from subrosa.memory.project import Project
    from subrosa.memory.takeover import Report

JSON = Option("--json", "as_json", "flag", JSON_HELP, default=False)
LEAF = Option("--leaf", "leaf_arg", "text", "The leaf file.", metavar="FILE")


class Command(NamedTuple):
    """A command this module answers: its words, options, required options and runner;
    `paths`: it takes existing paths as arguments (into opts["paths"]); `slug`: it
    names a fact by SLUG or --leaf FILE, one of the two (into opts["leaf_arg"])."""

    words: tuple[str, ...]
    options: tuple[Option, ...]
    required: tuple[str, ...]
    run: Callable[[dict[str, Any], dict[str, Any]], None]
    paths: bool = False
    slug: bool = False


# ---------------------------------------------------------------- output, shared with click


def show_upserted(result: Upserted, as_json: bool) -> None:
    """What `fact upsert` prints."""
    for message in result.warnings:
        warn(message)
    if as_json:
        print_json({"action": result.action, "fact": result.fact})
    else:
        # The number `fact list` shows it at (`position` counts the archived facts too).
        say(f"{result.action} {result.fact['slug']} (position {result.number})")


def show_pinned(row: dict[str, Any], pinned: bool) -> None:
    """What `fact pin` and `fact unpin` print."""
    say(f"{'pinned' if pinned else 'unpinned'} {row['slug']}")


def show_archived(row: dict[str, Any]) -> None:
    """What `fact archive` prints."""
    say(f"archived {row['slug']}: {row['archive_reason']}")


def show_marked(marked: dict[str, Any], as_json: bool) -> None:
    """What `checkpoint-mark` prints."""
    if as_json:
        print_json(marked)
    else:
        say(
            f"marked {marked['session_id']}: extraction covers {marked['size']} bytes of "
            f"{marked['transcript_path']}"
        )


def _names(slugs: list[str], limit: int = 12) -> str:
    # A slug is a file name a repository may choose, and the skills read this report.
    from subrosa.text import terminal_line

    shown = ", ".join(terminal_line(slug) for slug in slugs[:limit])
    return shown + (f", … ({len(slugs) - limit} more)" if len(slugs) > limit else "")


def print_summary(
    outcome: Outcome, budget: int, max_lines: int, dry_run: bool, backups: Sequence[str] = ()
) -> None:
    """What `generate` (and `adopt`) print about a run: the hot tier, then who went where.
    `backups`: adopt's copies of the old index files, said here once each."""
    from subrosa.memory.marker import ARCHIVE, INDEX

    plan, report = outcome.plan, outcome.report
    if dry_run:
        verb = "would write MEMORY.md"
    elif INDEX in outcome.changed:
        verb = "wrote MEMORY.md"
    else:
        verb = "MEMORY.md unchanged" + (f" (wrote {ARCHIVE})" if outcome.changed else "")
    say(
        f"{verb}: {len(plan.included)} facts, {plan.bytes:,} / {budget:,} bytes, "
        f"{plan.lines} / {max_lines} lines"
    )
    groups = (
        ("below budget (in MEMORY_archive.md)", [e.slug for e in plan.below_budget]),
        ("archived", [e.slug for e in plan.archived]),
        ("adopted (registered from disk)", sorted(report.adopted)),
        ("hooks taken from lines written by others", sorted(report.hooks_taken)),
        ("taken from a sidecar changed under the database", sorted(report.synced)),
        ("materialized as leaves", report.materialized),
    )
    for label, slugs in groups:
        if slugs:
            say(f"{label} ({len(slugs)}): {_names(slugs)}")
    if outcome.replaced_claude_index:
        say("replaced the MEMORY.md Claude Code had written from the leaves (nothing else in it)")
    for path in outcome.kept:
        if path not in backups:
            say(f"kept a copy of the lines not taken over: {path}")
    kept = "would be kept" if dry_run else "is kept"
    for path in backups:
        unplaced = " (the lines not taken over with it)" if path in outcome.kept else ""
        say(f"the old index {kept} as {path}{unplaced}")


def report_problems(report: Report, shared: bool = False) -> None:
    """Warnings on stderr: facts whose leaf is gone, unreadable leaves, lenient parses.
    `shared`: the database is a team's server, where a fact registered from another
    clone whose leaf has not come here by git yet is the usual case (docs/team.md)."""
    for slug in report.missing:
        if shared:
            warn(
                f"{slug}: registered on the team's server, but its leaf is not in this "
                "memory dir; left out of both index files (a teammate's leaf not pulled "
                "yet: `git pull`, then `subrosa generate`; only if the leaf was deleted, "
                f"forget the fact for everyone: `subrosa fact forget {slug}`)."
            )
            continue
        warn(
            f"{slug}: registered, but its leaf is gone; left out of both index files "
            f"(restore the leaf, or forget the fact: `subrosa fact forget {slug}`)."
        )
    for filename, problem in report.unreadable:
        where = "listed under 'Unreadable leaves' in MEMORY_archive.md"
        if problem.startswith("invalid leaf: "):
            why = problem.removeprefix("invalid leaf: ")
            warn(f"invalid leaf: {filename}: {why}; skipped ({where}).")
        else:
            warn(f"{filename}: {problem}; {where}.")
    for message in report.warnings:
        warn(message)
    for item in report.unplaced:
        warn(f"{item.describe()}.")


def report_too_long(too_long: list[TooLong], budget: int) -> None:
    """Warnings on stderr: facts whose index line, or section heading, could not fit even
    in an empty MEMORY.md, each with what to shorten."""
    for item in too_long:
        kept = "the fact is kept (its line is in MEMORY_archive.md, search finds it) but"
        if item.section is not None:
            warn(
                f"{item.slug}: its section name is {len(item.section):,} characters, too "
                f"long for a `## ` heading in a MEMORY.md of {budget:,} bytes beside the "
                f"fact's line: {kept} cannot be in MEMORY.md under it; give it "
                f"a shorter section (`subrosa fact move {item.slug} --section NAME`, "
                '`--section ""` for none).'
            )
            continue
        warn(
            f"{item.slug}: its index line is {item.line_bytes:,} bytes, more than a "
            f"MEMORY.md of {budget:,} bytes has room for: {kept} cannot be in MEMORY.md "
            "until the line is shorter; shorten the leaf's title (`title:` or its first "
            f"heading) or the fact's hook (`subrosa fact upsert {item.slug} --hook TEXT`)."
        )


def report_undone(restored: list[dict[str, str]], reordered: list[dict[str, str]]) -> None:
    """Warnings on stderr: hand edits of an index file that generate undoes, each with
    the command that does what the edit meant."""
    for name in dict.fromkeys(item["file"] for item in restored):
        slugs = [item["slug"] for item in restored if item["file"] == name]
        first = slugs[0]
        drop = (
            f"To take a fact out of MEMORY.md, `subrosa fact archive {first}` (it stays in "
            f"MEMORY_archive.md); to forget it, `subrosa fact forget {first}`."
            if name == "MEMORY.md"
            else "Every leaf is listed in one of the two index files; to forget a fact, "
            f"`subrosa fact forget {first}` (with --delete-leaf, its leaf too)."
        )
        warn(
            f"{name}: {_count(slugs, 'line')} deleted by hand {_is(slugs)} back "
            f"({', '.join(slugs)}): {name} is generated from the facts. {drop}"
        )
    for name in dict.fromkeys(item["file"] for item in reordered):
        slugs = [item["slug"] for item in reordered if item["file"] == name]
        first = slugs[0]
        warn(
            f"{name}: {_count(slugs, 'line')} moved by hand {_is(slugs)} back in "
            f"{'its' if len(slugs) == 1 else 'their'} place ({', '.join(slugs)}): the order "
            f"is the facts' curated order. To move one, `subrosa fact move {first} --before "
            f"OTHER`; to keep one in MEMORY.md whatever its rank, `subrosa fact pin {first}`."
        )


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _is(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


def report_old_folder(memory_dir: Path) -> None:
    """A warning when the memory dir an older subrosa used for this project (its folder
    spelled otherwise) holds leaves the memory dir lacks or holds otherwise: nothing
    reads them there (subrosa.memory.leftover). Only a project whose folder was spelled
    otherwise stats anything: that folder."""
    from subrosa.memory.leftover import describe, find

    found = find(memory_dir)
    if found is not None:
        warn(
            f"{describe(found)}: an older subrosa's memory dir for this project, which "
            "nothing reads now; `subrosa doctor` says how to bring them over."
        )


def generate_and_report(
    db_url: str,
    project: Project,
    budget: int | None,
    max_lines: int | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """`subrosa generate`: the use case with the settings' defaults, then its report.
    Raises ProblemFound (exit 1) when pinned facts do not all fit."""
    from subrosa.config import load_settings
    from subrosa.errors import ProblemFound
    from subrosa.memory.generate import run_generate as generate
    from subrosa.pg import is_server

    settings = load_settings()
    budget = budget or settings.budget
    max_lines = max_lines or settings.max_lines
    report_old_folder(project.memory_dir)
    outcome = generate(
        db_url,
        project,
        budget=budget,
        max_lines=max_lines,
        weights=settings.type_weights,
        dry_run=dry_run,
    )
    report_problems(outcome.report, shared=is_server(db_url))
    report_too_long(outcome.plan.too_long, budget)
    report_undone(outcome.restored, outcome.reordered)
    if as_json:
        print_json(outcome.to_dict())
    else:
        print_summary(outcome, budget, max_lines, dry_run)
    if outcome.plan.pinned_left_out:
        raise ProblemFound(
            "pinned facts do not all fit the budget; left out: "
            + ", ".join(e.slug for e in outcome.plan.pinned_left_out)
            + " (unpin some, shorten their hooks, or raise --budget)."
        )


def describe_ingest(report: IngestReport) -> str:
    """An ingest report as one line for people."""
    data: dict[str, Any] = report.to_dict()
    line = (
        f"{data['new_messages']} new messages from {data['files_read']} of "
        f"{data['files_seen']} files ({data['sessions']} sessions, "
        f"{data['bytes_read'] / 1e6:.1f} MB read)"
    )
    if data["duplicate_messages"]:
        line += f"; {data['duplicate_messages']} already archived"
    line += f"; {data['redacted']} secrets redacted"
    if data["files_restarted"]:
        line += f"; {data['files_restarted']} replaced or truncated files read again"
    skipped = sum(data["skipped"].values())
    if skipped:
        kinds = ", ".join(f"{k} {v}" for k, v in data["skipped"].items())
        line += f"; {skipped} records skipped ({kinds})"
    repaired = sum(data["repaired"].values())
    if repaired:
        kinds = ", ".join(f"{k} {v}" for k, v in data["repaired"].items())
        line += f"; {repaired} records read in spite of a flaw ({kinds})"
    return line


def run_ingest(
    db_url: str,
    paths: list[Path],
    all_projects: bool,
    pending_only: bool,
    progress: Callable[[int, int], None] | None = None,
    reindex_progress: Callable[[int, int], None] | None = None,
) -> Ingested:
    """`subrosa ingest`'s use case, with the settings' tool_result_chars."""
    from subrosa.archive.ingest import ingest_transcripts
    from subrosa.config import load_settings

    if pending_only and (paths or all_projects):
        from subrosa.errors import InvalidInput

        raise InvalidInput(
            "--pending ingests the sessions that ended (and what changed in their folders),"
            " never PATHS or --all-projects: give one or the other."
        )

    return ingest_transcripts(
        db_url,
        paths,
        all_projects=all_projects,
        pending_only=pending_only,
        tool_result_chars=load_settings().tool_result_chars,
        progress=progress,
        reindex_progress=reindex_progress,
    )


def show_ingested(done: Ingested, named_paths: bool, pending_only: bool, as_json: bool) -> None:
    """What `subrosa ingest` prints."""
    from subrosa.paths import project_transcript_dir

    if as_json:
        print_json(done.report.to_dict())
        return
    if pending_only:
        return
    if not done.transcripts and not named_paths:
        note(f"no transcripts in {done.roots[0] if done.roots else project_transcript_dir()}")
    elif not done.transcripts:
        # A folder named by mistake (or one whose transcripts are elsewhere) says so.
        named = ", ".join(str(root) for root in done.roots)
        note(f"no transcripts (*.jsonl files) in {named}")
    say(describe_ingest(done.report))


# ---------------------------------------------------------------- the commands


def _memory_dir(root: dict[str, Any]) -> Path:
    from subrosa.paths import resolve_memory_dir

    return Path(resolve_memory_dir(root["memory_dir"] or None))


def _db_url(root: dict[str, Any]) -> str:
    from subrosa.config import resolve_db_url

    return resolve_db_url(root["db"] or None)


def _project(root: dict[str, Any]) -> Project:
    from subrosa.memory.project import Project
    from subrosa.paths import memory_dir_origin

    given_by = "--memory-dir" if root["memory_dir"] else None
    return Project(_memory_dir(root), memory_dir_origin(given_by))


def _leaf(root: dict[str, Any], opts: dict[str, Any]) -> str:
    """The leaf file SLUG or --leaf names (subrosa.cli.fact.leaf_named's rule): SLUG is
    `<memory dir>/SLUG.md`, a name ending in .md a file as --leaf takes it."""
    slug = opts["slug"]
    if slug is None:
        return str(opts["leaf_arg"])
    return str(slug if slug.endswith(".md") else _memory_dir(root) / f"{slug}.md")


def _upsert(root: dict[str, Any], opts: dict[str, Any]) -> None:
    from subrosa.memory import facts

    result = facts.upsert(
        _db_url(root), _project(root), _leaf(root, opts), hook=opts["hook"], pin=opts["pin"]
    )
    show_upserted(result, opts["as_json"])


def _pin(pinned: bool) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def run(root: dict[str, Any], opts: dict[str, Any]) -> None:
        from subrosa.memory import facts

        row = facts.set_pinned(_db_url(root), _project(root), _leaf(root, opts), pinned)
        show_pinned(row, pinned)

    return run


def _archive(root: dict[str, Any], opts: dict[str, Any]) -> None:
    from subrosa.memory import facts

    row = facts.archive(_db_url(root), _project(root), _leaf(root, opts), opts["reason"])
    show_archived(row)


def _mark(root: dict[str, Any], opts: dict[str, Any]) -> None:
    from subrosa.claude import checkpoint

    show_marked(checkpoint.mark_session(_memory_dir(root), opts["session_id"]), opts["as_json"])


def _ingest(root: dict[str, Any], opts: dict[str, Any]) -> None:
    paths = [Path(p) for p in opts["paths"]]
    done = run_ingest(_db_url(root), paths, opts["all_projects"], opts["pending_only"])
    show_ingested(done, bool(paths), opts["pending_only"], opts["as_json"])


def _generate(root: dict[str, Any], opts: dict[str, Any]) -> None:
    generate_and_report(
        _db_url(root),
        _project(root),
        opts["budget"],
        opts["max_lines"],
        opts["dry_run"],
        opts["as_json"],
    )


COMMANDS = (
    Command(
        ("fact", "upsert"),
        (
            LEAF,
            Option("--hook", "hook", "text", "The hook."),
            Option("--pin", "pin", "flag", "Pin it.", default=False),
            JSON,
        ),
        (),
        _upsert,
        slug=True,
    ),
    Command(("fact", "pin"), (LEAF,), (), _pin(True), slug=True),
    Command(("fact", "unpin"), (LEAF,), (), _pin(False), slug=True),
    Command(
        ("fact", "archive"),
        (LEAF, Option("--reason", "reason", "text", "Why.")),
        (),
        _archive,
        slug=True,
    ),
    Command(
        ("checkpoint-mark",),
        (Option("--session", "session_id", "text", "The session.", metavar="ID"), JSON),
        (),
        _mark,
    ),
    Command(
        ("generate",),
        (
            Option("--budget", "budget", "count", "Bytes.", maximum=BYTE_CAP),
            Option("--max-lines", "max_lines", "count", "Lines.", maximum=LINE_CAP),
            Option("--dry-run", "dry_run", "flag", "Write nothing.", default=False),
            JSON,
        ),
        (),
        _generate,
    ),
    Command(
        ("ingest",),
        (
            Option("--all-projects", "all_projects", "flag", "Every project.", default=False),
            Option("--pending", "pending_only", "flag", "Only ended sessions.", default=False),
            JSON,
        ),
        (),
        _ingest,
        paths=True,
    ),
)


# ---------------------------------------------------------------- parsing


def _convert(option: Option, value: str) -> Any:
    """`value` as click converts it, or None when click would refuse it."""
    if option.kind == "count":
        try:
            number = int(value)
        except ValueError:
            return None
        too_big = option.maximum is not None and number > option.maximum
        return number if number >= 1 and not too_big else None
    if option.kind == "dir" and os.path.isfile(value):
        return None  # click.Path(file_okay=False) refuses a file
    return value


def _take(argv: list[str], i: int, by_name: dict[str, Option], into: dict[str, Any]) -> int | None:
    """Read the option at argv[i] (and its value) into `into`; the next index, or None
    when click would say something about it instead."""
    name, has_value, value = argv[i].partition("=")
    option = by_name.get(name)
    if option is None:
        return None
    if option.kind == "flag":
        if has_value:
            return None
        into[option.dest] = True
        return i + 1
    if not has_value:
        if i + 1 >= len(argv):
            return None
        value, i = argv[i + 1], i + 1
    converted = _convert(option, value)
    if converted is None:
        return None
    into[option.dest] = converted
    return i + 1


def parse(argv: list[str]) -> tuple[Command, dict[str, Any], dict[str, Any]] | None:
    """`[root options] COMMAND [options]` as click reads it (root options after the
    command too: subrosa.cli.app reads them so): the command, the root options and the
    command's options by `dest` (defaults filled in); None for anything else."""
    argv = root_options_first(argv)
    root_by_name = {option.name: option for option in ROOT_OPTIONS}
    root: dict[str, Any] = {option.dest: option.default for option in ROOT_OPTIONS}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        step = _take(argv, i, root_by_name, root)
        if step is None:
            return None
        i = step
    envvar = os.environ.get("SUBROSA_MEMORY_DIR")
    if not root["memory_dir"] and envvar and _convert(ROOT_OPTIONS[0], envvar) is None:
        return None  # click reads the variable through the same type
    command = next((c for c in COMMANDS if tuple(argv[i : i + len(c.words)]) == c.words), None)
    if command is None:
        return None
    by_name = {option.name: option for option in command.options}
    opts: dict[str, Any] = {option.dest: option.default for option in command.options}
    opts["paths"], opts["slug"] = [], None
    i += len(command.words)
    while i < len(argv):
        if command.paths and not argv[i].startswith("-") and os.path.exists(argv[i]):
            opts["paths"].append(argv[i])  # click.Path(exists=True)
            i += 1
            continue
        if command.slug and opts["slug"] is None and not argv[i].startswith("-"):
            opts["slug"] = argv[i]  # click.argument("slug", required=False)
            i += 1
            continue
        step = _take(argv, i, by_name, opts)
        if step is None:
            return None  # an unknown option, a bad value, or an argument
        i = step
    if any(opts[dest] is None for dest in command.required):
        return None
    if command.slug and (opts["slug"] is None) == (opts["leaf_arg"] is None):
        return None  # neither or both: click says how to name the fact
    if command.paths and sys.stderr.isatty() and not opts["as_json"] and not opts["pending_only"]:
        return None  # a terminal gets click's command and its progress bar
    return command, root, opts


def main(argv: list[str]) -> int | None:
    """Run one of COMMANDS (argv without the program name) without click; None means
    "not here": the click command runs instead."""
    parsed = parse(argv)
    if parsed is None:
        return None
    command, root, opts = parsed
    try:
        command.run(root, opts)
    except BrokenPipeError:
        raise  # stdout's reader went away: no error to show (subrosa.cli.main)
    except Exception as exc:
        shown = error_of(exc, lambda: _db_url(root))
        if shown is None:
            raise
        show_error(shown[0])
        return shown[1]
    finally:
        sys.stdout.flush()
    return 0
