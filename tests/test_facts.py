"""`subrosa fact …` as a user runs it: the foundation issue's must-show list."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import RunCli, write_leaf


def _list(run: RunCli, *extra: str) -> list[dict[str, object]]:
    return json.loads(run("fact", "list", "--json", *extra).stdout)  # type: ignore[no-any-return]


def test_upsert_positions_archive_restore_pin(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "first_fact.md", "The first.")
    write_leaf(memory_dir, "second_fact.md", "The second.", fact_type="feedback")
    assert (
        "added first_fact"
        in run("fact", "upsert", "--leaf", "first_fact.md", "--hook", "one").stdout
    )
    run("fact", "upsert", "--leaf", str(memory_dir / "second_fact.md"), "--hook", "two")
    listed = _list(run)
    assert [(f["slug"], f["position"]) for f in listed] == [("first_fact", 1), ("second_fact", 2)]
    assert listed[0]["hook"] == "one" and listed[1]["type"] == "feedback"

    write_leaf(memory_dir, "first_fact.md", "The first, revised.")
    assert "updated first_fact" in run("fact", "upsert", "--leaf", "first_fact.md").stdout
    first = _list(run)[0]
    assert (first["slug"], first["position"], first["hook"]) == ("first_fact", 1, "one")
    assert first["description"] == "The first, revised."

    run("fact", "archive", "--leaf", "first_fact.md", "--reason", "done")
    shown = json.loads(run("fact", "show", "first_fact", "--json").stdout)
    assert shown["status"] == "archived" and shown["archive_reason"] == "done"
    assert [f["slug"] for f in _list(run)] == ["second_fact"]
    assert [f["slug"] for f in _list(run, "--archived")] == ["first_fact"]

    assert "restored first_fact" in run("fact", "upsert", "--leaf", "first_fact.md").stdout
    restored = json.loads(run("fact", "show", "first_fact", "--json").stdout)
    assert (restored["status"], restored["position"]) == ("active", 1)

    run("fact", "pin", "--leaf", "second_fact.md")
    assert json.loads(run("fact", "show", "second_fact", "--json").stdout)["pinned"] is True
    run("fact", "unpin", "--leaf", "second_fact.md")
    assert json.loads(run("fact", "show", "second_fact", "--json").stdout)["pinned"] is False
