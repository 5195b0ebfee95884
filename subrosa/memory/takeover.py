"""Taking over index lines someone else wrote, and reconciling the facts with the disk.

One implementation, two callers: `subrosa adopt` takes over a whole MEMORY.md that
subrosa never wrote; `subrosa generate` takes over only the lines appended or edited
since its last run (Claude Code's auto memory and people write into MEMORY.md). Either
way a line keeps its hook and its place, a line whose file does not exist (or a bullet
with no link at all) can become a leaf of its own, and leaves on disk that nothing
registered yet are registered. Nothing a user wrote is dropped.

Reading the lines is subrosa.memory.indexfile's job (pure); this module decides what
they mean for the facts. Its queries are the store's, its file reads leaf's and state's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from subrosa.errors import LeafError
from subrosa.fsutil import atomic_write_text, holds_text
from subrosa.lazyre import compile_lazily
from subrosa.memory import store
from subrosa.memory.generator import ARCHIVED_SECTION
from subrosa.memory.indexfile import (
    IndexLine,
    meaningful_title,
    plain_text,
    split_archived_suffix,
)
from subrosa.memory.leaf import (
    content_hash,
    hash_leaf_file,
    humanize,
    list_leaf_files,
    parse_leaf_lenient,
    parse_note,
    render_leaf,
    subfolder_note,
)
from subrosa.memory.marker import new_file_mode

# Loose, Report and Source live in subrosa.memory.report (plain values: generate's quick
# path, which never loads this module, reports with them too); re-exported here.
from subrosa.memory.report import Loose as Loose
from subrosa.memory.report import Report as Report
from subrosa.memory.report import Source as Source
from subrosa.memory.report import lines_of
from subrosa.memory.state import changed_since, load_seen, load_state, sidecar_matches
from subrosa.memory.values import state_row
from subrosa.models import Fact
from subrosa.text import sanitize_field

_TYPE_PREFIX = compile_lazily(r"^(user|feedback|project|reference)[_-]")


# --- materializing lines that have no leaf --------------------------------------

# A bullet's own words give its type only with a clear marker: `Project: …`,
# `**feedback**: …` (a bullet that starts "User prefers…" is not thereby a user fact).
_TYPE_MARKER = compile_lazily(
    r"^(?:\*\*|__)?(user|feedback|project|reference)(?:\*\*|__)?\s*:", re.IGNORECASE
)
_TITLE_WORDS = 6


def _slugify(text: str) -> str:
    words = re.findall(r"\w+", text.lower())[:_TITLE_WORDS]
    return "_".join(words)[:60].strip("_") or "note"


def _first_words(text: str) -> str:
    """The first words of a line, as written: the title of a leaf made from a bullet."""
    words = text.split()
    title = " ".join(words[:_TITLE_WORDS])
    if len(title) > 60:
        title = title[:59].rstrip() + "…"
    elif len(words) > _TITLE_WORDS:
        title += " …"
    return title


def _plain(line: IndexLine) -> str:
    """The item's words with each link read as its text (`see [X](x.md)` -> `see X`): what
    a leaf made from it is named and titled after (its hook keeps the links)."""
    if line.title or not line.targets:
        return line.title or line.hook
    return sanitize_field(plain_text(line.text))


def _leaf_names_for(line: IndexLine, target: str | None) -> Iterator[str]:
    """The filenames a loose line may be materialized as, in order of preference. Each
    ends in `.md` exactly: only such a file is a leaf (`NOTES.MD` is written `NOTES.md`,
    or the next run would find no leaf for the fact and drop its line)."""
    if target and "/" not in target and "\\" not in target and not target.startswith("."):
        if target.endswith(".md"):
            yield target
        stem = Path(target).stem
    else:
        stem = _slugify(_plain(line))
    for n in range(1, 10_000):
        yield f"{stem}.md" if n == 1 else f"{stem}_{n}.md"


def _materialized_text(filename: str, line: IndexLine, target: str | None, origin: str) -> str:
    """The leaf `line` becomes when materialized as `filename` (the same bytes every run):
    the item's lines as they were written, under a title."""
    stem = Path(filename).stem
    prefix = _TYPE_PREFIX.match(filename) if target else None
    marker = _TYPE_MARKER.match(line.hook)
    if target and line.lead == target:
        title = meaningful_title(line, target) or humanize(stem)
    elif target:
        title = humanize(stem)
    else:
        title = _first_words(_plain(line)) or humanize(stem)
    if line.prose:
        how = "text that was no index entry"
    elif target:
        how = "which had no leaf of its own"
    else:
        how = "a line with no leaf of its own"
    where = lines_of(line, origin)
    body = f"# {title}\n\n{line.text}\n\n(Taken over by subrosa from {where}, {how}.)"
    typed = prefix or marker
    fact_type = typed.group(1).lower() if typed else "reference"
    # The user's words, as --fix-frontmatter writes them (the index escapes them).
    return render_leaf(stem.replace("_", "-"), line.said or line.hook or title, fact_type, body)


