"""`subrosa adopt` and `subrosa rebuild` as a user runs them: the adopt issue's must-show list."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from subrosa.memory.indexfile import parse_index
from tests.conftest import CORPUS, FIXTURES, Db, RunCli, write_leaf

pytestmark = pytest.mark.engines

# Vendored dirs always; the shared corpus' real dirs when it is beside the checkout.
CORPUS_DIRS = sorted((FIXTURES / "memory").iterdir()) + (
    sorted((CORPUS / "memory").iterdir()) if (CORPUS / "memory").is_dir() else []
)
# An index whose lines mostly have no leaf: (dir, a missing file, a materialized leaf
# and a phrase of its line).
INDEX_ONLY = [
    (
        FIXTURES / "memory" / "index-only",
        "no-slack-bots.md",
        "project-release-cadence.md",
        "every second Tuesday",
    ),
    (
        CORPUS / "memory" / "56phil__huffmanwrites",
        "no-twitter-x.md",
        "project-summaries-growth.md",
        "priority growth area",
    ),
]


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "lock" not in p.name
    }


def _everything(directory: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(directory.glob("*.md"))
    )


def _words(text: str) -> list[str]:
    """Text as words, ignoring the brackets and markup sanitizing may change."""
    for ch in "[]()`*_":
        text = text.replace(ch, " ")
    return text.split()


def _copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def _adopt(run: RunCli, directory: Path, *args: str, expect: int = 0) -> dict[str, Any]:
    return json.loads(run("adopt", str(directory), "--json", *args, expect=expect).stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("source", CORPUS_DIRS, ids=lambda p: p.name)
def test_every_corpus_dir_is_adopted_without_losing_text(
    source: Path, tmp_path: Path, memory_dir: Path, run: RunCli
) -> None:
    directory = _copy(source, tmp_path)
    old_index = (directory / "MEMORY.md").read_text(encoding="utf-8")
    leaves_before = sorted(p.name for p in directory.glob("*.md") if p.name != "MEMORY.md")
    result = _adopt(run, directory, "--materialize")
    registered = set(result["registered"])
    assert {Path(name).stem for name in leaves_before} <= registered
    run("--memory-dir", str(directory), "generate")
    run("check", "--dir", str(directory))
    assert (directory / "MEMORY.md.pre-subrosa").read_text(encoding="utf-8") == old_index
    after = _words(_everything(directory))
    for line in parse_index(old_index):
        for piece in (line.hook, line.title or ""):
            words = _words(piece)
            assert all(word in after for word in words), piece
    for name in leaves_before:
        assert (source / name).read_bytes() == (directory / name).read_bytes()


@pytest.mark.parametrize(
    ("source", "missing", "materialized", "phrase"), INDEX_ONLY, ids=lambda v: str(v)[-30:]
)
def test_lines_without_a_leaf_stop_adopt_unless_materialized(
    tmp_path: Path,
    memory_dir: Path,
    run: RunCli,
    source: Path,
    missing: str,
    materialized: str,
    phrase: str,
) -> None:
    if not source.is_dir():
        pytest.skip(f"needs the shared corpus at {source} (not part of a clone)")
    directory = _copy(source, tmp_path)
    before = _snapshot(directory)
    result = run("adopt", str(directory), expect=1)
    assert "--materialize" in result.stderr and missing in result.stderr
    assert _snapshot(directory) == before
    # A dry run says what the real run (same flags) would do, and exits as it would.
    dry = run("adopt", str(directory), "--dry-run", expect=1)
    assert dry.stderr == result.stderr and dry.stdout == result.stdout
    assert _snapshot(directory) == before
    would = _adopt(run, directory, "--materialize", "--dry-run")
    assert len(would["materialized"]) == 4 and would["written"] is False
    assert _snapshot(directory) == before
    done = _adopt(run, directory, "--materialize")
    assert len(done["materialized"]) == 4 and done["written"] is True
    for key in ("included", "below_budget", "registered", "materialized", "backups", "bytes"):
        assert would[key] == done[key], key
    leaf = (directory / materialized).read_text(encoding="utf-8")
    assert "type: project" in leaf and phrase in leaf


MESSY_INDEX = """\
# My memory

Some prose about how this index works, before the list.

- [Prefers tabs](user_tabs.md) — The user wants tabs, not spaces
- [feedback_no_force_push.md](feedback_no_force_push.md); never force-push to main
* [Deploy box](reference_deploy.md) - ssh deploy@10.0.0.5, runbook in the wiki
- [Broken front](broken_front.md): 한국어 훅도 그대로 남는다
- [No frontmatter](no_frontmatter.md)

