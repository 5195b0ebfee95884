"""`subrosa stale --apply`, then `subrosa generate`: archived facts sit in
MEMORY_archive.md and the witness (`subrosa check`) passes."""

from __future__ import annotations

import pytest

pytest.importorskip("subrosa.cli.index")

from pathlib import Path  # noqa: E402

from tests.conftest import RunCli  # noqa: E402
from tests.test_stale import ARCHIVED, CRAFTED, TODAY, crafted  # noqa: E402, F401


def _links(text: str, slug: str) -> int:
    return text.count(f"]({slug}.md)")


def test_after_apply_and_generate_archived_facts_sit_in_the_cold_tier(
    crafted: Path,  # noqa: F811
    run: RunCli,
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