def materialize(
    memory_dir: Path,
    line: IndexLine,
    target: str | None,
    taken: set[str],
    origin: str,
    *,
    write: bool = True,
) -> tuple[str, str]:
    """Write a leaf of its own for a line whose file does not exist (or a bullet without
    a link, or prose), in the canonical shape; return its filename and text. Never
    overwrites a file; with `write` False, only says what it would write.

    A file that already holds exactly what this line would be materialized as is that
    leaf, written by a run killed before it wrote the index: it is taken as it is, so
    running again after a crash does not make the leaf a second time.
    """
    for filename in _leaf_names_for(line, target):
        text = _materialized_text(filename, line, target, origin)
        path = memory_dir / filename
        if filename in taken or path.exists():
            if holds_text(path, text):
                taken.add(filename)
                return filename, text
            continue
        if write:
            atomic_write_text(path, text, new_mode=new_file_mode(memory_dir))
        taken.add(filename)
        return filename, text
    raise LeafError(target or line.title, "has too many namesakes to materialize")


# --- the take-over itself ---------------------------------------------------------


def files_on_disk(
    memory_dir: Path, sources: list[Source], registered: Iterable[str] = ()
) -> set[str]:
    """The leaves on disk (by filename), and the notes in subfolders that the sources'
    lines link or a fact is registered under (by their path: `notes/x.md`)."""
    on_disk = {p.name for p in list_leaf_files(memory_dir)}
    root = memory_dir.resolve()
    wanted = {path for path in registered if "/" in path}
    for source in sources:
        for line in source.lines:
            wanted.update(t for t in line.targets if "/" in t)
    on_disk.update(rel for rel in wanted if subfolder_note(memory_dir, rel, root) is not None)
    return on_disk


def _first_lines(sources: list[Source], on_disk: set[str]) -> dict[str, tuple[Source, IndexLine]]:
    """For each file on disk that a taken line links, the line that speaks for it: its own
    line (`- [Title](file.md) — hook`) wherever it is, else the first that mentions it,
    when it has no line of its own at all (a line someone adds that mentions facts listed
    already never overwrites their hooks: it becomes a leaf of its own)."""
    own = {line.lead for source in sources for line in source.lines if line.lead}
    first: dict[str, tuple[Source, IndexLine]] = {}
    for dedicated in (True, False):
        for source in sources:
            for line in source.taken_lines():
                for target in line.targets:
                    if target not in on_disk:
                        continue
                    if target == line.lead if dedicated else target not in own:
                        first.setdefault(target, (source, line))
    return first


# Why a line pointing at an index file is not taken over.
POINTER = (
    "links {}, an index file subrosa writes (the two link each other in their headers): "
    "not a fact, so it is not taken over"
)


def find_loose(sources: list[Source], on_disk: set[str]) -> list[Loose]:
    """Items no leaf stands behind: lines that link files not on disk, bullets without any
    link, prose, and lines whose every link is spoken for by another line (a second line
    for one file): each would be lost if not made a leaf of its own."""
    first = _first_lines(sources, on_disk)
    loose: list[Loose] = []
    for source in sources:
        for line in source.taken_lines():
            if line.pointer:
                continue  # no fact: said by take_over (POINTER)
            missing = [t for t in line.targets if t not in on_disk]
            spoken_for = not missing and all(
                t not in first or first[t][1] is not line for t in line.targets
            )
            if not line.targets or spoken_for:
                loose.append(Loose(source.origin, line, None))
            loose.extend(Loose(source.origin, line, t) for t in missing)
    return loose


