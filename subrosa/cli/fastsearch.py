"""`subrosa search` without click or SQLAlchemy, and what both of its entries share.

Why this exists: importing SQLAlchemy costs ~380 ms here (and click ~30 ms), while a
search of a gigabyte of transcripts takes tens of milliseconds (docs/search.md). So
subrosa.cli.__init__ sends `subrosa search` to main() before anything heavy loads; it
answers with the standard library alone when the database is current and no ended
session waits to be ingested (subrosa.recall.search_at_once; on a PostgreSQL server,
subrosa.pg.at_once, through libpq itself, subrosa.libpq: psycopg's import alone costs
~110 ms, docs/team.md). Otherwise (a migration
due, sessions to ingest, `--help`, an option or value it does not take) it returns
None and the click command (subrosa.cli.transcripts.search) runs: it says what is
wrong, or makes the database ready, and calls the same use case.

So that the two entries cannot drift apart, `search`'s options are defined once,
here (ROOT_OPTIONS, SEARCH_OPTIONS): this module's parser reads them, and the click
command and the root group are built from them (subrosa.cli.common.click_options).
Both print results with emit(). Standard library only (and libpq, or psycopg when
no libpq loads, for a server).
"""

from __future__ import annotations

import sys

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from subrosa.tuples import NamedTuple


class Option(NamedTuple):
    """One command-line option, for the fast parser and for click alike."""

    name: str  # as typed: --limit
    dest: str  # the parameter's name
    kind: str  # "flag", "count" (an integer >= 1, at most `maximum`), "text", "choice", "dir"
    help: str
    default: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    envvar: str | None = None  # read by click; the fast path lets subrosa.paths read it
    maximum: int | None = None  # a count's largest value


# The root group's options, which may come before `search`.
ROOT_OPTIONS = (
    Option(
        "--memory-dir",
        "memory_dir",
        "dir",
        "The memory dir (default: $CLAUDE_PROJECT_DIR/.claude/memory if it exists, "
        "else Claude Code's auto-memory dir for this project).",
        envvar="SUBROSA_MEMORY_DIR",
    ),
    Option(
        "--db",
        "db",
        "text",
        "The database: a file path or an SQLAlchemy URL (default: a file in your data dir).",
        envvar="SUBROSA_DB",
    ),
)
_ROOT_NAMES = {option.name for option in ROOT_OPTIONS}


def root_options_first(args: list[str]) -> list[str]:
    """`fact list --memory-dir DIR` read as `--memory-dir DIR fact list`: the root
    options are taken after the command name too (no command has options of the same
    name), the last one given winning. Nothing after `--` moves."""
    head = 0
    while head < len(args) and args[head].partition("=")[0] in _ROOT_NAMES:
        head += 1 if "=" in args[head] else 2
    if head >= len(args) or args[head].startswith("-"):
        return args
    moved: list[str] = []
    kept = [args[head]]
    rest = iter(args[head + 1 :])
    for arg in rest:
        if arg == "--":
            kept += [arg, *rest]
            break
        name, has_value, _ = arg.partition("=")
        value = None if name not in _ROOT_NAMES or has_value else next(rest, None)
        if name in _ROOT_NAMES and has_value:
            moved.append(arg)
        elif value is not None:
            moved += [arg, value]
        else:  # not ours, or ours without its value: click says what is wrong
            kept.append(arg)
    return args[:head] + moved + kept


JSON_HELP = "Print one JSON document on stdout instead of text."
SEARCH_OPTIONS = (
    Option("--limit", "limit", "count", "How many results.", default=10),
    Option(
        "--all-projects",
        "all_projects",
        "flag",
        "Facts and sessions of every project, not only this one.",
        default=False,
    ),
    Option(
        "--project",
        "project",
        "text",
        "Facts and sessions of the project NAME (its name on every machine, e.g. "
        "github.com/org/repo, as --json shows it), not this one.",
        metavar="NAME",
    ),
    Option(
        "--since", "since", "text", "Only messages (and facts changed) since DATE.", metavar="DATE"
    ),
    Option(
        "--role",
        "role",
        "choice",
        "Only messages by ROLE. Claude Code records a tool's output as the user's, so"
        " `user` holds those too, ranked below what was typed.",
        choices=("user", "assistant"),
    ),
    Option("--facts", "facts_only", "flag", "Only facts.", default=False),
    Option("--transcripts", "transcripts_only", "flag", "Only archived messages.", default=False),
    Option(
        "--sessions",
        "sessions",
        "flag",
        "Sessions instead of messages: each once, best first, with its best snippet.",
        default=False,
    ),
    Option("--json", "as_json", "flag", JSON_HELP, default=False),
)


# ---------------------------------------------------------------- output


def _head(result: dict[str, Any], who: bool = False) -> str:
    """A result's first line: what and where it is, its score, and how it matched;
    with `who`, who archived it."""
    from subrosa.archive.search import archived_by
    from subrosa.query import one_line

    if result["kind"] == "fact":
        head = f"fact {one_line(result['slug'])} ({result['type']}, {result['status']})"
    elif result["kind"] == "session":
        label = result.get("title") or result.get("summary")  # as `transcript list` shows it
        title = f" {one_line(label)[:80]}" if label else ""  # and cut as it cuts it
        head = (
            f"session {one_line(result['session_id'])} {one_line(str(result['last_at'] or '-'))}"
            f" ({result['messages']} matching){title}"
        )
    else:
        head = (
            f"message {one_line(result['session_id'])} "
            f"{one_line(str(result['timestamp'] or '-'))} "
            f"{result['role']} #{result['message_id']}"
        )
    if who and archived_by(result):
        head += f" by {one_line(archived_by(result))}"
    head += f"  score {result['score']:.3g}"
    if result.get("match") == "some":
        head += "  (some words)"
    elif result.get("match") == "reply":
        head += "  (the reply to a match)"
    if result.get("copies"):
        sessions = len(result.get("copy_sessions", []))
        head += f"  ({result['copies']} copies in {sessions} session{'s' * (sessions != 1)})"
    return head


