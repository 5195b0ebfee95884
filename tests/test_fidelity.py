"""Nothing a user wrote is altered, dropped or reordered (issue 17): the index keeps the
user's characters, a take-over places every line or keeps a copy, adopt keeps the order.

The pattern dirs are bench/fidelity.py's (the bench also runs the shared corpus's real
dirs through real processes); here the same diff runs in-process on each pattern.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, RunCli, write_leaf

sys.path.insert(0, str(REPO / "bench"))

import fidelity  # noqa: E402  (bench/fidelity.py)


class InProcess:
    """bench/fidelity.py's CLI protocol over the test's CliRunner."""

    def __init__(self, run: RunCli) -> None:
        self.run = run

    def __call__(self, *args: str) -> Any:
        result = self.run(*args, expect=None)
        return SimpleNamespace(
            returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr
        )


@pytest.mark.parametrize("name", [*fidelity.PATTERNS, "long-index", "81-leaves"])
def test_every_bullet_survives_adopt_and_generate(
    name: str, tmp_path: Path, memory_dir: Path, run: RunCli
) -> None:
    sources = {p.name: p for p in fidelity.pattern_dirs(tmp_path / "patterns")}
    result = fidelity.run_dir(InProcess(run), sources[name], tmp_path / "runs")
    assert result.bullets > 0
    assert result.changed == [] and result.lost == [] and result.prose_lost == []
    assert result.order_ok and result.sections_ok and result.check_ok, result.notes
    assert result.outranked == 0


def _facts(run: RunCli, directory: Path) -> dict[str, dict[str, Any]]:
    listed = run("--memory-dir", str(directory), "fact", "list", "--all", "--json").stdout
    return {f["slug"]: f for f in json.loads(listed)}


def test_brackets_are_kept_and_links_broken_only_where_they_would_form(
    memory_dir: Path, run: RunCli
) -> None:
    write_leaf(memory_dir, "players.md")
    index = memory_dir / "MEMORY.md"
    index.write_text(
        "- [Players](players.md) — players[pid], a list [{Type, Value}, ...], m[0][1]; "
        "see [x](https://evil.example) and [[wiki]]\n",
        encoding="utf-8",
    )
    run("adopt", str(memory_dir))
    line = next(x for x in index.read_text().splitlines() if "players.md" in x)
    assert line == (
        "- [Players](players.md) — players[pid], a list [{Type, Value}, ...], m[0][1]; "
        "see [x]\\(https://evil.example) and [\\[wiki]]"
    )
    run("check", "--dir", str(memory_dir))


def test_a_title_keeps_its_brackets_and_its_link(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "arr.md")
    (memory_dir / "MEMORY.md").write_text("- [arr[i]](arr.md) — `a[i]`\n", encoding="utf-8")
    run("adopt", str(memory_dir))
    assert "- [arr\\[i\\]](arr.md) — `a[i]`\n" in (memory_dir / "MEMORY.md").read_text()
    assert _facts(run, memory_dir)["arr"]["title"] == "arr[i]"
    run("generate")  # read back and written again: the same bytes
    assert "- [arr\\[i\\]](arr.md) — `a[i]`\n" in (memory_dir / "MEMORY.md").read_text()


def test_a_prose_line_added_to_the_index_is_kept_in_a_leaf(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "alpha.md")
    write_leaf(memory_dir, "beta.md")
    run("generate")
    index = memory_dir / "MEMORY.md"
    lines = index.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "beta.md" in line)
    lines.insert(at, "Remember: players[pid] is the key.\n")
    index.write_text("".join(lines))
    result = json.loads(run("generate", "--json").stdout)
    assert result["materialized"] == ["remember_players_pid_is_the_key.md"]
    leaf = (memory_dir / "remember_players_pid_is_the_key.md").read_text()
    assert "\nRemember: players[pid] is the key.\n" in leaf
    order = [
        slug for slug, _ in sorted(_facts(run, memory_dir).items(), key=lambda i: i[1]["position"])
    ]
    assert order == ["alpha", "remember_players_pid_is_the_key", "beta"]


def test_an_edit_in_the_cold_tier_is_reported_and_a_copy_kept(
    memory_dir: Path, run: RunCli
) -> None:
    for name in ("alpha", "beta"):
        write_leaf(memory_dir, f"{name}.md")
        run("fact", "upsert", "--leaf", f"{name}.md", "--hook", f"hook {name}")
    run("fact", "archive", "--leaf", "beta.md", "--reason", "done")
    run("generate")
    archive = memory_dir / "MEMORY_archive.md"
    edited = archive.read_text().replace("hook beta", "hook beta, edited by hand")
    archive.write_text(edited)
    result = run("generate", "--json")
    data = json.loads(result.stdout)
    assert [item["line"] for item in data["unplaced"]] and data["kept"]
    kept = Path(data["kept"][0])
    assert kept.name == "MEMORY_archive.md.unplaced" and kept.read_text() == edited
    assert "edits a line of the cold tier" in result.stderr
    run("check")


def test_a_link_to_a_note_in_a_subfolder_is_its_fact(memory_dir: Path, run: RunCli) -> None:
    (memory_dir / "notes").mkdir()
    (memory_dir / "notes" / "design.md").write_text("# Design\n\nThe design.\n")
    (memory_dir / "MEMORY.md").write_text("- [Design](notes/design.md) — how it is built\n")
    result = json.loads(run("adopt", str(memory_dir), "--json").stdout)
    assert result["loose"] == [] and result["materialized"] == []
    assert "notes/design" in result["registered"]
    assert (
        "- [Design](notes/design.md) — how it is built\n" in (memory_dir / "MEMORY.md").read_text()
    )
    assert json.loads(run("doctor", "--json", expect=None).stdout)  # doctor runs
    run("rebuild", "--yes")
    assert _facts(run, memory_dir)["notes/design"]["hook"] == "how it is built"
    (memory_dir / "notes" / "design.md").unlink()
    assert json.loads(run("generate", "--json").stdout)["missing"] == ["notes/design"]


def test_a_note_in_a_subfolder_survives_a_generate_on_a_new_database(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # A clone on a new machine (or a lost database) runs generate, not rebuild: the note
    # the sidecar names was left out of MEMORY.md and then out of the sidecar too, so
    # its hook (the user's line) was gone even for a later `rebuild`.
    (memory_dir / "notes").mkdir()
    (memory_dir / "notes" / "design.md").write_text("# Design\n\nThe design.\n")
    (memory_dir / "MEMORY.md").write_text("- [Design](notes/design.md) — how it is built\n")
    run("adopt", str(memory_dir))
    index = (memory_dir / "MEMORY.md").read_text()
    fresh = ("--db", str(tmp_path / "new-machine.sqlite"))
    result = json.loads(run(*fresh, "generate", "--json").stdout)
    assert "notes/design" in result["included"]
    assert (memory_dir / "MEMORY.md").read_text() == index
    listed = json.loads(run(*fresh, "fact", "list", "--all", "--json").stdout)
    assert [(f["slug"], f["hook"]) for f in listed] == [("notes/design", "how it is built")]
    assert "notes/design" in (memory_dir / ".subrosa" / "facts.jsonl").read_text()


def test_forget_delete_leaf_deletes_a_note_in_a_subfolder_as_it_says(
    memory_dir: Path, run: RunCli
) -> None:
    # It said "deleted notes/design.md" (`leaf_deleted: true`) and left the note there.
    (memory_dir / "notes").mkdir()
    note = memory_dir / "notes" / "design.md"
    note.write_text("# Design\n\nThe design.\n")
    (memory_dir / "MEMORY.md").write_text("- [Design](notes/design.md) — how it is built\n")
    run("adopt", str(memory_dir))
    forgotten = json.loads(
        run("fact", "forget", "notes/design", "--delete-leaf", "--yes", "--json").stdout
    )
    assert forgotten["leaf_deleted"] is True and not note.exists()
    assert "notes/design" not in _facts(run, memory_dir)


def test_a_note_outside_or_hidden_is_not_read(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    (tmp_path / "outside.md").write_text("secret\n")
    (memory_dir / "sub").mkdir()
    (memory_dir / "sub" / "link.md").symlink_to(tmp_path / "outside.md")
    (memory_dir / ".hidden").mkdir()
    (memory_dir / ".hidden" / "x.md").write_text("hidden\n")
    (memory_dir / "MEMORY.md").write_text(
        "- [Out](sub/link.md) — a symlink out\n- [Hid](.hidden/x.md) — hidden\n"
    )
    result = json.loads(run("adopt", str(memory_dir), "--materialize", "--json").stdout)
    assert sorted(result["materialized"]) == ["hid.md", "out.md"]
    assert "secret" not in (memory_dir / "out.md").read_text().split("---", 2)[2].replace(
        "a symlink out", ""
    )


def test_the_dedicated_line_gives_the_hook_and_a_type_needs_a_marker(
    memory_dir: Path, run: RunCli
) -> None:
    write_leaf(memory_dir, "setup.md")
    write_leaf(memory_dir, "release.md")
    (memory_dir / "MEMORY.md").write_text(
        "- [Setup](setup.md) — install with uv; see [Release](release.md)\n"
        "- [Release](release.md) — every second Tuesday\n"
        "- User prefers pnpm\n"
        "- Project: ship v2 by March\n"
    )
    run("adopt", str(memory_dir), "--materialize")
    facts = _facts(run, memory_dir)
    assert facts["release"]["hook"] == "every second Tuesday"
    assert facts["setup"]["hook"] == "install with uv; see [Release]\\(release.md)"
    assert facts["user_prefers_pnpm"]["type"] == "reference"
    assert facts["user_prefers_pnpm"]["title"] == "User prefers pnpm"
    assert facts["project_ship_v2_by_march"]["type"] == "project"
    assert facts["project_ship_v2_by_march"]["title"].startswith("Project: ship")


def test_adopt_ranks_made_leaves_by_their_place_after_real_ones(
    memory_dir: Path, run: RunCli
) -> None:
    write_leaf(memory_dir, "real.md", fact_type="reference", body="x" * 2500)
    os.utime(memory_dir / "real.md", (1_000_000_000, 1_000_000_000))
    lines = [f"- loose line {n:02d} " + "words " * 20 for n in range(30)]
    lines.insert(15, "- [Real](real.md) — the real leaf, in the middle")
    (memory_dir / "MEMORY.md").write_text("\n".join(lines) + "\n")
    result = json.loads(run("adopt", str(memory_dir), "--materialize", "--json").stdout)
    assert len(result["materialized"]) == 30
    small = json.loads(run("generate", "--budget", "1500", "--json").stdout)
    assert "real" in small["included"]
    below = small["below_budget"]
    assert below == sorted(below)  # the later a line was, the lower it ranks
    assert all(slug.startswith("loose_line") for slug in below)


def test_dry_run_says_what_the_real_run_does(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "alpha.md")
    (memory_dir / "MEMORY.md").write_text(
        "Some prose first.\n\n- [Alpha](alpha.md) — a\n- [Gone](gone.md) — b\n- no link\n"
    )
    refused = run("adopt", str(memory_dir), expect=1)
    assert run("adopt", str(memory_dir), "--dry-run", expect=1).stderr == refused.stderr
    would = json.loads(run("adopt", str(memory_dir), "--materialize", "--dry-run", "--json").stdout)
    did = json.loads(run("adopt", str(memory_dir), "--materialize", "--json").stdout)
    for key in would:
        if key not in ("written", "warnings"):
            assert would[key] == did[key], key
    assert would["written"] is False and did["written"] is True


def test_invalid_leaves_are_refused_by_upsert_and_skipped_by_generate(
    memory_dir: Path, run: RunCli
) -> None:
    (memory_dir / "dated.md").write_text("---\n2026-01-05: shipped v2\n---\nbody\n")
    (memory_dir / "zero.md").write_text("---\n0:\ndescription: d\n---\nbody\n")
    (memory_dir / "listy.md").write_text("---\n- a\n---\nbody\n")
    write_leaf(memory_dir, "fine.md")
    for name in ("dated.md", "zero.md", "listy.md"):
        refused = run("fact", "upsert", "--leaf", name, "--hook", "h", expect=2)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"Error: invalid leaf: {memory_dir / name}: "
        )
    generated = run("generate", "--json")
    assert json.loads(generated.stdout)["included"] == ["fine"]
    assert "invalid leaf: dated.md: its frontmatter key '2026-01-05' is a date" in generated.stderr
    (memory_dir / "MEMORY.md").unlink()
    (memory_dir / "MEMORY.md").write_text("- [Fine](fine.md) — fine\n- [Zero](zero.md) — z\n")
    adopted = run("adopt", str(memory_dir), "--json")
    assert "invalid leaf: zero.md" in adopted.stderr
    assert json.loads(adopted.stdout)["unreadable"] == ["dated.md", "listy.md", "zero.md"]
    run("check")


def test_generate_says_when_nothing_changed(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "alpha.md")
    assert run("generate").stdout.startswith("wrote MEMORY.md")
    again = run("generate")
    assert again.stdout.startswith("MEMORY.md unchanged")
    assert json.loads(run("generate", "--json").stdout)["written"] is False


# ---------------------------------------------------------------- the round trip, as a property

# Text a user may write in an index: brackets, code spans, CJK, fullwidth forms,
# punctuation. (Not `<` or `&`: a tag is shown as ‹tag› by design, docs/security.md; not
# `\`, whose escapes would make "the same text" ambiguous; not `*` or `_`, which the
# reader takes as emphasis around a link.)
_CHARS = "abcdefxyzABC 0123[]()`{}.,;:!?'\"/=+@%$|中文字日本語한국어［］（）éß"
_WORD = st.text(alphabet="abcdefghxyz中文字한국", min_size=1, max_size=6)
_TEXT = st.builds(
    lambda head, rest: f"{head} {rest}".strip(),
    _WORD,
    st.text(alphabet=_CHARS, max_size=40),
)


@st.composite
def _index(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    """A hand-kept MEMORY.md (blocks apart by blank lines) and the files it links."""
    files: dict[str, str] = {}
    blocks: list[str] = []
    for n in range(draw(st.integers(min_value=1, max_value=7))):
        kind = draw(st.sampled_from(["leaf", "note", "missing", "bare", "prose", "section"]))
        title = draw(_WORD) + draw(st.text(alphabet=_CHARS, max_size=12)).rstrip()
        hook = draw(_TEXT)
        wrapped = [f"  {line}" for line in draw(st.lists(_TEXT, max_size=2))]
        if kind == "leaf":
            files[f"leaf_{n}.md"] = (
                f"---\nname: leaf-{n}\ndescription: d\nmetadata:\n  type: project\n---\n\nBody.\n"
            )
            blocks.append("\n".join([f"- [{title}](leaf_{n}.md) — {hook}", *wrapped]))
        elif kind == "note":
            files[f"notes/n_{n}.md"] = f"# Note {n}\n\nA note.\n"
            blocks.append("\n".join([f"- [{title}](notes/n_{n}.md) — {hook}", *wrapped]))
        elif kind == "missing":
            blocks.append("\n".join([f"- [{title}](gone_{n}.md) — {hook}", *wrapped]))
        elif kind == "bare":
            blocks.append("\n".join([f"- {hook}", *wrapped]))
        elif kind == "prose":
            blocks.append("\n".join(draw(st.lists(_TEXT, min_size=1, max_size=3))))
        else:
            blocks.append(f"## {draw(_WORD)} {draw(_WORD)}")
    return "# Memory\n\n" + "\n\n".join(blocks) + "\n", files


_ROUND_TRIPS = itertools.count()


@given(index=_index())
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_adopt_and_generate_keep_every_character_and_the_order(
    tmp_path: Path, memory_dir: Path, run: RunCli, index: tuple[str, dict[str, str]]
) -> None:
    text, files = index
    source = tmp_path / "sources" / f"dir{next(_ROUND_TRIPS)}"
    for rel, content in {"MEMORY.md": text, **files}.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(content, encoding="utf-8")
    result = fidelity.run_dir(InProcess(run), source, tmp_path / "runs")
    assert result.changed == [] and result.lost == [] and result.prose_lost == [], text
    assert result.order_ok and result.sections_ok and result.check_ok, (result.notes, text)


def test_a_line_added_that_mentions_listed_facts_leaves_their_hooks(
    memory_dir: Path, run: RunCli
) -> None:
    for name in ("alpha", "beta"):
        write_leaf(memory_dir, f"{name}.md")
        run("fact", "upsert", "--leaf", f"{name}.md", "--hook", f"hook {name}")
    run("generate")
    index = memory_dir / "MEMORY.md"
    index.write_text(index.read_text() + "- Compare [Alpha](alpha.md) with [Beta](beta.md)\n")
    result = json.loads(run("generate", "--json").stdout)
    assert result["hooks_taken"] == []
    assert result["materialized"] == ["compare_alpha_with_beta.md"]
    facts = _facts(run, memory_dir)
    assert (facts["alpha"]["hook"], facts["beta"]["hook"]) == ("hook alpha", "hook beta")
    assert (
        "- Compare [Alpha](alpha.md) with [Beta](beta.md)\n"
        in (memory_dir / "compare_alpha_with_beta.md").read_text()
    )


def test_a_note_in_a_subfolder_is_pinned_and_archived_by_its_path(
    memory_dir: Path, run: RunCli
) -> None:
    (memory_dir / "notes").mkdir()
    (memory_dir / "notes" / "design.md").write_text("# Design\n\nThe design.\n")
    (memory_dir / "MEMORY.md").write_text("- [Design](notes/design.md) — how it is built\n")
    run("adopt", str(memory_dir))
    run("fact", "pin", "--leaf", "notes/design.md")
    assert _facts(run, memory_dir)["notes/design"]["pinned"] is True
    run("fact", "archive", "--leaf", "notes/design.md", "--reason", "done")
    assert _facts(run, memory_dir)["notes/design"]["status"] == "archived"
    refused = run("fact", "upsert", "--leaf", "notes/design.md", "--hook", "h", expect=2)
    assert "registered through the MEMORY.md line" in refused.stderr
    run("generate")
    run("check")


def test_a_heading_renamed_in_the_index_is_reported_and_a_copy_kept(
    memory_dir: Path, run: RunCli
) -> None:
    # A heading a person renamed or added in MEMORY.md is no item to take over; it was
    # dropped by the rewrite without a word. Now it is reported and the file kept.
    for name in ("alpha", "beta"):
        write_leaf(memory_dir, f"{name}.md")
        run("fact", "upsert", "--leaf", f"{name}.md", "--hook", f"hook {name}")
    run("fact", "move", "beta", "--section", "Work")
    run("generate")
    index = memory_dir / "MEMORY.md"
    edited = index.read_text().replace("## Work", "## Current work")
    index.write_text(edited)
    result = run("generate", "--json")
    data = json.loads(result.stdout)
    assert [item["text"] for item in data["unplaced"]] == ["## Current work"]
    kept = Path(data["kept"][0])
    assert kept.name == "MEMORY.md.unplaced" and kept.read_text() == edited
    assert "--section" in result.stderr
    run("check")
    assert json.loads(run("generate", "--json").stdout)["unplaced"] == []
    # A heading over a line that is taken over gives its new fact the section: used.
    index.write_text(index.read_text() + "\n## Added\n- [New](new_note.md) — a new one\n")
    data = json.loads(run("generate", "--json").stdout)
    assert data["unplaced"] == [] and data["materialized"] == ["new_note.md"]
    assert json.loads(run("fact", "show", "new_note", "--json").stdout)["section"] == "Added"


def test_a_link_in_a_code_span_is_text_not_a_file_to_take_over(
    memory_dir: Path, run: RunCli
) -> None:
    # A hook about markdown (`[text](file.md)` in backticks) links nothing: it made a
    # leaf `file.md` holding the whole line, a second fact with the same hook.
    write_leaf(memory_dir, "docs_links.md")
    run("generate")
    index = memory_dir / "MEMORY.md"
    line = "- [Docs links](docs_links.md) — write `[text](file.md)`, relative, and ``a`[b](c.md)``"
    index.write_text(
        index.read_text().replace("- [Docs Links](docs_links.md) — A fact worth keeping.", line)
    )
    data = json.loads(run("generate", "--json").stdout)
    assert data["materialized"] == [] and data["hooks_taken"] == ["docs_links"]
    assert sorted(p.name for p in memory_dir.glob("*.md")) == [
        "MEMORY.md",
        "MEMORY_archive.md",
        "docs_links.md",
    ]
    hook = json.loads(run("fact", "show", "docs_links", "--json").stdout)["hook"]
    assert hook.startswith("write `[text]\\(file.md)`, relative")


def test_a_frontmatter_key_given_twice_is_reported_not_rewritten(
    memory_dir: Path, run: RunCli
) -> None:
    # YAML keeps the last of two `description:` lines: the first vanished unsaid.
    leaves = {
        "plain.md": "---\nname: plain\ndescription: First said.\nmetadata:\n  type: project\n"
        "description: Second said.\n---\n\nBody.\n",
        "quoted.md": '---\nname: quoted\ndescription: "a: b"\nmetadata:\n  type: project\n'
        "  type: feedback\n---\n\nBody.\n",
        "block.md": "---\nname: block\ndescription: >-\n  Folded.\nnotes: |\n  a: 1\n  a: 2\n"
        "other:\n  type: x\nmetadata:\n  type: user\n---\n\nBody.\n",
        "broken.md": "---\ndescription: set weight: 1 first\ndescription: second\n"
        "metadata:\n  type: project\n---\n\nBody.\n",
    }
    for name, text in leaves.items():
        (memory_dir / name).write_text(text)
    before = {p.name: p.read_bytes() for p in memory_dir.iterdir()}
    result = run("generate", "--json")
    warnings = json.loads(result.stdout)["warnings"]
    twice = {Path(w.split(": ", 1)[0]).name: w.split(": ", 1)[1] for w in warnings if "twice" in w}
    said = "twice in its frontmatter; the {} is used (delete the one you do not mean)"
    assert twice == {
        "plain.md": "gives description: " + said.format("last"),
        "quoted.md": "gives type: under metadata: " + said.format("last"),
        "broken.md": "gives description: " + said.format("first"),
    }
    assert "plain.md: gives description: twice" in result.stderr
    facts = _facts(run, memory_dir)
    assert facts["plain"]["description"] == "Second said."
    assert facts["quoted"]["type"] == "feedback"
    assert facts["broken"]["description"] == "set weight: 1 first"
    assert {n: (memory_dir / n).read_bytes() for n in leaves} == before
    doctor = json.loads(run("doctor", "--json", expect=None).stdout)
    check = {c["name"]: c for c in doctor["checks"]}["leaf frontmatter"]
    assert check["ok"] is False and check["severity"] == "warning"
    assert "3 leaf file(s)" in check["detail"] and "plain.md: description" in check["detail"]


def test_a_line_deleted_or_moved_by_hand_comes_back_and_is_reported(
    memory_dir: Path, run: RunCli
) -> None:
    # MEMORY.md is generated (document 002): a hand edit that only deletes or reorders
    # lines is undone by the next generate. It was undone without a word.
    for name in ("alpha", "beta", "gamma", "delta"):
        write_leaf(memory_dir, f"{name}.md", f"The {name} fact.")
    run("generate")
    index = memory_dir / "MEMORY.md"
    generated = index.read_text()
    lines = generated.splitlines(keepends=True)
    alpha, beta, gamma, delta = (
        next(i for i, line in enumerate(lines) if f"({name}.md)" in line)
        for name in ("alpha", "beta", "gamma", "delta")
    )
    order = [lines[i] for i in (alpha, beta, gamma, delta)]
    edited = [line for line in lines if line not in order]
    edited += [order[0], order[2], order[1]]  # beta after gamma, delta deleted
    index.write_text("".join(edited))
    dry = json.loads(run("generate", "--dry-run", "--json").stdout)
    result = run("generate", "--json")
    data = json.loads(result.stdout)
    assert dry["restored"] == data["restored"] == [{"file": "MEMORY.md", "slug": "delta"}]
    # Two lines swapped: either one moved, both are back in their place.
    swapped = [{"file": "MEMORY.md", "slug": "gamma"}, {"file": "MEMORY.md", "slug": "beta"}]
    assert dry["reordered"] == data["reordered"] == swapped
    assert index.read_text() == generated
    assert "deleted by hand" in result.stderr and "subrosa fact archive delta" in result.stderr
    assert "moved by hand" in result.stderr and "subrosa fact move gamma" in result.stderr
    # Nothing to say when nothing was edited, nor for a fact whose leaf is gone with its
    # line; a line moved (and edited) far up is the one line that moved.
    again = json.loads(run("generate", "--json").stdout)
    assert again["restored"] == again["reordered"] == []
    lines = generated.splitlines(keepends=True)
    moved = lines.pop(delta).replace("The delta fact.", "The delta fact, edited.")
    lines.insert(alpha, moved)
    lines = [line for line in lines if "(gamma.md)" not in line]
    index.write_text("".join(lines))
    (memory_dir / "gamma.md").unlink()
    data = json.loads(run("generate", "--json").stdout)
    assert data["hooks_taken"] == ["delta"] and data["missing"] == ["gamma"]
    assert data["restored"] == []
    assert data["reordered"] == [{"file": "MEMORY.md", "slug": "delta"}]


def test_a_leaf_named_with_a_spelling_joiner_is_registered(memory_dir: Path, run: RunCli) -> None:
    # A Persian file name needs its ZWNJ (`کتاب‌ها`): generate registered the leaf,
    # `fact upsert --leaf` refused it as holding an invisible character.
    name = "کتاب\u200cها.md"
    write_leaf(memory_dir, name, "کتاب\u200cها را بخوان.", name="books")
    said = "کتاب\u200cها را بخوان."
    added = json.loads(run("fact", "upsert", "--leaf", name, "--hook", said, "--json").stdout)
    assert added["fact"]["slug"] == "کتاب\u200cها"
    assert added["fact"]["description"] == "کتاب\u200cها را بخوان."
    run("generate")
    assert "(کتاب%E2%80%8Cها.md) — کتاب\u200cها را بخوان." in (memory_dir / "MEMORY.md").read_text()
    assert json.loads(run("check", "--json").stdout)["ok"] is True


def test_a_line_deleted_from_the_cold_tier_comes_back_and_is_reported(
    memory_dir: Path, run: RunCli
) -> None:
    write_leaf(memory_dir, "kept.md")
    write_leaf(memory_dir, "old.md")
    run("generate")
    run("fact", "archive", "old", "--reason", "done")
    run("generate")
    archive = memory_dir / "MEMORY_archive.md"
    generated = archive.read_text()
    archive.write_text("".join(x for x in generated.splitlines(True) if "(old.md)" not in x))
    result = run("generate", "--json")
    assert json.loads(result.stdout)["restored"] == [{"file": "MEMORY_archive.md", "slug": "old"}]
    assert "subrosa fact forget old" in result.stderr and archive.read_text() == generated
