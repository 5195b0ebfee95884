"""`subrosa fact …`: register leaves and curate what subrosa knows about them.

Adapters only: each command calls one use case of subrosa.memory.facts. upsert, pin,
unpin and archive have a second entry without click (subrosa.cli.fastpath), which
prints their output for both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say
from subrosa.cli.fastpath import show_archived, show_pinned, show_upserted
from subrosa.config import FACT_TYPES
from subrosa.errors import ProblemFound
from subrosa.memory import facts

F = TypeVar("F", bound=Callable[..., Any])


def fact_name(command: F) -> F:
    """SLUG, the one way every fact command names a fact, or `--leaf FILE` (the older
    spelling, kept for scripts): the use case gets the leaf's file either way."""
    command = click.option(
        "--leaf",
        "leaf_arg",
        metavar="FILE",
        help="The leaf file, as given or relative to the memory dir (instead of SLUG).",
    )(command)
    return click.argument("slug", required=False)(command)


def leaf_named(app: AppContext, slug: str | None, leaf_arg: str | None) -> str:
    """The leaf file SLUG or --leaf names: SLUG is `<memory dir>/SLUG.md` (a name
    ending in .md is a file, as --leaf takes it)."""
    if (slug is None) == (leaf_arg is None):
        raise click.UsageError(
            "name the fact: its SLUG (the leaf's file name without .md), or --leaf FILE."
        )
    if leaf_arg is not None:
        return leaf_arg
    assert slug is not None
    return slug if slug.endswith(".md") else str(app.memory_dir / f"{slug}.md")


@click.group()
def fact() -> None:
    """Register leaf files as facts, and curate their hook, pin, status and order."""


@fact.command()
@fact_name
@click.option("--hook", help="One line that tells a cold session why to open this leaf.")
@click.option("--pin", is_flag=True, help="Always keep this fact in MEMORY.md.")
@json_option
@pass_app
def upsert(
    app: AppContext,
    slug: str | None,
    leaf_arg: str | None,
    hook: str | None,
    pin: bool,
    as_json: bool,
) -> None:
    """Register the leaf SLUG.md as a fact, or refresh it after the leaf changed.

    A new fact needs --hook and joins the end of the curated order. An update keeps
    its place, and its hook unless a new one is given. Upserting an archived fact
    restores it. Type, description and title come from the leaf's frontmatter.
    """
    leaf = leaf_named(app, slug, leaf_arg)
    result = facts.upsert(app.db_url, app.project, leaf, hook=hook, pin=pin)
    show_upserted(result, as_json)  # subrosa.cli.fastpath prints it for both entries


@fact.command(name="archive")
@fact_name
@click.option("--reason", help="Why it is archived (shown in MEMORY_archive.md).")
@pass_app
def archive_cmd(
    app: AppContext, slug: str | None, leaf_arg: str | None, reason: str | None
) -> None:
    """Archive a fact: it leaves MEMORY.md for MEMORY_archive.md; the leaf stays on disk.

    `subrosa fact upsert SLUG` brings it back.
    """
    show_archived(facts.archive(app.db_url, app.project, leaf_named(app, slug, leaf_arg), reason))


def _set_pin(app: AppContext, slug: str | None, leaf_arg: str | None, pinned: bool) -> None:
    leaf = leaf_named(app, slug, leaf_arg)
    show_pinned(facts.set_pinned(app.db_url, app.project, leaf, pinned), pinned)


@fact.command()
@fact_name
@pass_app
def pin(app: AppContext, slug: str | None, leaf_arg: str | None) -> None:
    """Pin a fact: it is always selected for MEMORY.md, before any other."""
    _set_pin(app, slug, leaf_arg, True)


@fact.command()
@fact_name
@pass_app
def unpin(app: AppContext, slug: str | None, leaf_arg: str | None) -> None:
    """Unpin a fact: it competes for MEMORY.md by rank again."""
    _set_pin(app, slug, leaf_arg, False)


@fact.command()
@click.argument("slug")
@click.option("--delete-leaf", is_flag=True, help="Delete the leaf file too (asks first).")
@click.option("--yes", is_flag=True, help="Do not ask before deleting the leaf.")
@json_option
@pass_app
def forget(app: AppContext, slug: str, delete_leaf: bool, yes: bool, as_json: bool) -> None:
    """Forget one fact: drop it from the database and the sidecar, no other fact touched.

    For a fact whose leaf was deleted (generate warns about it, doctor fails on it).
    A fact whose leaf is still there is refused unless --delete-leaf, which deletes the
    leaf too after asking (--yes: without asking). Then run `subrosa generate`.
    """
    if delete_leaf and not yes:
        click.confirm(
            f"Delete the leaf of {slug} from {app.memory_dir}? This cannot be undone", abort=True
        )
    data = facts.forget(app.db_url, app.project, slug, delete_leaf=delete_leaf)
    if as_json:
        print_json(data)
        return
    gone = f" and deleted {data['path']}" if data["leaf_deleted"] else ""
    say(f"forgot {data['slug']}{gone}; run `subrosa generate` to rewrite the index")


