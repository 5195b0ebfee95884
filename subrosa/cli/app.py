"""The click application. Subcommands are imported only when used, so `--help`
and every command pay only for what they need."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import click

from subrosa import __version__
from subrosa.cli.common import AppContext, cli_error, click_options
from subrosa.cli.fastsearch import ROOT_OPTIONS, root_options_first
from subrosa.cli.output import error_of

# name -> (module, attribute, one-line help). The help is here so that `subrosa
# --help` lists every command without importing any of them.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "fact": ("subrosa.cli.fact", "fact", "Register leaves as facts; pin, archive, order them."),
    "generate": ("subrosa.cli.index", "generate", "Write MEMORY.md and MEMORY_archive.md."),
    "check": ("subrosa.cli.index", "check", "The witness: is the index inside its caps?"),
    "adopt": ("subrosa.cli.adopt", "adopt", "Take over an existing memory dir and index."),
    "rebuild": ("subrosa.cli.adopt", "rebuild", "Recreate this project's facts from disk."),
    "stale": ("subrosa.cli.stale", "stale", "Find stale facts; archive the certain ones."),
    "ingest": ("subrosa.cli.transcripts", "ingest", "Archive Claude Code transcripts."),
    "transcript": ("subrosa.cli.transcripts", "transcript", "List or show archived sessions."),
    "search": ("subrosa.cli.transcripts", "search", "Search facts and every archived message."),
    "hook": ("subrosa.cli.claude", "hook", "Claude Code hooks (session-start, stop, ...)."),
    "install": ("subrosa.cli.claude", "install", "Install the hooks and skills into Claude Code."),
    "checkpoint-mark": ("subrosa.cli.claude", "checkpoint_mark", "Mark this session extracted."),
    "checkpoint-clear": ("subrosa.cli.claude", "checkpoint_clear", "Empty the pending queue."),
    "checkpoint-list": ("subrosa.cli.claude", "checkpoint_list", "List sessions to extract."),
    "mcp": ("subrosa.cli.mcpserver", "mcp", "Serve the memory to an agent as MCP tools."),
    "doctor": ("subrosa.cli.doctor", "doctor", "Check the set-up, each problem with its fix."),
    "db": ("subrosa.cli.dbcmd", "db", "Inspect or migrate the database."),
    "export": ("subrosa.cli.transfer", "export_cmd", "Write a project's memory to a file."),
    "import": ("subrosa.cli.transfer", "import_cmd", "Add an exported memory to this database."),
    "demo": ("subrosa.cli.demo", "demo", "Run the whole flow on built-in example data."),
}


def _load(name: str) -> click.Command:
    """The command `name`, its module imported now."""
    module_name, attribute, _help = COMMANDS[name]
    command = getattr(importlib.import_module(module_name), attribute)
    assert isinstance(command, click.Command), name
    return command


class SubrosaGroup(click.Group):
    """Lazy subcommands, and SubrosaError turned into one sentence and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in self.list_commands(ctx)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return _load(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, root_options_first(args))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            # The commands load lazily, so click's own suggestion sees none of them.
            close = difflib.get_close_matches(name, COMMANDS, n=3)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise click.UsageError(
                f"No such command {name!r}.{hint} `subrosa --help` lists them all.", ctx
            )
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise  # stdout's reader went away: no error to show (subrosa.cli.main)
        except Exception as exc:
            # One wording for both entries (subrosa.cli.output; the fast paths use it
            # too), a damaged database included; anything else is a bug: its traceback.
            app = ctx.obj if isinstance(ctx.obj, AppContext) else None
            shown = error_of(exc, (lambda: app.db_url) if app is not None else None)
            if shown is None:
                raise
            raise cli_error(*shown) from None


@click.group(cls=SubrosaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click_options(ROOT_OPTIONS)  # defined beside `search`'s: the fast path reads them too
@click.version_option(__version__, prog_name="subrosa")
@click.pass_context
def cli(ctx: click.Context, memory_dir: str | None, db: str | None) -> None:
    """subrosa: a durable memory for coding agents.

    Leaf files (one fact each, markdown with YAML frontmatter) in a project's memory
    dir are the truth. subrosa registers them as facts, generates the MEMORY.md index
    that every new Claude Code session loads (always inside the 200-line / 25 KB
    limit), archives stale facts, and keeps every session transcript searchable.
    """
    source = ctx.get_parameter_source("memory_dir")
    given_by = "SUBROSA_MEMORY_DIR" if source is click.core.ParameterSource.ENVIRONMENT else None
    ctx.obj = AppContext(memory_dir_option=memory_dir, db_option=db, memory_dir_given_by=given_by)