def render_text(results: list[dict[str, Any]]) -> str:
    """Results for people: one header line and one snippet line each."""
    from subrosa.archive.search import several_people

    if not results:
        return "no results"
    # Who said it, once the results come from more than one person or machine (a
    # team's server); on one's own archive it would be the same on every line.
    who = several_people(results)
    lines = []
    for result in results:
        lines.append(_head(result, who))
        lines.append(f"    {result['snippet']}")
    return "\n".join(lines)


def emit(results: list[dict[str, Any]], as_json: bool, scope: str | None = None) -> None:
    """Print results on stdout: one JSON document, or text for people. `scope`: the
    project a search was limited to (None: every project); when nothing was found
    there, a person is told on stderr where else to look."""
    if as_json:
        import json

        sys.stdout.write(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(results) + "\n")
        read_as()
        if not results and scope is not None:
            from subrosa.query import one_line

            sys.stderr.write(
                f"(only project {one_line(scope)} was searched; --all-projects searches"
                " every project)\n"
            )


def read_as() -> None:
    """Tell a person on stderr which misspelt word the search read as which of the
    archive's words (subrosa.recall.READ_AS): `(read "postgress" as "postgres")`."""
    from subrosa.recall import readings

    for line in readings():
        sys.stderr.write(line + "\n")


# ---------------------------------------------------------------- the fast path


def _value(option: Option, value: str) -> Any:
    """`value` converted as click would, or None when click would refuse it."""
    if option.kind == "count":
        try:
            number = int(value)
        except ValueError:
            return None
        too_big = option.maximum is not None and number > option.maximum
        return number if number >= 1 and not too_big else None
    if option.kind == "choice":
        return value if value in option.choices else None
    return value


def parse_argv(argv: list[str]) -> tuple[dict[str, Any], dict[str, Any], list[str]] | None:
    """`[root options] search [options] QUERY...` as the click command reads it: the root
    options and the search options by `dest` (defaults filled in), and the query words;
    None for anything else (help, an unknown option, a bad value: click then says what)."""
    root_by_name = {option.name: option for option in ROOT_OPTIONS}
    root: dict[str, Any] = {option.dest: option.default for option in ROOT_OPTIONS}
    i = 0
    while i < len(argv) and argv[i] != "search":
        name, has_value, value = argv[i].partition("=")
        if name not in root_by_name:
            return None
        if not has_value:
            if i + 1 >= len(argv):
                return None
            value, i = argv[i + 1], i + 1
        root[root_by_name[name].dest] = value
        i += 1
    if i >= len(argv):
        return None
    by_name = {option.name: option for option in SEARCH_OPTIONS}
    options: dict[str, Any] = {option.dest: option.default for option in SEARCH_OPTIONS}
    words: list[str] = []
    rest = iter(argv[i + 1 :])
    for arg in rest:
        if arg == "--":
            words += list(rest)
            break
        name, has_value, value = arg.partition("=")
        option = by_name.get(name)
        if option is not None and option.kind == "flag" and not has_value:
            options[option.dest] = True
        elif option is not None and option.kind != "flag":
            if not has_value:
                following = next(rest, None)
                if following is None:
                    return None
                value = following
            options[option.dest] = _value(option, value)
            if options[option.dest] is None:
                return None
        elif arg.startswith("-") and len(arg) > 1:
            return None
        else:
            words.append(arg)
    return (root, options, words) if words else None


def main(argv: list[str]) -> int | None:
    """Run `subrosa search` (argv without the program name) without click or SQLAlchemy
    when that is safe; None means "not here": the click command runs instead."""
    from subrosa import recall
    from subrosa.config import resolve_db_url
    from subrosa.paths import resolve_memory_dir, sqlite_path
    from subrosa.pg import is_server
    from subrosa.query import QueryError

    parsed = parse_argv(argv)
    if parsed is None:
        return None
    root, options, words = parsed
    db_url = resolve_db_url(root["db"] or None)
    path = sqlite_path(db_url)
    if path is None and not is_server(db_url):
        return None
    try:
        filters = recall.filters_for(
            since=options["since"],
            role=options["role"],
            all_projects=options["all_projects"],
            project=options["project"],
            memory_dir=resolve_memory_dir(root["memory_dir"] or None),
        )
    except QueryError:
        return None
    query, limit = " ".join(words), options["limit"]
    only = {key: options[key] for key in ("facts_only", "transcripts_only", "sessions")}
    if path is not None:
        results = recall.search_at_once(path, query, filters, limit, **only)
    else:  # a server: libpq loads, not psycopg or SQLAlchemy (subrosa.pg.at_once)
        from subrosa.errors import SubrosaError

        try:
            results = _on_server(db_url, query, filters, limit, only)
        except SubrosaError as exc:  # no driver, no server: said once, as click says it
            from subrosa.cli.output import show_error

            show_error(str(exc))
            return exc.exit_code
    if results is None:
        return None
    emit(results, options["as_json"], filters.transcript_project)
    return 0


def _on_server(
    db_url: str, query: str, filters: Any, limit: int, only: dict[str, bool]
) -> list[dict[str, Any]] | None:
    """recall.search on a PostgreSQL server when it needs nothing first (its schema is
    current, no ended session waits to be ingested); None otherwise."""
    from subrosa import pg, recall
    from subrosa.archive import pending

    if pending.list_pending():
        return None
    return pg.at_once(db_url, lambda conn: recall.search(conn, query, filters, limit, **only))