## Laws
- [Long hook](long_hook.md) — {long}
- A fact written straight into the index, with no file at all
"""


def _messy(directory: Path) -> None:
    directory.mkdir()
    write_leaf(directory, "user_tabs.md", "Tabs.", fact_type="user")
    write_leaf(directory, "feedback_no_force_push.md", "No force push.", fact_type="feedback")
    write_leaf(directory, "reference_deploy.md", "Deploy box.", fact_type="reference")
    write_leaf(directory, "long_hook.md", "A long one.")
    write_leaf(directory, "unlinked_leaf.md", "Nobody linked me, but I matter.")
    write_leaf(directory, "shipped_thing.md", "Shipped in June.")
    (directory / "broken_front.md").write_text(
        '---\nname: "quoted" words\ndescription: x\n---\n\n# Broken Front\n\nBody.\n'
    )
    (directory / "no_frontmatter.md").write_text("Just a note with no header.\n\nMore.\n")
    (directory / "MEMORY.md").write_text(MESSY_INDEX.format(long="word " * 80), encoding="utf-8")
    (directory / "MEMORY_archive.md").write_text(
        "# Archive\n\n## Shipped\n- [Shipped thing](shipped_thing.md) — done in June\n"
    )


def test_a_messy_index_is_taken_over(tmp_path: Path, memory_dir: Path, run: RunCli) -> None:
    directory = tmp_path / "messy"
    _messy(directory)
    result = _adopt(run, directory, "--materialize")
    assert result["backups"] == [
        str(directory / "MEMORY.md.pre-subrosa"),
        str(directory / "MEMORY_archive.md.pre-subrosa"),
    ]
    listed = json.loads(
        run("--memory-dir", str(directory), "fact", "list", "--all", "--json").stdout
    )
    by_slug = {f["slug"]: f for f in listed}
    # The prose before the list is kept, in its place, in a leaf of its own (issue 17).
    prose = directory / "some_prose_about_how_this_index.md"
    assert "Some prose about how this index works, before the list." in prose.read_text()
    assert [f["slug"] for f in listed][:7] == [
        "some_prose_about_how_this_index",
        "user_tabs",
        "feedback_no_force_push",
        "reference_deploy",
        "broken_front",
        "no_frontmatter",
        "long_hook",
    ]
    assert by_slug["user_tabs"]["hook"] == "The user wants tabs, not spaces"
    assert by_slug["feedback_no_force_push"]["hook"] == "never force-push to main"
    assert by_slug["feedback_no_force_push"]["title"] != "feedback_no_force_push.md"
    assert by_slug["reference_deploy"]["hook"].startswith("ssh deploy@10.0.0.5")
    assert by_slug["broken_front"]["hook"] == "한국어 훅도 그대로 남는다"
    assert by_slug["long_hook"]["hook"] == ("word " * 80).strip()
    assert by_slug["long_hook"]["section"] == "Laws"
    assert by_slug["no_frontmatter"]["description"] == "Just a note with no header."
    assert by_slug["unlinked_leaf"]["hook"] == "Nobody linked me, but I matter."
    assert by_slug["shipped_thing"]["status"] == "archived"
    assert by_slug["shipped_thing"]["hook"] == "done in June"
    bullet = [f for f in listed if f["slug"].startswith("a_fact_written")]
    assert bullet and bullet[0]["section"] == "Laws"
    assert any("not valid YAML" in w for w in result["warnings"])
    assert (directory / "no_frontmatter.md").read_text() == "Just a note with no header.\n\nMore.\n"
    run("check", "--dir", str(directory))
    index = (directory / "MEMORY.md").read_text()
    assert "## Laws" in index and "한국어 훅도 그대로 남는다" in index

    before = _snapshot(directory)
    again = _adopt(run, directory, "--materialize")
    assert again["adopted"] == [] and again["materialized"] == [] and again["hooks_taken"] == []
    assert _snapshot(directory) == before
    assert (
        json.loads(run("--memory-dir", str(directory), "fact", "list", "--all", "--json").stdout)
        == listed
    )


def test_fix_frontmatter_rewrites_broken_leaves(
    tmp_path: Path, memory_dir: Path, run: RunCli
) -> None:
    directory = tmp_path / "messy"
    _messy(directory)
    original = (directory / "broken_front.md").read_bytes()
    result = _adopt(run, directory, "--materialize", "--fix-frontmatter")
    assert sorted(result["fixed_frontmatter"]) == ["broken_front.md", "no_frontmatter.md"]
    # The name YAML could not read is the user's, quoted: only the broken line changes.
    assert (directory / "broken_front.md").read_text() == (
        "---\nname: '\"quoted\" words'\ndescription: x\nmetadata:\n  type: reference\n---\n"
        "\n# Broken Front\n\nBody.\n"
    )
    assert (
        directory / ".subrosa" / "frontmatter-backup" / "broken_front.md"
    ).read_bytes() == original
    run("--memory-dir", str(directory), "fact", "upsert", "--leaf", "broken_front.md")


def test_fix_frontmatter_sweeps_what_a_killed_adopt_left_in_its_backups(
    tmp_path: Path, memory_dir: Path, run: RunCli
) -> None:
    """A kill while an original was being kept leaves a temp file in the backup folder
    (tests/test_crash.py): the next `--fix-frontmatter` removes it once it is older than
    a running writer's could be, and leaves a fresh one alone."""
    directory = tmp_path / "messy"
    _messy(directory)
    keep = directory / ".subrosa" / "frontmatter-backup"
    keep.mkdir(parents=True)
    stale, fresh = keep / ".broken_front.md.0123456789ab.tmp", keep / ".x.md.ba9876543210.tmp"
    stale.write_bytes(b"half an orig")
    fresh.write_bytes(b"being written")
    os.utime(stale, (stale.stat().st_atime - 3600, stale.stat().st_mtime - 3600))
    _adopt(run, directory, "--materialize", "--fix-frontmatter")
    assert not stale.exists() and fresh.exists()
    assert (keep / "broken_front.md").is_file()


