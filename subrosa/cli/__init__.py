"""The `subrosa` entry point.

Standard library only at import: `subrosa hook …` runs on every turn of the agent
and must not pay for click, rich or SQLAlchemy, so it is dispatched before any of
them load; so are `subrosa search` when it can be answered directly
(subrosa.cli.fastsearch says why and when), `subrosa check` (subrosa.cli.fastcheck)
and the commands the extraction skill runs once per fact (subrosa.cli.fastpath).
Everything else goes to the click application in subrosa.cli.app.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run subrosa with `sys.argv`."""
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and not {"--help", "-h"} & set(argv[1:]):
        try:
            from subrosa.claude.hooks import run_hook
        except ImportError:  # the hooks module is missing or broken: fail open
            print("subrosa: the hook is unavailable in this install.", file=sys.stderr)
            sys.exit(0)
        sys.exit(run_hook(argv[1:]))
    try:
        _command(argv)
    except KeyboardInterrupt:
        # Ctrl-C where click's own handler is not in place (while the fast paths run,
        # or before click starts): what click says and returns for it, not a traceback.
        # What the command was writing is rolled back as the exception unwinds.
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    except BrokenPipeError:
        # The reader of stdout went away (`subrosa transcript list | head -1`): stop
        # quietly, as a Unix tool killed by SIGPIPE does, with click's exit code for it.
        # What is still buffered goes nowhere, so the exit flush cannot fail again.
        from subrosa.fsutil import stdout_to_devnull

        stdout_to_devnull()
        sys.exit(1)


def _command(argv: list[str]) -> None:
    """Every command but the hooks: the fast paths first, else the click application."""
    asks_help = bool({"--help", "-h"} & set(argv))
    if not asks_help and argv[:1] != ["search"]:
        # The commands the extraction skill runs once per fact, and generate, answered
        # without click (subrosa.cli.fastpath says why); None: the click command runs.
        from subrosa.cli import fastpath

        code = fastpath.main(argv)
        if code is not None:
            sys.exit(code)
    if "search" in argv and not asks_help:
        # `subrosa search` answers in a fraction of the time click + SQLAlchemy take
        # to import; it falls back to the click command whenever it cannot.
        from subrosa.cli import fastsearch

        code = fastsearch.main(argv)
        if code is not None:
            sys.exit(code)
    if "check" in argv and not asks_help:
        # The witness needs neither click nor the database (subrosa.cli.fastcheck).
        from subrosa.cli import fastcheck

        code = fastcheck.main(argv)
        if code is not None:
            sys.exit(code)
    from subrosa.cli.app import cli

    cli(prog_name="subrosa")