def unchanged_rows(
    session: Session, project: store.Project, sources: list[Source]
) -> list[Any] | None:
    """The facts as plain rows (no body) when the disk holds nothing new for them: no
    lines to take over, every leaf registered and unchanged, every registered leaf on
    disk, the sidecar in step with the database. None when `take_over` has work to do.

    The common case (generate run again, nothing changed) then builds no ORM objects:
    with thousands of facts that was most of the run.
    """
    if any(source.taken_lines() or source.unplaced for source in sources):
        return None
    rows = store.rows_without_body(session, project)
    by_path = {row.path: row for row in rows}
    memory_dir = project.memory_dir
    names = [p.name for p in list_leaf_files(memory_dir)]
    notes = [path for path in by_path if "/" in path]
    if notes:
        root = memory_dir.resolve()
        names += [rel for rel in notes if subfolder_note(memory_dir, rel, root) is not None]
    if len(names) != len(by_path) or not all(name in by_path for name in names):
        return None
    directory = str(memory_dir)
    for name in names:
        try:
            if hash_leaf_file(directory, name) != by_path[name].content_hash:
                return None
        except OSError:
            return None
    if not sidecar_matches(memory_dir, store.state_rows(session, project)):
        return None
    return rows


# A leaf a dry run would write: its bytes, and the time it would carry.
Virtual = dict[str, tuple[bytes, float | None]]


def take_over(
    session: Session,
    project: store.Project,
    sources: list[Source],
    *,
    materialize_loose: bool,
    reorder: bool,
    dry_run: bool = False,
) -> Report:
    """Reconcile the facts with the disk and take over `sources`' lines.

    - loose items are materialized as leaves (when asked; a dry run only says which it
      would write, and counts them as written), else reported;
    - every readable leaf on disk is registered (hook from its line, else the sidecar,
      else its description) or refreshed when its content changed;
    - facts whose leaf is gone are reported as missing;
    - `reorder` (adopt) sets the curated order and sections from the lines, and gives
      the leaves it makes times that rank them by their place in the old index, after
      the leaves that were there; otherwise a new fact is placed after the fact whose
      line precedes its own.
    """
    report = Report()
    facts = {f.slug: f for f in store.facts_without_body(session, project)}
    state = load_state(project.memory_dir)
    # A note in a subfolder is found through a line that links it, its fact, or its
    # sidecar row: a new database (a clone, a lost file) has only the last.
    registered = [f.path for f in facts.values()] + [f"{slug}.md" for slug in state]
    on_disk = files_on_disk(project.memory_dir, sources, registered)
    virtual: Virtual = {}
    placed = _materialize_loose(
        project.memory_dir,
        sources,
        on_disk,
        report,
        write=materialize_loose,
        dry_run=dry_run,
        virtual=virtual,
        place_times=reorder,
    )
    first_line = _first_lines(sources, on_disk)
    for filename, origin in placed.items():
        first_line[filename] = origin
    # The sidecar is rewritten by every change, so where a line disagrees with the
    # database, either git changed it (a pull: the fields it changed win) or, when it
    # still reads as this clone last saw it, a teammate changed the fact on a shared
    # database (the database wins). Without this clone's record (its first run, a clone
    # moved to another folder) the sidecar wins on a database of one's own; on a server
    # every change reached the server first, and a new clone's sidecar may predate a
    # teammate's unpushed one: the server wins.
    database = store.database_of(session.get_bind())
    server = not database.startswith("sqlite:")
    seen = record = load_seen(project.memory_dir, database)
    if seen is None and server:
        seen = state
    # A fact this clone saw on a server that is gone from it was forgotten there by a
    # teammate (not on a database of one's own, nor on an empty one: a database lost).
    forgotten: frozenset[str] = frozenset()
    if record is not None and facts and server:
        forgotten = frozenset(record) - frozenset(facts)
    for slug, row in state.items():
        if slug not in facts:
            continue
        taken = changed_since(row, seen, state_row(facts[slug]))
        if store.apply_state(facts[slug], taken):
            report.synced.append(slug)
    new_files = _register_leaves(
        session, project, sorted(on_disk), facts, state, report, virtual, forgotten
    )
    by_file = {f.path: f for f in facts.values()}
    for filename, (source, line) in first_line.items():
        if filename in by_file:
            dedicated = filename in placed or filename == line.lead
            _apply_line(
                by_file[filename], filename, source, line, dedicated, filename in new_files,
                reorder, report,
            )  # fmt: skip
        elif filename not in placed:
            why = f"gives a hook to {filename}, which cannot be read; it is not taken over"
            report.unplaced.append(Loose(source.origin, line, filename, why))
    edited = "edits a line of the cold tier, which is not taken over (add a new line instead)"
    heading = (
        "is a heading written by hand, which is not taken over "
        "(`subrosa fact move SLUG --section NAME` puts a fact under one)"
    )
    for source in sources:
        why = edited if source.cold else heading
        report.unplaced.extend(Loose(source.origin, line, None, why) for line in source.unplaced)
        report.unplaced.extend(
            Loose(source.origin, line, None, POINTER.format(line.pointer))
            for line in source.taken_lines()
            if line.pointer
        )
    links = _links(sources, on_disk, placed)
    _place(session, project, sources, links, by_file, new_files, reorder, bool(report.synced))
    report.facts = [f for f in facts.values() if f.path in report.present]
    return report