def _by_slug(run: RunCli) -> dict[str, dict[str, Any]]:
    listed = json.loads(run("fact", "list", "--all", "--json").stdout)
    return {f["slug"]: f for f in listed}


def test_a_leaf_unreadable_for_a_while_keeps_its_hook_pin_and_status(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path
) -> None:
    # A leaf saved once in Latin-1 (or grown past 1 MiB) cannot be registered; a rebuild,
    # or a generate on a new database (a clone), rewrote the sidecar without its line, so
    # what only subrosa knew of it (hook, pin, archived) was gone once the leaf was mended.
    for name in ("kept", "other"):
        write_leaf(memory_dir, f"{name}.md", f"The {name} fact.")
    run("generate")
    run("fact", "upsert", "kept", "--hook", "the hook I wrote", "--pin")
    run("fact", "archive", "other", "--reason", "done with it")
    before = _by_slug(run)
    good = {name: (memory_dir / f"{name}.md").read_bytes() for name in ("kept", "other")}
    for name in good:
        (memory_dir / f"{name}.md").write_bytes(good[name] + b"caf\xe9\n")
    run("rebuild", "--yes")
    run("--db", str(tmp_path / "clone.sqlite"), "generate")
    for name in good:
        (memory_dir / f"{name}.md").write_bytes(good[name])
    run("rebuild", "--yes")
    after = _by_slug(run)
    for slug in good:
        for key in ("hook", "pinned", "status", "archive_reason", "archived_at", "position"):
            assert after[slug][key] == before[slug][key], (slug, key)


def test_rebuild_recovers_everything_but_hits(memory_dir: Path, db: Db, run: RunCli) -> None:
    for name, kind in (
        ("alpha", "user"),
        ("beta", "feedback"),
        ("gamma", "project"),
        ("delta", "reference"),
    ):
        write_leaf(memory_dir, f"{name}.md", f"The {name} fact.", fact_type=kind)
        run("fact", "upsert", "--leaf", f"{name}.md", "--hook", f"hook of {name} ✓")
    run("fact", "pin", "--leaf", "gamma.md")
    run("fact", "archive", "--leaf", "beta.md", "--reason", "superseded by gamma")
    run("fact", "move", "delta", "--before", "alpha")
    run("fact", "move", "alpha", "--section", "Laws")
    write_leaf(memory_dir, "epsilon.md", "Dropped in by hand.")
    run("generate")
    before = json.loads(run("fact", "list", "--all", "--json").stdout)
    assert any(f["section"] == "Laws" for f in before)

    db.reset()
    result = json.loads(run("rebuild", "--yes", "--json").stdout)
    assert result["archived"] == 1 and result["pinned"] == 1
    after = json.loads(run("fact", "list", "--all", "--json").stdout)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "hits"} for r in rows]  # noqa: E731
    assert strip(after) == strip(before)
    files = [memory_dir / "MEMORY.md", memory_dir / "MEMORY_archive.md"]
    generated = [p.read_bytes() for p in files]
    run("generate")
    assert [p.read_bytes() for p in files] == generated


def test_rebuild_asks_first(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "alpha.md")
    run("generate")
    run("rebuild", expect=1, input="n\n")
    assert len(json.loads(run("fact", "list", "--json").stdout)) == 1


def _on(directory: Path, db: str) -> list[str]:
    return ["--memory-dir", str(directory), "--db", db]


def _pull(source: Path, target: Path) -> None:
    """What `git pull` does to a memory dir: every tracked file replaced (the lock is ignored)."""
    for path in source.rglob("*"):
        if path.is_file() and path.name != "lock":
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)


