"""The click application. Subcommands are imported only when used, so `--help`
and every command pay only for what they need."""

from __future__ import annotations

import importlib
from typing import Any

import click

from subrosa import __version__
from subrosa.cli.common import AppContext, CliError, cli_error
from subrosa.errors import SubrosaError

# name -> (module, attribute). A module that is not there (yet) hides its command.
COMMANDS: dict[str, tuple[str, str]] = {
    "fact": ("subrosa.cli.fact", "fact"),
    "generate": ("subrosa.cli.index", "generate"),
    "check": ("subrosa.cli.index", "check"),
    "adopt": ("subrosa.cli.adopt", "adopt"),
    "rebuild": ("subrosa.cli.adopt", "rebuild"),
    "stale": ("subrosa.cli.stale", "stale"),
    "ingest": ("subrosa.cli.transcripts", "ingest"),
    "transcript": ("subrosa.cli.transcripts", "transcript"),
    "search": ("subrosa.cli.transcripts", "search"),
    "hook": ("subrosa.cli.claude", "hook"),
    "install": ("subrosa.cli.claude", "install"),
    "checkpoint-mark": ("subrosa.cli.claude", "checkpoint_mark"),
    "checkpoint-clear": ("subrosa.cli.claude", "checkpoint_clear"),
    "checkpoint-list": ("subrosa.cli.claude", "checkpoint_list"),
    "doctor": ("subrosa.cli.doctor", "doctor"),
    "db": ("subrosa.cli.dbcmd", "db"),
    "demo": ("subrosa.cli.demo", "demo"),
}


def _load(name: str) -> click.Command | None:
    module_name, attribute = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    command = getattr(module, attribute, None)
    return command if isinstance(command, click.Command) else None


class SubrosaGroup(click.Group):
    """Lazy subcommands, and SubrosaError turned into one sentence and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if _load(name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return _load(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SubrosaError as exc:
            raise cli_error(str(exc), exc.exit_code) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise CliError(f"{where}{exc.strerror or exc}.") from None


@click.group(cls=SubrosaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--memory-dir",
    type=click.Path(file_okay=False),
    envvar="SUBROSA_MEMORY_DIR",
    help="The memory dir (default: $CLAUDE_PROJECT_DIR/.claude/memory if it exists, "
    "else Claude Code's auto-memory dir for this project).",
)
@click.option(
    "--db",
    envvar="SUBROSA_DB",
    help="The database: a file path or an SQLAlchemy URL (default: a file in your data dir).",
)
@click.version_option(__version__, prog_name="subrosa")
@click.pass_context
def cli(ctx: click.Context, memory_dir: str | None, db: str | None) -> None:
    """subrosa: a durable memory for coding agents.

    Leaf files (one fact each, markdown with YAML frontmatter) in a project's memory
    dir are the truth. subrosa registers them as facts, generates the MEMORY.md index
    that every new Claude Code session loads (always inside the 200-line / 25 KB
    limit), archives stale facts, and keeps every session transcript searchable.
    """
    ctx.obj = AppContext(memory_dir_option=memory_dir, db_option=db)
