"""`subrosa stale` as a user runs it: the staleness issue's must-show list."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Db, RunCli, subrosa_process, write_leaf
from tests.markdown import active_markdown

pytestmark = pytest.mark.engines

TODAY = "2026-11-29"
RECENT = datetime(2026, 11, 1, 12, tzinfo=UTC).timestamp()
LONG_AGO = datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp()

# slug -> (leaf body, hook, pinned, leaf unchanged since LONG_AGO)
CRAFTED: dict[str, tuple[str, str, bool, bool]] = {
    # High confidence: the leaf confirms, and the hook has a terminal word or an old date.
    "status_and_terminal_word": (
        "# Queue migration\n\nStatus: Closed\n\nMoved to SQS in October.",
        "Queue migration to SQS: Done",
        False,
        False,
    ),
    "outcome_and_old_date": (
        "# Load test\n\n## Outcome\n\nCompleted: p99 stays under 80 ms.\n\n## Notes\n\nRaw data.",
        "Load test; Next check: 2026-09-01",
        False,
        False,
    ),
    "closing_paragraph_and_superseded": (
        "We tried a sidecar cache.\n\nSuperseded by [[status_and_terminal_word]].",
        "Sidecar cache idea, superseded",
        False,
        False,
    ),
    # Qualifies, but pinned: flagged, never archived.
    "pinned_but_finished": (
        "**Status:** Done\n\nThe freeze rule stays a guardrail.",
        "Release freeze retro: Complete",
        True,
        False,
    ),
    # One signal alone, or two that do not make high confidence: flagged.
    "leaf_only": (
        "Status: Resolved\n\nNo more pages.",
        "Pager noise from the batch job",
        False,
        False,
    ),
    "hook_terminal_only": ("We still run it nightly.", "Nightly export: CLOSED", False, False),
    "hook_old_date_only": ("Ask Ana about the quota.", "Quota review due 2026-08-15", False, False),
    "leaf_and_recent_date": (
        "Status: Closed\n\nAudit passed.",
        "Security audit; recheck 2026-11-20",
        False,
        False,
    ),
    "dormant": ("Old reference about the VPN.", "VPN: use the eu-west profile", False, True),
    # Nothing stale.
    "fresh": ("Use pnpm everywhere.", "pnpm only, never npm", False, False),
    "negated": (
        "Status: In progress\n\nHalf the services moved.",
        "Not done yet: 4 of 8",
        False,
        False,
    ),
    "future_date": (
        "Status: Waiting for sign-off\n\nThen we ship.",
        "Sign-off due 2027-01-10",
        False,
        False,
    ),
}
ARCHIVED = {"status_and_terminal_word", "outcome_and_old_date", "closing_paragraph_and_superseded"}
FLAGGED = {
    "pinned_but_finished",
    "leaf_only",
    "hook_terminal_only",
    "hook_old_date_only",
    "leaf_and_recent_date",
    "dormant",
}


@pytest.fixture
def crafted(memory_dir: Path, run: RunCli) -> Path:
    """The crafted leaves, registered with their hooks and pins."""
    for slug, (body, hook, pinned, dormant) in CRAFTED.items():
        path = write_leaf(memory_dir, f"{slug}.md", f"About {slug}.", body=body)
        stamp = LONG_AGO if dormant else RECENT
        os.utime(path, (stamp, stamp))
        run("fact", "upsert", "--leaf", path.name, "--hook", hook, *(["--pin"] if pinned else []))
    return memory_dir


def _stale(run: RunCli, *extra: str) -> dict[str, Any]:
    return json.loads(run("stale", "--today", TODAY, "--json", *extra).stdout)  # type: ignore[no-any-return]


def _facts(run: RunCli, *extra: str) -> list[dict[str, Any]]:
    return json.loads(run("fact", "list", "--json", *extra).stdout)  # type: ignore[no-any-return]


def _snapshot(memory_dir: Path, run: RunCli, db: Db) -> dict[str, Any]:
    files = {p.name: p.read_bytes() for p in sorted(memory_dir.rglob("*")) if p.is_file()}
    files.pop("lock", None)
    return {"db": db.snapshot(), "facts": _facts(run, "--all"), "files": files}


def test_crafted_leaves_give_the_expected_archived_and_flagged_sets(
    crafted: Path, run: RunCli
) -> None:
    report = _stale(run, "--max-flags", "20")
    assert set(report) >= {"archived", "flagged", "more_flagged"}
    assert {item["slug"] for item in report["archived"]} == ARCHIVED
    assert {item["slug"] for item in report["flagged"]} == FLAGGED
    assert report["more_flagged"] == 0 and report["applied"] is False
    assert all(set(item) >= {"slug", "reason"} for item in report["archived"] + report["flagged"])

    reasons = {item["slug"]: item["reason"] for item in report["archived"] + report["flagged"]}
    assert reasons["status_and_terminal_word"] == 'leaf: "Status: Closed"; hook: "Done"'
    assert reasons["outcome_and_old_date"].startswith('leaf: "## Outcome: Completed')
    assert reasons["outcome_and_old_date"].endswith(
        "hook: dated 2026-09-01 (89 days before 2026-11-29)"
    )
    assert reasons["closing_paragraph_and_superseded"].startswith(
        'leaf: "closing paragraph: Superseded by'
    )
    assert reasons["pinned_but_finished"].startswith("pinned, so flagged instead of archived")
    assert reasons["leaf_only"] == ('leaf: "Status: Resolved"; hook: no terminal word or past date')
    assert reasons["hook_terminal_only"] == 'leaf: no terminal state; hook: "CLOSED"'
    assert "within 30" in reasons["leaf_and_recent_date"]
    assert reasons["dormant"].startswith("no search hits and unchanged for 181 days")

    # Strongest first: the pinned fact that fully qualifies leads.
    assert report["flagged"][0]["slug"] == "pinned_but_finished"
    assert report["flagged"][-1]["slug"] == "dormant"


def test_at_most_max_flags_are_listed_and_the_rest_counted(crafted: Path, run: RunCli) -> None:
    report = _stale(run)
    assert len(report["flagged"]) == 5 and report["more_flagged"] == len(FLAGGED) - 5
    assert _stale(run, "--max-flags", "0")["more_flagged"] == len(FLAGGED)

    text = run("stale", "--today", TODAY, "--max-flags", "2").stdout
    assert f"Would archive (dry run) ({len(ARCHIVED)}):" in text
    assert f"Potentially stale (review) ({len(FLAGGED)}):" in text
    assert f"… and {len(FLAGGED) - 2} more. Review them together in a separate session" in text
    listed = [line for line in text.splitlines() if line.startswith("  ") and ": " in line]
    assert len(listed) == len(ARCHIVED) + 2


def test_a_dry_run_changes_nothing(crafted: Path, run: RunCli, db: Db) -> None:
    before = _snapshot(crafted, run, db)
    result = run("stale", "--today", TODAY)
    assert "Dry run: nothing changed." in result.stderr
    _stale(run)
    assert _snapshot(crafted, run, db) == before


def test_apply_archives_only_the_sure_cases_and_records_why(crafted: Path, run: RunCli) -> None:
    report = _stale(run, "--apply")
    assert report["applied"] is True
    assert {item["slug"] for item in report["archived"]} == ARCHIVED

    archived = {f["slug"]: f for f in _facts(run, "--archived")}
    assert set(archived) == ARCHIVED
    assert archived["status_and_terminal_word"]["archive_reason"] == (
        'stale: leaf: "Status: Closed"; hook: "Done"'
    )
    active = {f["slug"]: f for f in _facts(run)}
    assert active["pinned_but_finished"]["pinned"] is True
    for slug in ARCHIVED:  # the leaf stays on disk
        assert (crafted / f"{slug}.md").exists()

    sidecar = [json.loads(line) for line in (crafted / ".subrosa" / "facts.jsonl").open()]
    assert {row["slug"] for row in sidecar if row["status"] == "archived"} == ARCHIVED

    again = _stale(run, "--apply", "--max-flags", "20")
    assert again["archived"] == [] and {i["slug"] for i in again["flagged"]} == FLAGGED


def test_the_leaf_on_disk_is_the_truth(memory_dir: Path, run: RunCli, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("Status: Closed\n", encoding="utf-8")
    for slug in ("edited_since", "deleted_since", "symlinked_out"):
        path = write_leaf(memory_dir, f"{slug}.md", body="Status: Closed\n\nAll done.")
        os.utime(path, (RECENT, RECENT))
        run("fact", "upsert", "--leaf", path.name, "--hook", f"{slug}: Done")
    write_leaf(memory_dir, "edited_since.md", body="Status: Reopened\n\nThe bug is back.")
    (memory_dir / "deleted_since.md").unlink()
    (memory_dir / "symlinked_out.md").unlink()
    (memory_dir / "symlinked_out.md").symlink_to(outside)

    report = _stale(run, "--apply")
    assert report["archived"] == []
    reasons = {item["slug"]: item["reason"] for item in report["flagged"]}
    assert reasons == {
        "edited_since": 'leaf: no terminal state; hook: "Done"',
        "deleted_since": 'leaf: file missing or unreadable, so not archived; hook: "Done"',
        "symlinked_out": 'leaf: file missing or unreadable, so not archived; hook: "Done"',
    }
    assert {f["status"] for f in _facts(run, "--all")} == {"active"}


def test_a_status_line_in_a_code_block_is_an_example_not_the_leafs_state(
    memory_dir: Path, run: RunCli
) -> None:
    # A leaf that shows a ticket's template (or an outcome heading) in a fenced block says
    # nothing about its own work: with an old date in the hook it was archived for sure.
    bodies = {
        "ticket_template": "Our tickets end with:\n\n```\nStatus: Done\n```\n\nWe still use it.",
        "report_template": "The report reads:\n\n~~~md\n## Outcome\n\nCompleted.\n~~~\n\nKeep it.",
    }
    for slug, body in bodies.items():
        write_leaf(memory_dir, f"{slug}.md", body=body)
        run("fact", "upsert", slug, "--hook", "Template; next check 2026-01-05")
    report = _stale(run, "--apply")
    assert report["archived"] == []
    assert {item["slug"] for item in report["flagged"]} == set(bodies)
    assert {f["status"] for f in _facts(run, "--all")} == {"active"}


def test_a_slug_holding_markup_is_shown_inert(memory_dir: Path, run: RunCli) -> None:
    """The extraction skill reads `stale`: a leaf's file name (its slug), which a
    repository may choose, forms no tag or link there; `--json` keeps it."""
    name = "# <b>[z](https:evil.example)"
    write_leaf(memory_dir, f"{name}.md", "About it.", body="Status: Resolved\n\nDone.")
    run("fact", "upsert", "--leaf", f"{name}.md", "--hook", "Nightly export: CLOSED")
    shown = run("stale", "--today", TODAY).stdout
    assert "  \\# ‹b›[z]\\(https:evil.example): " in shown
    assert active_markdown(shown) == [], shown
    assert _stale(run)["archived"][0]["slug"] == name


def test_nothing_stale(memory_dir: Path, run: RunCli) -> None:
    assert run("stale", "--today", TODAY).stdout == "Nothing looks stale.\n"
    assert _stale(run) == {
        "archived": [],
        "flagged": [],
        "more_flagged": 0,
        "applied": False,
        "today": TODAY,
    }


@pytest.mark.parametrize(
    "args",
    [("--today", "2026-13-01"), ("--today", "yesterday"), ("--max-flags", "-1")],
)
def test_bad_options_exit_2(memory_dir: Path, run: RunCli, args: tuple[str, ...]) -> None:
    run("stale", *args, expect=2)


def test_the_demo_shows_the_migration_spike_as_a_sure_case(run: RunCli) -> None:
    output = run("demo").stdout
    assert "$ subrosa stale --today 2026-11-29" in output
    assert "Would archive (dry run) (1):" in output
    assert (
        '  project_migration_spike: leaf: "Status: Closed"; hook: "Done", '
        "dated 2026-09-01 (89 days before 2026-11-29)"
    ) in output


def _links(text: str, slug: str) -> int:
    return text.count(f"]({slug}.md)")


def test_after_apply_and_generate_archived_facts_sit_in_the_cold_tier(
    crafted: Path, run: RunCli
) -> None:
    run("stale", "--today", TODAY, "--apply")
    run("generate")
    index = (crafted / "MEMORY.md").read_text(encoding="utf-8")
    archive = (crafted / "MEMORY_archive.md").read_text(encoding="utf-8")
    archived_section = archive[archive.index("## Archived") :]

    for slug in ARCHIVED:
        assert _links(index, slug) == 0
        assert _links(archived_section, slug) == 1
    for slug in set(CRAFTED) - ARCHIVED:
        assert _links(index, slug) + _links(archive, slug) == 1
        assert _links(archived_section, slug) == 0
    assert 'leaf: "Status: Closed"; hook: "Done"' in archived_section

    run("check", "--dir", str(crafted))
    run("check", "--dir", str(crafted), "--strict")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["stale", "--today", "2026-02-30"], "--today"),
        (["stale", "--today", "tomorrow"], "--today"),
        (["search", "pnpm", "--since", "2026-02-30"], "--since"),
        (["search", "--since", "last tuesday", "pnpm"], "--since"),
    ],
)
def test_a_date_that_is_not_one_is_one_sentence(
    tmp_path: Path, run: RunCli, args: list[str], option: str
) -> None:
    """Every date option: exit 2 and one line naming the option and the value, from the
    fast path and from click alike."""
    value = args[args.index(option) + 1]
    (tmp_path / "memory").mkdir()
    env = {**os.environ, "SUBROSA_MEMORY_DIR": str(tmp_path / "memory")}
    done = subrosa_process(*args, env=env)
    shown = [done.stderr.decode().splitlines(), run(*args, expect=2).stderr.splitlines()]
    for lines in shown:
        assert done.returncode == 2 and len(lines) == 1, lines
        assert f"{option}: not a date: {value!r}" in lines[0], lines
        assert "Usage" not in lines[0] and "%Y" not in lines[0]
    assert not list(tmp_path.glob("home/.local/share/subrosa/*.db"))  # refused before opening