def test_two_machines_share_one_memory_through_git(tmp_path: Path, db: Db, run: RunCli) -> None:
    laptop, desktop = tmp_path / "laptop" / "memory", tmp_path / "desktop" / "memory"
    laptop.mkdir(parents=True)
    one, two = _on(laptop, db.other("laptop")), _on(desktop, db.other("desktop"))
    for name in ("alpha", "beta", "gamma"):
        write_leaf(laptop, f"{name}.md", f"The {name} fact.")
        run(*one, "fact", "upsert", "--leaf", f"{name}.md", "--hook", f"hook {name}")
    run(*one, "fact", "move", "gamma", "--before", "alpha")
    run(*one, "generate")
    _pull(laptop, desktop)  # a fresh clone on the other machine, with its own database
    assert json.loads(run(*two, "generate", "--json").stdout)["hooks_taken"] == []
    listing = ["fact", "list", "--all", "--json"]
    mine = json.loads(run(*one, *listing).stdout)
    theirs = json.loads(run(*two, *listing).stdout)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "path"} for r in rows]  # noqa: E731
    assert strip(mine) == strip(theirs)

    run(*one, "fact", "pin", "--leaf", "beta.md")
    run(*one, "fact", "upsert", "--leaf", "alpha.md", "--hook", "a better hook")
    run(*one, "fact", "archive", "--leaf", "gamma.md", "--reason", "done")
    run(*one, "generate")
    _pull(laptop, desktop)
    synced = json.loads(run(*two, "generate", "--json").stdout)["synced"]
    assert synced == ["alpha", "beta", "gamma"]
    assert strip(json.loads(run(*two, *listing).stdout)) == strip(
        json.loads(run(*one, *listing).stdout)
    )
    for name in ("MEMORY.md", "MEMORY_archive.md", ".subrosa/facts.jsonl"):
        assert (laptop / name).read_bytes() == (desktop / name).read_bytes()


def test_a_clone_without_subrosa_state_recovers_from_the_index_files(
    tmp_path: Path, db: Db, run: RunCli
) -> None:
    laptop, desktop = tmp_path / "laptop" / "memory", tmp_path / "desktop" / "memory"
    laptop.mkdir(parents=True)
    one, two = _on(laptop, db.other("laptop")), _on(desktop, db.other("desktop"))
    for name in ("alpha", "beta", "gamma", "delta"):
        write_leaf(laptop, f"{name}.md", f"The {name} fact, described at some length here.")
        run(*one, "fact", "upsert", "--leaf", f"{name}.md", "--hook", f"hook {name} " + "x" * 60)
    run(*one, "fact", "archive", "--leaf", "gamma.md", "--reason", "superseded")
    run(*one, "generate", "--budget", "400")
    shutil.copytree(laptop, desktop, ignore=shutil.ignore_patterns(".subrosa"))
    result = json.loads(run(*two, "generate", "--budget", "400", "--json").stdout)
    assert result["materialized"] == [] and result["below_budget"]
    listing = ["fact", "list", "--all", "--json"]
    # Hooks, titles, status and reasons come back from the index files; the order of facts
    # that are not in MEMORY.md is the one thing only the sidecar knew.
    keys = ("slug", "hook", "status", "archive_reason", "title")
    pick = lambda rows: sorted(tuple(r[k] or "" for k in keys) for r in rows)  # noqa: E731
    assert pick(json.loads(run(*two, *listing).stdout)) == pick(
        json.loads(run(*one, *listing).stdout)
    )
    assert (laptop / "MEMORY.md").read_bytes() == (desktop / "MEMORY.md").read_bytes()


