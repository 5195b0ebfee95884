"""What every command shares: the resolved project, the database, output helpers
(subrosa.cli.output's, re-exported)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from subrosa.cli.fastsearch import JSON_HELP, Option

# Re-exported: every command prints through subrosa.cli.output, as the fast paths do.
from subrosa.cli.output import note as note
from subrosa.cli.output import print_json as print_json
from subrosa.cli.output import say as say
from subrosa.cli.output import show_error
from subrosa.cli.output import warn as warn
from subrosa.config import Settings, load_settings, resolve_db_url
from subrosa.memory.project import Project
from subrosa.paths import memory_dir_origin, resolve_memory_dir

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def err_console() -> Console:
    """rich, on stderr, for the ingest progress bar; imported on first use (~50 ms)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


class CliError(click.ClickException):
    """A one-sentence error: the operation found a problem (exit 1)."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        show_error(self.format_message())


class CliInputError(CliError):
    """A one-sentence error: bad usage or invalid input (exit 2)."""

    exit_code = 2


def cli_error(message: str, exit_code: int) -> CliError:
    """The CliError class for `exit_code` (PRODUCT.md: 1 problem found, 2 invalid input)."""
    return CliInputError(message) if exit_code == 2 else CliError(message)


@dataclass
class AppContext:
    """The options of the root command, resolved lazily (most commands need only some)."""

    memory_dir_option: str | None = None
    db_option: str | None = None
    memory_dir_given_by: str | None = None  # "--memory-dir" or "SUBROSA_MEMORY_DIR"

    @cached_property
    def memory_dir(self) -> Path:
        return Path(resolve_memory_dir(self.memory_dir_option))

    @cached_property
    def project(self) -> Project:
        given_by = self.memory_dir_given_by or ("--memory-dir" if self.memory_dir_option else None)
        return Project(self.memory_dir, memory_dir_origin(given_by))

    def existing_project(self) -> Project:
        """The project, refused in one sentence when its memory dir does not exist: a
        command that only reads says so rather than create the database for nothing."""
        self.project.require_dir()
        return self.project

    @cached_property
    def db_url(self) -> str:
        return resolve_db_url(self.db_option)

    @cached_property
    def settings(self) -> Settings:
        return load_settings()


pass_app = click.make_pass_decorator(AppContext, ensure=True)


def is_terminal() -> bool:
    return sys.stderr.isatty()


@contextmanager
def progress_bar(
    enabled: bool,
    label: str,
    *,
    in_bytes: bool = False,
    announce: str | None = None,
    stop_when_done: bool = False,
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr, advanced by (just done, in all; the total may grow as
    work is found): items, or bytes when `in_bytes`. It starts at the first report (so
    that another bar may come first: a terminal shows one at a time) and says
    `announce` then; with `stop_when_done` it goes when the total is reached, so that
    a bar after it can show, and a report after that starts it again (a second pass: a
    migration's, then the re-index's)."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    counts: tuple[ProgressColumn, ...] = (
        (DownloadColumn(), TransferSpeedColumn()) if in_bytes else (MofNCompleteColumn(),)
    )
    bar = Progress(
        BarColumn(), *counts, TimeRemainingColumn(), console=err_console(), transient=True
    )
    task = None
    done_so_far = 0
    announced = False

    def advance(done: int, total: int) -> None:
        nonlocal task, done_so_far, announced
        if task is None:
            if announce and not announced:
                note(announce)
                announced = True
            bar.start()
            task = bar.add_task(label, total=total)
        done_so_far += done
        bar.update(task, total=total, advance=done)
        if stop_when_done and done_so_far >= total:
            bar.stop()
            bar.remove_task(task)
            task, done_so_far = None, 0

    try:
        yield advance
    finally:
        bar.stop()


def reindex_bar(enabled: bool) -> AbstractContextManager[Callable[[int, int], None] | None]:
    """The bar for the archive's re-index after a migration (it takes about as long as
    ingesting the archive afresh), advanced by (messages just indexed, messages in all)."""
    announce = "re-indexing the archive for search (once, after an upgrade)"
    return progress_bar(enabled, "re-index", announce=announce, stop_when_done=True)


json_option = click.option("--json", "as_json", is_flag=True, help=JSON_HELP)


class Folder(click.Path):
    """click.Path(file_okay=False), whose refusal of a file names where the value came
    from: an environment variable is no `Invalid value for '--memory-dir'`."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if param is not None and param.name and os.path.isfile(value):
            source = ctx.get_parameter_source(param.name) if ctx is not None else None
            envvar = getattr(param, "envvar", None)
            named = (
                envvar
                if source is click.core.ParameterSource.ENVIRONMENT and isinstance(envvar, str)
                else (param.opts[0] if param.opts else param.name)
            )
            raise CliInputError(
                f"{value}: is a file, not a folder, so it cannot be the memory dir "
                f"({named}); point {named} at a folder."
            )
        return super().convert(value, param, ctx)


def click_options(options: Iterable[Option]) -> Callable[[F], F]:
    """Decorate a click command with `options` (subrosa.cli.fastsearch's definitions,
    which its stdlib parser reads too), in the order given."""
    converted = []
    for option in options:
        kwargs: dict[str, Any] = {"help": option.help}
        if option.kind == "flag":
            kwargs["is_flag"] = True
        elif option.kind == "count":
            kwargs["type"] = click.IntRange(min=1, max=option.maximum)
            kwargs.update(default=option.default, show_default=True)
        elif option.kind == "choice":
            kwargs["type"] = click.Choice(list(option.choices))
        elif option.kind == "dir":
            kwargs["type"] = Folder()
        if option.metavar:
            kwargs["metavar"] = option.metavar
        if option.envvar:
            kwargs["envvar"] = option.envvar
        converted.append(click.option(option.name, option.dest, **kwargs))

    def decorate(command: F) -> F:
        for decorator in reversed(converted):
            command = decorator(command)
        return command

    return decorate