def _place_time(memory_dir: Path, on_disk: set[str], origin: str) -> float:
    """The time below which adopt dates the leaves it makes: a second before the oldest
    leaf there was (else before the index file), so that one-line leaves made from the
    old index never outrank a real leaf by their file's newness."""
    times = []
    for name in on_disk:
        try:
            times.append(os.stat(memory_dir / name).st_mtime)
        except OSError:
            continue
    if not times:
        try:
            times.append(os.stat(memory_dir / origin).st_mtime)
        except OSError:
            times.append(0.0)
    return float(int(min(times))) - 1


def _materialize_loose(
    memory_dir: Path,
    sources: list[Source],
    on_disk: set[str],
    report: Report,
    *,
    write: bool,
    dry_run: bool,
    virtual: Virtual,
    place_times: bool,
) -> dict[str, tuple[Source, IndexLine]]:
    """Give each loose item a leaf (when `write`; a dry run records what it would write
    in `virtual`), else report it. Returns, for each leaf made, the item it came from
    (which gives the fact its hook and place)."""
    made: dict[str, tuple[Source, IndexLine]] = {}
    loose_items = find_loose(sources, on_disk)
    if not write:
        report.loose.extend(loose_items)
        return made
    taken_names = set(on_disk) | {p.name for p in memory_dir.iterdir()}
    base = (
        _place_time(memory_dir, on_disk, sources[0].origin) if place_times and loose_items else 0.0
    )
    for loose in loose_items:
        source = next(s for s in sources if s.origin == loose.origin)
        filename, text = materialize(
            memory_dir, loose.line, loose.target, taken_names, loose.origin, write=not dry_run
        )
        # Ranked by place in the old index: line 1 newest, the last line oldest.
        when = base - loose.line.number if place_times else None
        if dry_run and not (memory_dir / filename).exists():
            virtual[filename] = (text.encode("utf-8"), when)
        elif when is not None:
            os.utime(memory_dir / filename, (when, when))
        if filename not in made:
            report.materialized.append(filename)
        on_disk.add(filename)
        made.setdefault(filename, (source, loose.line))
    return made


def _links(
    sources: list[Source], on_disk: set[str], made: dict[str, tuple[Source, IndexLine]]
) -> dict[tuple[str, int], list[str]]:
    """The files each item stands for, in order: the files it links that are on disk,
    then the leaves made from it."""
    links: dict[tuple[str, int], list[str]] = {}
    for source in sources:
        for line in source.lines:
            files = [t for t in line.targets if t in on_disk]
            if files:
                links[(source.origin, line.number)] = files
    for filename, (source, line) in made.items():
        links.setdefault((source.origin, line.number), []).append(filename)
    return links


def _register_leaves(
    session: Session,
    project: store.Project,
    filenames: list[str],
    facts: dict[str, Fact],
    state: dict[str, dict[str, Any]],
    report: Report,
    virtual: Virtual,
    forgotten: frozenset[str] = frozenset(),
) -> list[str]:
    """Register leaves nobody registered, refresh changed ones, note missing and unreadable
    ones; `facts` (by slug) gains the new facts. Returns the new facts' filenames. A leaf
    of a fact in `forgotten` (a teammate forgot it on the server) is left out, said."""
    by_file = {f.path: f for f in facts.values()}
    new_files: list[str] = []
    directory = str(project.memory_dir)
    last_position = max((f.position for f in facts.values()), default=0) + 10**6
    for filename in filenames:
        fact = by_file.get(filename)
        given, when = virtual.get(filename, (None, None))
        try:
            digest = (
                content_hash(given) if given is not None else hash_leaf_file(directory, filename)
            )
        except OSError as exc:
            report.unreadable.append((filename, f"cannot be read ({exc.strerror})"))
            continue
        if fact is not None and fact.content_hash == digest:
            report.present.add(filename)
            continue
        path = project.memory_dir / filename
        try:
            if "/" in filename:
                leaf = parse_note(project.memory_dir, filename, given)
            else:
                leaf = parse_leaf_lenient(path, given=given)
        except LeafError as exc:
            report.unreadable.append((filename, exc.problem))
            continue
        if when is not None:
            leaf.mtime = datetime.fromtimestamp(when, UTC)
        report.present.add(filename)
        report.warnings.extend(f"{path}: {w}" for w in leaf.warnings)
        fact = fact or facts.get(leaf.slug)  # registered under another path spelling
        if fact is None and leaf.slug in forgotten:
            report.present.discard(filename)
            report.warnings.append(
                f"{path}: {leaf.slug} was forgotten on the team's server (`subrosa fact"
                " forget`); not registered again and left out of the index files (`git"
                f" pull` deletes the leaf; `subrosa fact upsert {filename}` keeps it)."
            )
            continue
        if fact is None:
            fact = store.register_from_disk(
                session,
                project,
                leaf,
                state.get(leaf.slug),
                known_new=True,
                fallback_position=last_position + len(new_files) + 1,
            )
            facts[fact.slug] = fact
            report.adopted.append(fact.slug)
            new_files.append(filename)
        else:
            store.refresh_from_leaf(fact, leaf)
            report.refreshed.append(fact.slug)
    seen = report.present | {name for name, _ in report.unreadable}  # once, not per fact
    report.missing = sorted(f.slug for f in facts.values() if f.path not in seen)
    return new_files