def test_frontmatter_yaml_cannot_read_keeps_its_description(memory_dir: Path, run: RunCli) -> None:
    # A real Claude-written leaf: an unquoted `: ` inside the description. YAML refuses
    # it; the description is still the user's words, not the body's first line.
    leaf = memory_dir / "weights.md"
    text = (
        "---\nname: weights\ndescription: set `weight: 1` in the config\n"
        "type: project\n---\nBody text.\n"
    )
    leaf.write_text(text, encoding="utf-8")
    said = run("generate")
    assert "weights.md" in said.stderr and "not valid YAML" in said.stderr
    index = (memory_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert "[Weights](weights.md) — set `weight: 1` in the config" in index, index
    listed = json.loads(run("fact", "list", "--json").stdout)
    assert [(f["slug"], f["type"]) for f in listed] == [("weights", "project")]
    assert leaf.read_text(encoding="utf-8") == text  # the file as the user wrote it


def test_an_index_that_is_not_utf8_is_refused_and_a_bom_is_no_text(
    memory_dir: Path, run: RunCli
) -> None:
    # A hand-kept MEMORY.md in Latin-1: its bytes would become U+FFFD in hooks and in the
    # leaves made from its lines. Refused like a leaf that is not UTF-8, nothing written.
    write_leaf(memory_dir, "project_a.md")
    index = memory_dir / "MEMORY.md"
    index.write_bytes("- [A](project_a.md) - café\n- a note, café\n".encode("latin-1"))
    before = _snapshot(memory_dir)
    said = run("adopt", "--materialize", expect=2)
    assert f"{index}: is not UTF-8 text (bad byte at offset 25)" in said.stderr
    assert len(said.stderr.strip().splitlines()) == 1
    assert _snapshot(memory_dir) == before
    # A byte order mark is no text of the user's: the title heading stays a title.
    index.write_bytes("\ufeff# My memory\n\n- [A](project_a.md) — café\n".encode())
    result = json.loads(run("adopt", "--json").stdout)
    assert result["materialized"] == [] and result["hooks_taken"] == ["project_a"]


def test_fix_frontmatter_keeps_the_body_byte_for_byte(memory_dir: Path, run: RunCli) -> None:
    # Only the frontmatter was asked to change: an indented code block stays one (its
    # first line keeps its indent), a CRLF file stays CRLF, the last line keeps its bytes.
    bodies = {
        "project_badyaml.md": (
            "---\nname: x\ndescription: a: b\nmetadata:\n  type: project\n---\n",
            "\n    code block first\nhard break  \nno final newline",
        ),
        "project_crlf.md": ("", "    indented code\r\nline two  \r\n"),
        "project_notype.md": (
            "---\r\nname: y\r\ndescription: fine\r\n---\r\n",
            "\r\n  body with no type  \r\n",
        ),
    }
    for name, (front, body) in bodies.items():
        (memory_dir / name).write_bytes((front + body).encode())
    result = json.loads(run("adopt", "--fix-frontmatter", "--json").stdout)
    assert sorted(result["fixed_frontmatter"]) == sorted(bodies)
    for name, (_, body) in bodies.items():
        fixed = (memory_dir / name).read_bytes().decode()
        newline = "\r\n" if "\r\n" in body else "\n"
        head, _, rest = fixed.partition(f"{newline}---{newline}")
        assert head.startswith("---") and "\n" not in head.replace(newline, "")
        assert rest.lstrip("\r\n") == body.lstrip("\r\n"), name
        run("fact", "upsert", name)


def test_fix_frontmatter_writes_the_description_and_type_the_user_wrote(
    memory_dir: Path, run: RunCli
) -> None:
    # The canonical frontmatter holds the user's words, not the index's escaped view of
    # them (`<rev>` is no `‹rev›` in a leaf, `[x](y.md)` gets no backslash), and a type
    # the user gave under a tab-indented `metadata:` is theirs, not the filename's guess.
    (memory_dir / "feedback_tabby.md").write_text(
        "---\nname: tabby\ndescription: use git show <rev>:<path>, see [x](y.md)\n"
        "metadata:\n\ttype: user\n---\nBody.\n"
    )
    (memory_dir / "project_plain.md").write_text("Run `make <target>` from [the root](r.md).\n")
    result = json.loads(run("adopt", "--fix-frontmatter", "--json").stdout)
    assert sorted(result["fixed_frontmatter"]) == ["feedback_tabby.md", "project_plain.md"]
    for name, description, kind in (
        ("feedback_tabby", "use git show <rev>:<path>, see [x](y.md)", "user"),
        ("project_plain", "Run `make <target>` from [the root](r.md).", "project"),
    ):
        run("fact", "upsert", name)  # the strict reader takes the rewritten leaf
        meta = yaml.safe_load((memory_dir / f"{name}.md").read_text().split("---")[1])
        assert meta["description"] == description
        assert meta["metadata"]["type"] == kind


def test_frontmatter_yaml_cannot_read_in_a_crlf_file_keeps_its_description(
    memory_dir: Path, run: RunCli
) -> None:
    # The same leaf as above saved with CRLF (git's autocrlf on Windows): the closing
    # `---` line ends in `\r`, which hid it, so the description was "name: weights".
    leaf = memory_dir / "weights.md"
    text = (
        "---\r\nname: weights\r\ndescription: set `weight: 1` in the config\r\n"
        "type: feedback\r\n---\r\nBody text.\r\n"
    )
    leaf.write_bytes(text.encode())
    run("generate")
    index = (memory_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert "[Weights](weights.md) — set `weight: 1` in the config" in index, index
    shown = json.loads(run("fact", "show", "weights", "--json").stdout)
    assert shown["type"] == "feedback"
    assert leaf.read_bytes() == text.encode()


def test_frontmatter_yaml_cannot_read_keeps_its_nested_type(memory_dir: Path, run: RunCli) -> None:
    # The canonical shape (`metadata:` then `  type: feedback`) with a description YAML
    # refuses: the type is the user's too, not the filename's guess ("reference").
    leaf = memory_dir / "weights.md"
    text = (
        "---\nname: weights\ndescription: set `weight: 1` in the config\n"
        "metadata:\n  type: feedback\n---\nBody text.\n"
    )
    leaf.write_text(text, encoding="utf-8")
    run("generate")
    shown = json.loads(run("fact", "show", "weights", "--json").stdout)
    assert (shown["type"], shown["description"]) == ("feedback", "set `weight: 1` in the config")
    assert leaf.read_text(encoding="utf-8") == text


def test_files_made_beside_a_private_index_are_private(
    tmp_path: Path, memory_dir: Path, run: RunCli
) -> None:
    """Text a user keeps private (`chmod 600 MEMORY.md`) is not copied into files others
    may read: the leaves, the archive, the sidecar and the records subrosa creates take
    MEMORY.md's permissions; the files it replaces keep their own."""
    directory = tmp_path / "messy"
    _messy(directory)
    (directory / "MEMORY_archive.md").unlink()
    (directory / "MEMORY.md").chmod(0o600)
    before = {p: stat.S_IMODE(p.stat().st_mode) for p in directory.rglob("*") if p.is_file()}
    old_umask = os.umask(0o022)
    try:
        _adopt(run, directory, "--materialize")
    finally:
        os.umask(old_umask)
    made = [p for p in directory.rglob("*") if p.is_file() and p not in before]
    assert {p.name for p in made} >= {"MEMORY_archive.md", "facts.jsonl", "index-rank.json"}
    assert len([p for p in made if p.parent == directory and p.suffix == ".md"]) > 2
    holding = [p for p in made if p.stat().st_size]  # the lock file holds no text
    loose = {
        str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in holding if p.stat().st_mode & 0o077
    }
    assert not loose, loose
    for path, mode in before.items():
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == mode, path


def test_a_secret_in_a_leafs_description_or_title_is_kept_and_said(
    memory_dir: Path, run: RunCli
) -> None:
    # `fact upsert` refuses a description holding a secret; generate and adopt take the
    # leaves a person wrote as they are (the leaf is theirs), and say which field shows
    # what looks like a secret in MEMORY.md and the sidecar, both meant for git.
    (memory_dir / "reference_aws.md").write_text(
        "---\nname: reference-aws\ndescription: the key is AKIAIOSFODNN7EXAMPLE\n"
        "metadata:\n  type: reference\n---\nBody.\n"
    )
    (memory_dir / "project_token.md").write_text(
        "# token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n\nA note without frontmatter.\n"
    )
    (memory_dir / "project_plain.md").write_text(
        "---\nname: project-plain\ndescription: nothing secret\n"
        "metadata:\n  type: project\n---\nBody.\n"
    )
    result = json.loads(run("generate", "--json").stdout)
    said = [w for w in result["warnings"] if "looks like a secret" in w]
    assert [w for w in said if "reference_aws.md" in w] == [
        f"{memory_dir / 'reference_aws.md'}: its description holds what looks like a secret"
        " (aws-access-key), which MEMORY.md and .subrosa/facts.jsonl (meant for git) show;"
        " move it out of the leaf"
    ]
    # (with no frontmatter, its heading is the title and its first line the description)
    assert {w.split(": its ")[1].split()[0] for w in said if "project_token.md" in w} == {
        "title",
        "description",
    }
    assert not [w for w in said if "project_plain" in w]
    assert "AKIAIOSFODNN7EXAMPLE" in (memory_dir / "MEMORY.md").read_text()  # kept as written


@pytest.mark.parametrize("command", [["generate"], ["adopt"]])
def test_a_leaf_whose_file_name_holds_a_newline_is_skipped_and_said(
    memory_dir: Path, run: RunCli, command: list[str]
) -> None:
    # `fact upsert` refuses such a name; generate and adopt registered it, and `fact
    # list`, which an agent reads, then printed lines the file name made. Now it is an
    # unreadable leaf as upsert would say: listed, linked percent-encoded, not a fact.
    name = "evil\n- [x](y.md)\n.md"
    (memory_dir / name).write_text(
        "---\nname: evil\ndescription: forged\nmetadata:\n  type: project\n---\nBody.\n"
    )
    (memory_dir / "project_fine.md").write_text(
        "---\nname: project-fine\ndescription: a fine one\nmetadata:\n  type: project\n---\nB.\n"
    )
    result = run(*command, "--json")
    assert "control or invisible characters in its file name" in result.stdout + result.stderr
    run("generate")
    listed = run("fact", "list").stdout
    assert "forged" not in listed and "a fine one" in listed
    archive = (memory_dir / "MEMORY_archive.md").read_text()
    unreadable = [line for line in archive.splitlines() if "evil" in line]
    assert unreadable == [
        "- [evil - \\[x\\]\\(y.md) .md](evil%0A-%20%5Bx%5D%28y.md%29%0A.md) — invalid leaf:"
        " has control or invisible characters in its file name; rename it"
    ]


def test_adopt_json_names_the_lines_without_a_leaf_when_it_stops(
    memory_dir: Path, run: RunCli
) -> None:
    # Refusing them, adopt --json printed nothing on stdout: the documented `loose` key
    # was only ever []. Now the refusal is one JSON document too (exit 1, nothing written).
    (memory_dir / "MEMORY.md").write_text(
        "# My memory\n- [Gone](project_gone.md) — a file that is not there\n"
        "- a bullet with no link\n"
    )
    before = (memory_dir / "MEMORY.md").read_bytes()
    result = run("adopt", "--json", expect=1)
    refused = json.loads(result.stdout)
    assert refused["refused"] is True and refused["dir"] == str(memory_dir)
    assert [(item["line"], item["target"]) for item in refused["loose"]] == [
        (2, "project_gone.md"),
        (3, None),
    ]
    assert all(set(item) == {"file", "line", "target", "text"} for item in refused["loose"])
    assert "--materialize" in result.stderr
    assert (memory_dir / "MEMORY.md").read_bytes() == before
    assert not (memory_dir / "MEMORY.md.pre-subrosa").exists()


# Leaves the strict reader refuses, each with YAML a person writes (comments, lists,
# quoted keys, block texts, anchors, keys subrosa does not know): (before, after) the
# fix. Only the lines that make the leaf unreadable change, or lines are added.
ODD_LEAVES = {
    "project_odd.md": (
        "---\n# my note\nname: odd\ndescription: set weight: 1 here\ntags: [a, b]\n"
        '"quoted key": yes\nsummary: |\n  line one\n  line two\nbase: &b x\n'
        "metadata:\n  type: project\n  owner: me\n---\n\nBody.\n",
        "---\n# my note\nname: odd\ndescription: 'set weight: 1 here'\ntags: [a, b]\n"
        '"quoted key": yes\nsummary: |\n  line one\n  line two\nbase: &b x\n'
        "metadata:\n  type: project\n  owner: me\n---\n\nBody.\n",
    ),
    "feedback_notype.md": (
        '---\nname: feedback-notype\ndescription: "Quoted, with a # hash"   # said so\n'
        "aliases:\n  - one\n  - 'two'\nfolded: >\n  folded\n  text\n"
        "anchor: &a {k: v}\n---\nBody\n",
        '---\nname: feedback-notype\ndescription: "Quoted, with a # hash"   # said so\n'
        "aliases:\n  - one\n  - 'two'\nfolded: >\n  folded\n  text\n"
        "anchor: &a {k: v}\nmetadata:\n  type: feedback\n---\nBody\n",
    ),
    "reference_nodesc.md": (
        "---\r\nname: reference-nodesc  # mine\r\nmetadata:\r\n  source: wiki\r\n"
        "  'type': reference\r\n---\r\nFirst line of body.\r\n",
        "---\r\nname: reference-nodesc  # mine\r\ndescription: First line of body.\r\n"
        "metadata:\r\n  source: wiki\r\n  'type': reference\r\n---\r\nFirst line of body.\r\n",
    ),
    "project_metanotype.md": (
        "---\nname: project-metanotype\ndescription: d\nmetadata:\n    owner: me\n"
        "after: 1\n---\nB\n",
        "---\nname: project-metanotype\ndescription: d\nmetadata:\n    owner: me\n"
        "    type: project\nafter: 1\n---\nB\n",
    ),
}


ODD_LEAVES.update(
    {
        # CRLF: `metadata:\r` is the metadata the type goes under, not a second one.
        "user_crlf.md": (
            "---\r\nname: user-crlf\r\ndescription: d\r\nmetadata:\r\n  owner: me\r\n---\r\nB\r\n",
            "---\r\nname: user-crlf\r\ndescription: d\r\nmetadata:\r\n  owner: me\r\n"
            "  type: user\r\n---\r\nB\r\n",
        ),
        # A block description in a leaf YAML could not read for another line: its words
        # on one line (not the `|` a line-by-line reading sees).
        "project_block.md": (
            "---\nname: project-block\ntags: [open\ndescription: |\n  two\n  lines\n"
            "metadata:\n  type: project\n---\nB\n",
            "---\nname: project-block\ntags: '[open'\ndescription: two lines\n"
            "metadata:\n  type: project\n---\nB\n",
        ),
    }
)


def test_fix_frontmatter_keeps_every_line_it_need_not_change(memory_dir: Path, run: RunCli) -> None:
    for name, (before, _) in ODD_LEAVES.items():
        (memory_dir / name).write_bytes(before.encode())
    result = json.loads(run("adopt", "--fix-frontmatter", "--json").stdout)
    assert sorted(result["fixed_frontmatter"]) == sorted(ODD_LEAVES)
    for name, (before, after) in ODD_LEAVES.items():
        assert (memory_dir / name).read_bytes().decode() == after, name
        backup = memory_dir / ".subrosa" / "frontmatter-backup" / name
        assert backup.read_bytes().decode() == before
        run("fact", "upsert", name)  # the strict reader takes it now


def test_fix_frontmatter_leaves_alone_a_leaf_it_could_fix_only_by_dropping_words(
    memory_dir: Path, run: RunCli
) -> None:
    # A type subrosa does not know (`note`) is the user's word: putting `project` in its
    # place would lose it, so the leaf is left as it is (registered leniently) and said.
    text = "---\nname: project-note\ndescription: d\ntype: note\n---\nBody.\n"
    (memory_dir / "project_note.md").write_text(text)
    result = json.loads(run("adopt", "--fix-frontmatter", "--json").stdout)
    assert result["fixed_frontmatter"] == []
    assert (memory_dir / "project_note.md").read_text() == text
    assert any("project_note.md" in w and "by hand" in w for w in result["warnings"])


POINTER = "- [MEMORY_archive.md](MEMORY_archive.md) — older facts"


@pytest.mark.parametrize("materialize", [False, True])
def test_a_line_pointing_at_the_other_index_file_is_no_fact(
    memory_dir: Path, run: RunCli, materialize: bool
) -> None:
    # A hand-kept index points at its archive (and the archive back at the index): the
    # generated files link each other in their headers, so such a line is no fact and
    # no leaf; it is said (`unplaced`) and kept as written beside the index.
    write_leaf(memory_dir, "alpha.md")
    write_leaf(memory_dir, "beta.md")
    index = f"# Memory\n\n- [Alpha](alpha.md) — the alpha\n{POINTER}\n"
    archive = "# Archive\n\n[Back to the index](MEMORY.md)\n\n- [Beta](beta.md) — old beta\n"
    (memory_dir / "MEMORY.md").write_text(index)
    (memory_dir / "MEMORY_archive.md").write_text(archive)
    result = _adopt(run, memory_dir, *(["--materialize"] if materialize else []))
    assert result["registered"] == ["alpha", "beta"] and result["materialized"] == []
    assert [(u["file"], u["line"]) for u in result["unplaced"]] == [
        ("MEMORY.md", 4),
        ("MEMORY_archive.md", 3),
    ]
    assert all("not a fact" in u["why"] for u in result["unplaced"])
    assert (memory_dir / "MEMORY.md.pre-subrosa").read_text() == index
    assert (memory_dir / "MEMORY_archive.md.pre-subrosa").read_text() == archive
    # The backup holds the pointer line: no second copy of the same bytes as `.unplaced`
    # (adopt wrote MEMORY.md.unplaced too, byte for byte the backup).
    assert not list(memory_dir.glob("*.unplaced"))
    assert result["kept"] == result["backups"]
    assert sorted(p.name for p in memory_dir.glob("*.md")) == [
        "MEMORY.md",
        "MEMORY_archive.md",
        "alpha.md",
        "beta.md",
    ]
    run("check")


def test_generate_keeps_an_appended_pointer_line_beside_the_index(
    memory_dir: Path, run: RunCli
) -> None:
    write_leaf(memory_dir, "alpha.md")
    run("generate")
    index = memory_dir / "MEMORY.md"
    edited = index.read_text() + POINTER + "\n"
    index.write_text(edited)
    result = json.loads(run("generate", "--json").stdout)
    assert result["materialized"] == [] and result["adopted"] == []
    assert [u["text"] for u in result["unplaced"]] == [POINTER]
    assert (memory_dir / "MEMORY.md.unplaced").read_text() == edited
    assert POINTER not in index.read_text()
    assert json.loads(run("generate", "--json").stdout)["unplaced"] == []


@pytest.mark.parametrize("brk", ["\\L", "\\P", "\\N", "\\r", "\\n"])
def test_a_description_holding_any_line_break_is_one_line_said_and_the_leaf_kept(
    memory_dir: Path, run: RunCli, brk: str
) -> None:
    # U+2028, U+2029 and U+0085 break lines as `\r` does (str.splitlines, editors): the
    # leaf a person wrote is registered as `\r` is, its words on one line and a warning,
    # the leaf itself untouched and MEMORY.md one line for it.
    leaf = memory_dir / "project_breaks.md"
    text = (
        f'---\nname: project-breaks\ndescription: "one{brk}## two"\n'
        "metadata:\n  type: project\n---\nB\n"
    )
    leaf.write_text(text)
    write_leaf(memory_dir, "alpha.md")
    result = json.loads(run("generate", "--json").stdout)
    assert any("project_breaks.md" in w and "several lines" in w for w in result["warnings"]), (
        result["warnings"]
    )
    assert json.loads(run("fact", "show", "project_breaks", "--json").stdout)["description"] == (
        "one ## two"
    )
    index = (memory_dir / "MEMORY.md").read_bytes().decode()
    assert len(index.splitlines()) == len(index.split("\n")) - 1 == result["lines"]
    assert [line for line in index.splitlines() if "one ## two" in line]
    assert leaf.read_text() == text


def test_a_pointer_added_to_the_archive_is_said_to_be_one(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "alpha.md")
    run("generate")
    archive = memory_dir / "MEMORY_archive.md"
    archive.write_text(archive.read_text() + "\n[Back to the index](MEMORY.md)\n")
    result = json.loads(run("generate", "--json").stdout)
    assert [u["text"] for u in result["unplaced"]] == ["[Back to the index](MEMORY.md)"]
    assert "not a fact" in result["unplaced"][0]["why"]
    assert result["materialized"] == []


def test_a_materialized_leaf_holds_the_users_words_not_the_indexs_escaped_view(
    memory_dir: Path, run: RunCli
) -> None:
    # As --fix-frontmatter writes a description: `<rev>` is no `‹rev›` in a leaf and a
    # link gets no backslash; MEMORY.md still shows the escaped view.
    (memory_dir / "MEMORY.md").write_text(
        "# Mem\n\n- Use git show <rev>:<path>, see [docs](https://x.y/a_b)\n"
        "- [Gone](project_gone.md) — run `make <target>` first\n"
    )
    _adopt(run, memory_dir, "--materialize")
    for slug, said in (
        ("use_git_show_rev_path_see", "Use git show <rev>:<path>, see [docs](https://x.y/a_b)"),
        ("project_gone", "run `make <target>` first"),
    ):
        meta = yaml.safe_load((memory_dir / f"{slug}.md").read_text().split("---")[1])
        assert meta["description"] == said  # (the store shows it sanitized, as any leaf's)
    index = (memory_dir / "MEMORY.md").read_text()
    assert "‹rev›" in index and "<rev>" not in index and "‹target›" in index