@fact.command(name="list")
@click.option("--type", "fact_type", type=click.Choice(FACT_TYPES), help="Only this type.")
@click.option("--archived", is_flag=True, help="Only archived facts.")
@click.option("--all", "show_all", is_flag=True, help="Active and archived facts.")
@json_option
@pass_app
def list_cmd(
    app: AppContext, fact_type: str | None, archived: bool, show_all: bool, as_json: bool
) -> None:
    """List facts in curated order (active ones unless --archived or --all)."""
    if archived and show_all:
        raise click.UsageError("give --archived or --all, not both.")
    status = None if show_all else ("archived" if archived else "active")
    project = app.existing_project()  # only reads: a missing memory dir creates nothing
    data = facts.list_facts(app.db_url, project, status=status, fact_type=fact_type)
    if as_json:
        print_json(data)
        return
    if not data:
        say(f"no facts in {app.memory_dir}")
        return
    from subrosa.text import terminal_line

    # Numbered 1..n as shown (a position counts the facts a filter leaves out too). The
    # slug is a leaf's file name, which a repository may have chosen, and the extraction
    # skill reads this list: shown as search shows it (the hook is sanitized when stored).
    for number, item in enumerate(data, start=1):
        flags = ("📌 " if item["pinned"] else "") + (
            "[archived] " if item["status"] == "archived" else ""
        )
        slug = terminal_line(item["slug"])
        say(f"{number:>4}. {flags}{slug} ({item['type']}) — {item['hook']}")


@fact.command()
@click.argument("slug")
@json_option
@pass_app
def show(app: AppContext, slug: str, as_json: bool) -> None:
    """Show one fact."""
    data = facts.show(app.db_url, app.existing_project(), slug)
    if as_json:
        print_json(data)
        return
    # Read by a person: the number `fact list` shows it at is its position (the stored
    # one counts archived facts too); no Python spellings (None, True). --json keeps
    # both numbers and the types.
    data["position"] = data.pop("number")
    for key, value in data.items():
        if value is None:
            value = "-"
        elif isinstance(value, bool):  # not `value == True`: a count of 1 equals True
            value = "yes" if value else "no"
        say(f"{key:>15}: {value}")


@fact.command()
@click.argument("slug")
@click.option("--before", metavar="OTHER", help="Place it just before this fact.")
@click.option("--after", metavar="OTHER", help="Place it just after this fact.")
@click.option("--section", metavar="NAME", help='Put it under a "## NAME" heading ("" for none).')
@pass_app
def move(
    app: AppContext, slug: str, before: str | None, after: str | None, section: str | None
) -> None:
    """Move a fact in the curated order that MEMORY.md is displayed in."""
    if before and after:
        raise click.UsageError("give --before or --after, not both.")
    row, number = facts.move(
        app.db_url, app.project, slug, before=before, after=after, section=section
    )
    where = f" in section {row['section']!r}" if row["section"] else ""
    say(f"moved {row['slug']} to position {number}{where}")


@fact.command()
@click.argument("slug", required=False)
@click.option("--all", "check_all", is_flag=True, help="Check every leaf in the memory dir.")
@click.option("--strict", is_flag=True, help="Exit 1 when any link dangles.")
@json_option
@pass_app
def link(app: AppContext, slug: str | None, check_all: bool, strict: bool, as_json: bool) -> None:
    """Resolve each [[wikilink]] in a leaf; unresolved ones are shown [dangling]."""
    if bool(slug) == check_all:
        raise click.UsageError("give a SLUG or --all.")
    report = facts.wikilink_report(app.memory_dir, None if check_all else slug)
    dangling = [item for item in report if item["resolved"] is None]
    if as_json:
        print_json(report)
    else:
        from subrosa.text import escape_block_start, terminal_line

        # The slug is a file name and the target a leaf's text: shown inert (the
        # memory-compact skill reads this); `--json` keeps both as they are.
        for item in report:
            shown = f"{item['resolved']}.md" if item["resolved"] else "[dangling]"
            slug, target = terminal_line(str(item["slug"])), terminal_line(str(item["target"]))
            say(escape_block_start(f"{slug}: [[{target}]] -> {shown}"))
        if not report:
            say("no wikilinks")
    if strict and dangling:
        raise ProblemFound(f"{len(dangling)} wikilink(s) dangle.")