def _apply_line(
    fact: Fact,
    filename: str,
    source: Source,
    line: IndexLine,
    dedicated: bool,
    is_new: bool,
    reorder: bool,
    report: Report,
) -> None:
    """What a taken-over line says about its fact: hook (kept whole; the whole line when
    it only mentions the fact), title, section; a new fact found only in a hand-kept
    archive stays in the cold tier."""
    said = line.hook if dedicated else line.whole
    text, reason = split_archived_suffix(said) if source.cold else (said, None)
    if line.prose:
        text = store.hook_from_description(text)  # the paragraph itself is in the leaf
    if text:
        hook, _ = store.clean_hook(text, strict=False)
        if hook != fact.hook:
            fact.hook = hook
            report.hooks_taken.append(fact.slug)
    title = meaningful_title(line, filename) if dedicated else None
    if title:
        fact.title = title
    archived_here = not source.by_section or line.section == ARCHIVED_SECTION
    if source.cold and is_new and fact.status == "active" and archived_here:
        fact.status = "archived"
        how = "before adoption" if reorder else "added by hand"
        fact.archive_reason = reason if reason is not None else f"in {source.origin} {how}"
        fact.archived_at = store.utcnow()
    if reorder and not source.cold:
        fact.section = line.section


def _place(
    session: Session,
    project: store.Project,
    sources: list[Source],
    links: dict[tuple[str, int], list[str]],
    by_file: dict[str, Fact],
    new_files: list[str],
    reorder: bool,
    resort: bool = False,
) -> None:
    """Set the curated order: all of it from the lines (adopt), or new facts after the fact
    whose line precedes theirs (generate). `resort` makes positions dense again after
    some were taken from the sidecar."""
    if not reorder and not new_files and not resort:
        return
    session.flush()
    current = store.list_facts(session, project, status=None)
    if reorder:
        ordered: list[Fact] = []
        seen: set[str] = set()
        for source in sources:
            for line in source.lines:
                for filename in links.get((source.origin, line.number), ()):
                    fact = by_file.get(filename)
                    if fact is not None and fact.slug not in seen:
                        ordered.append(fact)
                        seen.add(fact.slug)
        rest = [f for f in current if f.slug not in seen]
        store.renumber(session, project, ordered + rest)
        return
    placed = {by_file[f].slug for f in new_files if f in by_file}
    placed &= {by_file[f].slug for files in links.values() for f in files if f in by_file}
    if not placed:
        store.renumber(session, project, current)
        return
    ordered = [f for f in current if f.slug not in placed]
    hot = next((s for s in sources if not s.cold), None)
    anchor: str | None = None
    for line in hot.lines if hot else []:
        for filename in links.get((hot.origin, line.number), ()) if hot else ():
            fact = by_file.get(filename)
            if fact is None:
                continue
            if fact.slug in placed and fact not in ordered:
                index = (
                    next(i for i, f in enumerate(ordered) if f.slug == anchor) + 1
                    if anchor is not None
                    else 0
                )
                ordered.insert(index, fact)
                if line.section is not None:
                    fact.section = line.section
            anchor = fact.slug
    ordered.extend(f for f in current if f.slug in placed and f not in ordered)
    store.renumber(session, project, ordered)
