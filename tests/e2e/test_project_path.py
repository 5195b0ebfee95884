"""A project at a path Claude Code names its folder for in its own way: a path with an
emoji (two UTF-16 code units, so two `-`), a path whose name would pass 200 characters
(cut, and followed by a hash of the path). subrosa has to find the same folder: its
auto memory is the memory dir Claude Code loads, its transcripts are the project's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.claude_code import ClaudeCode, ClaudeProject, wait_for, write_leaf
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ODD_PATHS = {
    "emoji": "notes 🦀 café",
    "long": "/".join(f"a-rather-long-folder-name-{n:02d}" for n in range(7)),
}


@pytest.fixture(params=list(ODD_PATHS.values()), ids=list(ODD_PATHS))
def odd(
    request: pytest.FixtureRequest,
    claude_code: ClaudeCode,
    api: FakeAnthropic,
    subrosa_bin: Path,
    tmp_path: Path,
) -> ClaudeProject:
    return ClaudeProject(
        claude_code, api, tmp_path / "e2e", subrosa_bin, project_name=request.param
    )


def test_the_auto_memory_and_the_archive_of_a_project_at_an_odd_path(
    odd: ClaudeProject, api: FakeAnthropic
) -> None:
    cc = odd
    cc.subrosa("install")
    api.respond_text("Noted.")
    first = cc.run("Remember the word KOOKABURRA.")
    # Claude Code's own folder for the project: where it filed the session.
    folder = cc.transcript(first.session_id).parent
    assert folder == cc.transcript_dir()
    memory = folder / "memory"
    # A fact in Claude Code's auto memory (as its own auto memory writes them), indexed
    # by subrosa run in the project with no --memory-dir: the same dir.
    write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa("generate")
    assert (memory / "MEMORY.md").is_file(), "generate wrote another dir's index"
    [line] = [x for x in (memory / "MEMORY.md").read_text().splitlines() if "ZEBRAFISH" in x]

    cc.run("hello")

    [request] = api.agent_requests[1:]
    assert request.text().count(line) == 1, "the index reached the model once"
    # The first session, archived at its end, is this project's.
    hits = wait_for(lambda: cc.subrosa_json("search", "--transcripts", "KOOKABURRA"), "the archive")
    assert {h["session_id"] for h in hits} == {first.session_id}


def test_a_session_in_a_subfolder_of_a_project_at_a_long_path_is_the_projects(
    claude_code: ClaudeCode, api: FakeAnthropic, subrosa_bin: Path, tmp_path: Path
) -> None:
    # Both folder names are cut (to the same first 200 characters) and end in different
    # hashes: the subfolder's name does not start with the project's.
    cc = ClaudeProject(
        claude_code, api, tmp_path / "e2e", subrosa_bin, project_name=ODD_PATHS["long"]
    )
    cc.subrosa("install", "--scope", "user")  # a subfolder's session reads no project settings
    subfolder = cc.project / "src" / "api"
    subfolder.mkdir(parents=True)

    run = cc.run("Remember the word KOOKABURRA.", cwd=subfolder)

    assert cc.transcript(run.session_id).parent == cc.transcript_dir(subfolder)
    for where in (cc.project, subfolder):
        hits = wait_for(
            lambda w=where: cc.subrosa_json("search", "--transcripts", "KOOKABURRA", cwd=w),
            f"the session in the archive, searched from {where}",
        )
        assert [h["session_id"] for h in hits] == [run.session_id]
    # An ingest from the project's root reads the subfolder's folder too.
    other = {"SUBROSA_DB": f"sqlite:///{tmp_path / 'other.db'}"}
    assert cc.subrosa_json("ingest", env=other)["sessions"] == 1
