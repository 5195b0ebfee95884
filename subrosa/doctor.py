"""`subrosa doctor`: each part of the set-up checked, each problem with its fix.

The one module above the halves: it composes the checks of the memory half (memory
dir, index, leaves registered), the archive half (transcript backlog), the Claude
Code half (hooks) and the database, so it sits at the top of the package rather than
in any of them. It asks the store and the halves' modules; it runs no SQL of its own.

Every check is a small function returning a Check; none of them raises, so one
broken part never hides the others.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from subrosa.errors import InvalidInput, SubrosaError, hide_passwords
from subrosa.fsutil import is_link
from subrosa.memory.leaf import list_leaf_files, subfolder_note
from subrosa.memory.marker import ARCHIVE, INDEX, INDEX_FILES, foreign_index
from subrosa.paths import exists, parent, sqlite_path


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    # A warning does not make `doctor` fail (e.g. no transcripts archived yet).
    severity: str = "error"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Subject:
    """What doctor looks at: one project's memory dir and one database."""

    memory_dir: Path
    db_url: str
    cwd: Path


def check_memory_dir(subject: Subject) -> Check:
    directory = subject.memory_dir
    if not directory.is_dir():
        return Check(
            "memory dir",
            False,
            f"{directory} does not exist.",
            f"mkdir -p {shlex.quote(str(directory))} (or pass --memory-dir / set "
            "SUBROSA_MEMORY_DIR).",
        )
    if not os.access(directory, os.W_OK):
        return Check(
            "memory dir",
            False,
            f"{directory} is not writable.",
            f"chmod u+w {shlex.quote(str(directory))}",
        )
    from subrosa.identity import facts_key, sessions_key

    # The names a shared database files this project's facts and sessions under
    # (docs/team.md): the same in every clone when they come from the git remote.
    try:
        named = f"facts filed as {facts_key(directory)}, sessions as {sessions_key()}"
    except InvalidInput as exc:  # the settings file's [projects] table is wrong
        return Check("memory dir", False, str(exc), "fix the settings file (docs/settings.md)")
    return Check("memory dir", True, f"{directory} ({named})")


def _database_ready(subject: Subject) -> bool:
    from subrosa.db import SCHEMA_HEAD, current_revision, get_engine

    path = sqlite_path(subject.db_url)
    if path is not None and not exists(path):
        return False
    try:
        return current_revision(get_engine(subject.db_url)) == SCHEMA_HEAD
    except Exception:  # noqa: BLE001 - the database check reports the cause
        return False


def _database_fix(url: str, said: str) -> str:
    """What to check when the database cannot be read (`said`: why): for a server, the
    driver when it is missing, else where its URL and password come from and whether it
    answers (docs/team.md)."""
    from subrosa.pg import INSTALL_DRIVER, ignored_passfile, is_server

    if not is_server(url):
        return "check --db"
    if INSTALL_DRIVER in said:  # the URL, password and server are not the problem
        return "install psycopg beside subrosa, as the line above says"
    if "the server cut the command short (" in said:  # it answered, and cut a statement
        return (
            "run subrosa doctor again; if it is cut again, raise the statement_timeout or "
            "lock_timeout set in the URL's options (options=-c statement_timeout=…) or on "
            "the database role"
        )
    ignored = ignored_passfile(url)
    if ignored is not None:
        return (
            f"chmod 600 {shlex.quote(ignored)} (libpq ignores a password file that others "
            "may read), then check the server's URL and that it answers"
        )
    return (
        "check the server's URL (--db, SUBROSA_DB or db in the settings file), the "
        "password libpq finds for it (~/.pgpass or PGPASSWORD) and that the server "
        "answers on that host and port"
    )


def _upgrade_fix(subject: Subject, revision: str | None) -> str:
    """How a schema behind `revision` is migrated: by `subrosa db upgrade`, on a server
    with tables as the role that owns them (a member's or reader's role is refused:
    docs/team.md, "Security")."""
    from subrosa.pg import is_server

    shared = revision is not None and is_server(subject.db_url)
    access = _role_access(subject) if shared else None
    if access is None or access[1]:
        return "subrosa db upgrade"
    return (
        "subrosa db upgrade as the role that owns the tables (the team's owner role: "
        f'{access[0]} may not migrate; docs/team.md, "Security")'
    )


def check_database(subject: Subject) -> Check:
    from subrosa.db import SCHEMA_HEAD, current_revision, get_engine, is_newer, newer_schema

    path = sqlite_path(subject.db_url)
    if path is not None and not exists(path):
        from subrosa.schema import folder_problem

        problem = folder_problem(path)
        if problem is not None:
            return Check("database", False, problem, f"mkdir -p {shlex.quote(parent(path))}")
        return Check(
            "database",
            True,
            f"{path} does not exist yet; the first subrosa command creates and migrates it.",
            "subrosa db upgrade",
            severity="warning",
        )
    try:
        engine = get_engine(subject.db_url)
        revision = current_revision(engine)
    except Exception as exc:  # noqa: BLE001 - report, never raise
        said = hide_passwords(str(exc))
        if not isinstance(exc, SubrosaError):  # subrosa's own errors name the database
            said = f"cannot open {hide_passwords(subject.db_url)}: {said}"
        return Check("database", False, said, _database_fix(subject.db_url, said))
    where = hide_passwords(engine.url.render_as_string(hide_password=True))
    if is_newer(revision):
        return Check(
            "database",
            False,
            str(newer_schema(where, revision)),
            "upgrade subrosa (pipx upgrade subrosa-memory)",
        )
    if revision != SCHEMA_HEAD:
        return Check(
            "database",
            False,
            f"{where} is at revision {revision or 'none'}, not {SCHEMA_HEAD}.",
            _upgrade_fix(subject, revision),
        )
    return Check("database", True, f"{where} (revision {revision})")


def check_pooler(subject: Subject) -> Check | None:
    """A server reached through a connection pooler (subrosa.pg.behind_pooler()): said,
    with the settings subrosa cannot send through one (docs/team.md, "Behind a
    connection pooler"); None elsewhere, or when no connection can be had (the database
    check says why)."""
    from subrosa.pg import POOLER_PARAMETER, connect, declared_pooler, is_server

    if not is_server(subject.db_url):
        return None
    try:
        conn = connect(subject.db_url)
        declared = declared_pooler(subject.db_url)
    except Exception:  # noqa: BLE001 - the database check reports the cause
        return None
    try:
        if not conn.pooled:
            return None
        user, jit, workers = conn.execute(
            "SELECT current_user, current_setting('jit'),"
            " current_setting('max_parallel_workers_per_gather')"
        ).fetchone()
    except Exception:  # noqa: BLE001
        return None
    finally:
        conn.close()
    how = (
        f"declared by the URL's {POOLER_PARAMETER}=transaction"
        if declared
        else "recognised by its connection"
    )
    detail = (
        f"the server is reached through a connection pooler ({how}): subrosa prepares no"
        " statements there and sets its planner settings inside its own transactions"
    )
    unset = [
        f"SET {n} = {v}"
        for n, v, now in (("jit", "off", jit), ("max_parallel_workers_per_gather", "0", workers))
        if now != v
    ]
    if not unset:
        return Check("pooler", True, detail)
    return Check(
        "pooler",
        False,
        f"{detail}; it cannot turn JIT and parallel workers off there itself (now jit ="
        f" {jit}, max_parallel_workers_per_gather = {workers}), so a search may pay for"
        " JIT compiling and for starting workers.",
        "; ".join(f"ALTER ROLE {_role_name(str(user))} {change}" for change in unset)
        + " (in psql, as that role or the owner)",
        severity="warning",
    )


def _role_name(name: str) -> str:
    """A role's name as SQL reads it: quoted unless a plain lowercase identifier."""
    if name.replace("_", "a").isalnum() and name.islower() and not name[0].isdigit():
        return name
    return '"' + name.replace('"', '""') + '"'


def check_hooks(subject: Subject) -> Check:
    """Which of `subrosa install` (hooks in a settings.json) and the plugin is active."""
    from subrosa.claude.settings import EVENTS, registrations

    found = registrations()
    installed = "; ".join(f"{f.what} in {f.path} ({f.scope})" for f in found.hooks)
    plugins = "; ".join(f"plugin {f.what} enabled in {f.path}" for f in found.plugins)
    missing = [event for event in EVENTS if event not in found.events]
    if found.hooks and found.plugins:
        return Check(
            "hooks",
            False,
            f"registered twice: `subrosa install` ({installed}) and the {plugins}. Each "
            "hook still acts once per event.",
            f"keep one: `subrosa install --uninstall --scope {found.hooks[0].scope}`, or "
            f"`claude plugin disable {found.plugins[0].what}`",
            severity="warning",
        )
    if found.plugins:
        return Check("hooks", True, f"the {plugins}")
    if not found.hooks:
        return Check(
            "hooks",
            False,
            "not set up: no subrosa hooks in any settings.json and no subrosa plugin enabled "
            "(a plugin loaded with `claude --plugin-dir` is not visible here).",
            "subrosa install (or enable the subrosa plugin)",
            severity="warning",
        )
    if missing:
        return Check(
            "hooks",
            False,
            f"subrosa's {', '.join(missing)} hook(s) are missing ({installed}).",
            f"subrosa install --scope {found.hooks[0].scope}",
            severity="warning",
        )
    unseen = _not_run_in_subfolder(subject.cwd)
    if unseen is not None:
        return unseen
    return Check("hooks", True, f"`subrosa install`: {installed}")


def _not_run_in_subfolder(cwd: Path) -> Check | None:
    """A warning when doctor runs in a subfolder of a checkout (not inside a Claude Code
    session) where a session started would run none of subrosa's hooks: Claude Code
    started there reads that folder's .claude/settings.json, not the top's, so hooks
    installed with the project scope (the default) do nothing for it."""
    from subrosa.claude.settings import EVENTS, registrations
    from subrosa.paths import checkout_root

    top = checkout_root(cwd)
    if os.environ.get("CLAUDE_PROJECT_DIR") or top is None or Path(top) == cwd.absolute():
        return None
    here = registrations(cwd)
    if here.plugins or all(event in here.events for event in EVENTS):
        return None
    return Check(
        "hooks",
        False,
        f"a Claude Code session started in {cwd} runs "
        f"{'none' if not here.events else 'only ' + ', '.join(sorted(here.events))} of "
        f"subrosa's hooks: started in a subfolder, Claude Code reads that folder's "
        f".claude/settings.json, not {Path(top) / '.claude' / 'settings.json'}.",
        "subrosa install --scope local (read from every subfolder of this checkout) or "
        f"--scope user; or start Claude Code in {top}",
        severity="warning",
    )


def check_mcp(subject: Subject) -> Check:
    """subrosa's MCP server, where it is registered and whether Claude Code can start it.
    Optional: not registering it is fine (the plugin registers it by itself)."""
    import shutil

    from subrosa.claude.install import registered_mcp_servers

    found = registered_mcp_servers(subject.cwd)
    if not found:
        return Check(
            "mcp server",
            True,
            "not registered in .mcp.json or ~/.claude.json (optional; the plugin "
            "registers it by itself)",
            "subrosa install --mcp",
        )
    broken = [
        f"{where} runs {entry['command']!r}, which is not found"
        for where, entry in found
        if not (shutil.which(str(entry["command"])) or Path(str(entry["command"])).is_file())
    ]
    if broken:
        return Check(
            "mcp server",
            False,
            "; ".join(broken) + ".",
            "subrosa install --mcp (it writes the absolute path when subrosa is not on PATH)",
            severity="warning",
        )
    return Check("mcp server", True, "registered in " + ", ".join(where for where, _ in found))


# Claude Code versions whose behaviour subrosa's set-up depends on (docs/claude-code.md,
# "Claude Code versions"): auto memory (MEMORY.md loaded by Claude Code itself) arrived
# in 2.1.59, Stop's prompt id (an exact turn count) in 2.1.196, plugins and skills in 2.0.
AUTO_MEMORY_SINCE = (2, 1, 59)
PROMPT_ID_SINCE = (2, 1, 196)
PLUGINS_SINCE = (2, 0, 0)


def claude_code_version(timeout: float = 10.0) -> tuple[str, tuple[int, ...] | None] | None:
    """The `claude` on PATH and the version it reports (None: it said none we can read),
    or None when there is no `claude` on PATH. Run with the user's own environment, as
    Claude Code is started; `--version` reads no settings and starts no session."""
    import re
    import shutil
    import subprocess

    binary = shutil.which("claude")
    if binary is None:
        return None
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return binary, None
    match = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", done.stdout)
    if done.returncode != 0 or match is None:
        return binary, None
    return binary, tuple(int(part) for part in match.groups())


def check_claude_code(subject: Subject) -> Check:
    """The Claude Code on PATH against what subrosa needs of it: an index Claude Code
    would neither load (before auto memory) nor be given (SessionStart injects it only
    when Claude Code will not load it) is memory lost at every session start."""
    found = claude_code_version()
    if found is None:
        return Check("claude code", True, "no `claude` on PATH: its version not checked")
    binary, version = found
    if version is None:
        return Check(
            "claude code",
            False,
            f"`{binary} --version` did not say its version.",
            "run it by hand to see why (subrosa needs Claude Code 2.1.59 or later, "
            "2.1.196 or later for everything)",
            severity="warning",
        )
    shown = ".".join(map(str, version))
    if version < AUTO_MEMORY_SINCE:
        from subrosa.claude.hooks import index_not_loaded_because

        why = index_not_loaded_because(str(subject.memory_dir), str(subject.cwd))
        if why is None:
            return Check(
                "claude code",
                False,
                f"Claude Code {shown} ({binary}) loads no auto memory (2.1.59 brought it), "
                f"and the memory dir {subject.memory_dir} is its auto-memory dir, so the "
                "SessionStart hook leaves the index to Claude Code: no session sees it.",
                'claude update; or add "autoMemoryEnabled": false to ~/.claude/settings.json '
                "(SessionStart then injects the index)",
            )
        if version < PLUGINS_SINCE:
            return Check(
                "claude code",
                False,
                f"Claude Code {shown} ({binary}) loads no plugins and no skills: use "
                "`subrosa install` for the hooks, and follow the skills' steps by hand.",
                "claude update",
                severity="warning",
            )
    if version < PROMPT_ID_SINCE:
        return Check(
            "claude code",
            False,
            f"Claude Code {shown} ({binary}) sends Stop no prompt id (2.1.196 did): the "
            "turns counted for the memory nudge can be off by a few.",
            "claude update",
            severity="warning",
        )
    return Check("claude code", True, f"Claude Code {shown} ({binary})")


def check_auto_memory(subject: Subject) -> Check:
    """Whether Claude Code's own auto memory ("remember X", the MEMORY.md it loads) goes
    to the memory dir, as the SessionStart hook compares them: when it goes elsewhere
    there are two memories, and subrosa never sees what Claude Code writes."""
    import json

    from subrosa.claude.hooks import auto_memory_target, same_dir
    from subrosa.claude.install import target_for, wanted_auto_memory_dir
    from subrosa.claude.settings import auto_memory_setting

    memory = str(subject.memory_dir)
    auto_dir, how = auto_memory_target(str(subject.cwd))
    if auto_dir is None:
        return Check("auto memory", True, f"{how} (SessionStart injects the index)")
    if same_dir(memory, auto_dir):
        return Check("auto memory", True, f"Claude Code's auto memory is the memory dir {memory}")
    local = target_for("local", subject.cwd).settings_path
    setting = f'"autoMemoryDirectory": {json.dumps(memory)}'
    found = auto_memory_setting(str(local.parent.parent))
    if found is not None:
        fix = f"set {setting} in {found[1]} (it is {found[0]} there)"
    elif wanted_auto_memory_dir(subject.memory_dir, local.parent.parent) is not None:
        fix = (
            f"subrosa install (or --scope local), which adds {setting} to {local}; "
            "with the plugin, add it yourself"
        )
    else:
        fix = f"add {setting} to {local}"
    return Check(
        "auto memory",
        False,
        f'Claude Code\'s own memory ("remember …") goes to {auto_dir}, not to the memory '
        f"dir {memory}: subrosa never sees what it writes there.",
        fix,
        severity="warning",
    )


def check_old_memory_dir(subject: Subject) -> Check | None:
    """Leaves in the auto-memory dir an older subrosa used for this project (its Claude
    Code folder spelled otherwise: an emoji, a name over 200 characters), which nothing
    reads now (subrosa.memory.leftover); None when there is no such folder. A warning:
    the leaves are safe where they are, only unseen."""
    from subrosa.memory.leftover import compare, describe, old_folder

    old = old_folder(subject.memory_dir)
    if old is None:
        return None
    found = compare(old, subject.memory_dir)
    if not found.missing and not found.differing:
        return Check(
            "old memory dir",
            True,
            f"every leaf of {old} (the memory dir of an older subrosa) is in the memory dir",
        )
    why = (
        f"{describe(found)}: it was subrosa's memory dir for this project before subrosa "
        f"spelled the folder as Claude Code does, and nothing reads it now (the memory dir "
        f"is {subject.memory_dir})."
    )
    fixes = []
    if found.missing:
        fixes.append(
            f"subrosa adopt --from {shlex.quote(str(old))} (copies the leaves the memory dir "
            "lacks with their sidecar lines, never over a file, then adopts and generates; "
            "--dry-run first to see)"
        )
    if found.differing:
        fixes.append(
            "compare each leaf named in both by hand (diff OLD NEW) and keep what you want "
            "in the memory dir's; subrosa never overwrites one"
        )
    return Check("old memory dir", False, why, "; ".join(fixes), severity="warning")


def check_index(subject: Subject) -> Check:
    index = subject.memory_dir / INDEX
    for own in (index, subject.memory_dir / ARCHIVE):
        if is_link(own):
            return Check(
                "index",
                False,
                f"{own} is a symbolic link; subrosa never reads or writes through one.",
                f"rm {shlex.quote(str(own))} (or replace it with the file itself), "
                "then subrosa generate",
            )
    if not index.exists():
        return Check("index", True, "no MEMORY.md yet", "subrosa generate", severity="warning")
    if foreign_index(subject.memory_dir) is not None:
        from subrosa.memory.generate import written_by_claude_code

        if written_by_claude_code(subject.memory_dir):
            return Check(
                "index",
                True,
                f"{index} is the one Claude Code writes from the leaves; generate replaces it.",
                "subrosa generate",
                severity="warning",
            )
        return Check(
            "index",
            False,
            f"{index} was not written by subrosa.",
            f"subrosa adopt '{subject.memory_dir}' (it keeps a backup), then subrosa generate",
        )
    from subrosa.memory.witness import load

    verdict = load().witness(subject.memory_dir)
    size = verdict["memory_md"]
    summary = f"{size['lines']} lines, {size['bytes']:,} bytes"
    if not verdict["ok"]:
        problems = [
            f"{len(verdict[key])} {key.replace('_', ' ')}"
            for key in ("orphan_files", "orphan_links", "duplicate_refs")
            if verdict[key]
        ]
        if size["lines"] > size["max_lines"] or size["bytes"] > size["max_bytes"]:
            problems.insert(
                0, f"over the {size['max_lines']}-line / {size['max_bytes']:,}-byte cap"
            )
        if verdict.get("unlinked_archive"):
            problems.append(f"{ARCHIVE} not linked")
        return Check("index", False, f"{summary}: " + ", ".join(problems) + ".", "subrosa generate")
    if verdict.get("secrets"):
        kinds = sorted({str(item.get("kind")) for item in verdict["secrets"]})
        return Check(
            "index",
            False,
            f"{summary}: {len(verdict['secrets'])} secret(s) in the index files "
            f"({', '.join(kinds)}), which are meant for git.",
            "take the secret out of the leaf's description or the fact's hook "
            "(`subrosa fact upsert --leaf FILE --hook TEXT`), then subrosa generate",
        )
    return Check("index", True, f"{summary}; every leaf referenced exactly once")


def check_leaves_registered(subject: Subject) -> Check:
    from subrosa.db import get_engine, session_scope
    from subrosa.memory import store
    from subrosa.pg import is_server

    on_disk = {p.stem for p in list_leaf_files(subject.memory_dir)}
    if not _database_ready(subject):
        return Check(
            "leaves",
            not on_disk,
            f"{len(on_disk)} leaf file(s); the database is not ready to compare.",
            "subrosa generate, once the database check passes",
            severity="warning",
        )
    try:
        with session_scope(get_engine(subject.db_url)) as session:
            registered = store.registered_slugs(session, store.Project(subject.memory_dir))
    except Exception as exc:  # noqa: BLE001 - the database check reports the cause
        said = _cut_short(subject, exc) or f"cannot read facts: {_one_line(exc)}"
        return Check("leaves", False, said, "see the database check")
    # Notes in subfolders are registered through the index links (`notes/x`).
    root = subject.memory_dir.resolve()
    on_disk |= {
        slug
        for slug in registered
        if "/" in slug and subfolder_note(subject.memory_dir, slug + ".md", root) is not None
    }
    unregistered = sorted(on_disk - registered)
    gone = sorted(registered - on_disk)
    # generate skips a leaf it cannot read, so "run generate" would not fix those.
    broken = _unreadable(subject.memory_dir, unregistered)
    unregistered = [slug for slug in unregistered if slug not in broken]
    if unregistered or gone or broken:
        parts = []
        if broken:
            first = next(iter(broken))
            parts.append(
                f"{len(broken)} leaf file(s) subrosa cannot read ({first}.md: {broken[first]}…)"
            )
        if unregistered:
            parts.append(f"{len(unregistered)} leaf file(s) not registered ({unregistered[0]}…)")
        if gone:
            parts.append(f"{len(gone)} fact(s) whose leaf is gone ({gone[0]}…)")
        fix = "subrosa generate" if unregistered else ""
        if broken:
            fix += (" and " if fix else "") + (
                "mend the unreadable leaf (or move it out of the memory dir), then subrosa generate"
            )
        shared = is_server(subject.db_url)
        if gone and shared:
            # On a team's server: a teammate's fact whose leaf this clone has not pulled
            # yet, the usual state between a push and a pull (docs/team.md).
            parts[-1] = (
                f"{len(gone)} fact(s) registered on the team's server whose leaf is not in "
                f"this memory dir ({gone[0]}…)"
            )
            fix += (" and " if fix else "") + (
                "git pull (a teammate's leaf not pulled yet), then subrosa generate; only "
                f"for a leaf deleted on purpose, `subrosa fact forget {gone[0]}`"
            )
        elif gone:
            fix += (" and " if fix else "") + (
                f"restore the leaf, or forget the fact: `subrosa fact forget {gone[0]}`"
            )
        # Only that, on a server, is a warning: nothing is wrong until a pull says so.
        severity = "warning" if shared and not (unregistered or broken) else "error"
        return Check("leaves", False, "; ".join(parts) + ".", fix, severity=severity)
    return Check("leaves", True, f"{len(on_disk)} leaves, all registered")


def check_leaf_frontmatter(subject: Subject) -> Check | None:
    """Leaves whose frontmatter gives a key twice (YAML keeps the last unsaid); None when
    none does. Read only: the user decides which line to keep."""
    from subrosa.memory.leaf import duplicate_keys, frontmatter_text, read_leaf_text

    found = []
    if not subject.memory_dir.is_dir():
        return None
    for path in list_leaf_files(subject.memory_dir):
        text = read_leaf_text(subject.memory_dir, path.name)  # None: the leaves check says
        fm = frontmatter_text(text) if text is not None else None
        keys = duplicate_keys(fm) if fm is not None else []
        if keys:
            found.append(f"{path.name}: {', '.join(keys)}")
    if not found:
        return None
    return Check(
        "leaf frontmatter",
        False,
        f"{len(found)} leaf file(s) give a frontmatter key twice, and only one of the two "
        f"is read ({'; '.join(found[:3])}{'; …' if len(found) > 3 else ''}).",
        "delete the line you do not mean in each (subrosa never rewrites a leaf for this), "
        "then subrosa generate",
        severity="warning",
    )


def _unreadable(memory_dir: Path, slugs: list[str]) -> dict[str, str]:
    """Of the leaves `slugs`, those generate cannot read, each with why."""
    from subrosa.errors import LeafError
    from subrosa.memory.leaf import parse_leaf_lenient

    problems = {}
    for slug in slugs:
        try:
            parse_leaf_lenient(memory_dir / f"{slug}.md")
        except LeafError as exc:
            problems[slug] = exc.problem
        except OSError as exc:
            problems[slug] = f"cannot be read ({exc.strerror})"
    return problems


def check_backlog(subject: Subject) -> Check:
    from subrosa.archive.pending import list_pending

    pending = list_pending()
    if pending and _may_only_read(subject):
        # A reader's hooks queue its sessions like anyone's; archiving them needs a
        # member's role (docs/team.md, "Security"): nothing to fix here.
        return Check(
            "transcript backlog",
            True,
            f"{len(pending)} ended session(s) queued on this machine, not archived: this "
            "database role may only read (a member's role archives; docs/team.md)",
        )
    if pending:
        return Check(
            "transcript backlog",
            False,
            f"{len(pending)} ended session(s) not archived yet.",
            "subrosa ingest",
            severity="warning",
        )
    return Check("transcript backlog", True, "nothing waiting")


def _on_server(subject: Subject, reader: str) -> tuple[int, int] | None:
    """What subrosa.archive.pgstore's `reader` (range_coverage, postings_coverage) says
    of the subject's server; None on SQLite, at an older schema, or when the server
    cannot be read (the database check reports the cause). By name: pgstore is
    imported only for a server."""
    from subrosa.pg import is_server

    if not is_server(subject.db_url):
        return None
    from subrosa.archive import pgstore

    try:
        found: tuple[int, int] | None = getattr(pgstore, reader)(subject.db_url)
    except Exception:  # noqa: BLE001 - the database check reports the cause
        return None
    return found


def check_search_ranges(subject: Subject) -> Check | None:
    """On a server: whether the archive's id-range indexes reach past its newest message
    (docs/team.md, "Ranges of ids"); past them, searches of common words are slower.
    Nothing on SQLite."""
    from subrosa.archive.pgstore import AHEAD

    coverage = _on_server(subject, "range_coverage")
    if coverage is None:
        return None
    newest, reach = coverage
    detail = f"id-range indexes to message {reach - 1:,}; the newest is {newest:,}"
    if reach > newest + AHEAD:
        return Check("search ranges", True, detail)
    return Check(
        "search ranges",
        False,
        detail + ": searches of common words past them are slower.",
        "subrosa db upgrade, as the database's owner (it builds them ahead; docs/team.md)",
        severity="warning",
    )


# Complete chunks of ids left unsealed that doctor lets pass: a writer may still be
# writing the one or two below the newest (ingest seals them on its next run).
UNSEALED_OK = 2


def check_postings(subject: Subject) -> Check | None:
    """On a server: how many complete chunks of message ids have their postings sealed
    (subrosa.archive.pgpostings); searches read an unsealed one through the words index,
    slower for common words. Nothing on SQLite."""
    from subrosa.archive.pgpostings import CHUNK

    coverage = _on_server(subject, "postings_coverage")
    if coverage is None:
        return None
    complete, sealed = coverage
    detail = f"{sealed:,} of {complete:,} complete chunks of {CHUNK:,} message ids sealed"
    if complete - sealed <= UNSEALED_OK:
        return Check("postings", True, detail)
    return Check(
        "postings",
        False,
        detail + ": searches of common words in the others are slower.",
        "subrosa db upgrade (seals them; any role may)",
        severity="warning",
    )


def check_search_runs(subject: Subject) -> Check | None:
    """Whether every archived message lies inside a run of its session's ids and of no
    other session's (migration 0009): a project's search asks the index only within
    them. Nothing before the database is ready."""
    if not _database_ready(subject):
        return None
    from subrosa.archive.runs import count_outside

    outside = count_outside(subject.db_url)
    if outside is None:
        return None
    if not outside:
        return Check("search runs", True, "every archived message is in its session's runs")
    return Check(
        "search runs",
        False,
        f"{outside} archived message(s) lie outside their session's runs of ids (or"
        " inside another session's): a project's search may miss them, or find them in"
        " another project.",
        "subrosa db upgrade (derives the runs again; on a server, as the tables' owner)",
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _shared(directory: Path) -> bool:
    """A folder others use too (sticky like /tmp, or not this user's): doctor never
    suggests changing its mode."""
    info = directory.stat()
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return bool(info.st_mode & stat.S_ISVTX) or not mine


def _permission_fix(db: Path | None) -> str:
    """The commands that make the database private: its files readable by the user only,
    its folder writable by the user only, and that only when the folder is the user's
    own (a database in /tmp moves out rather than /tmp changing)."""
    if db is None or not db.exists():
        return "chmod u+w on the index files"
    files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    fixes = [
        f"chmod 600 {shlex.quote(str(path))}"
        for path in files
        if path.exists() and _mode(path) & 0o077
    ]
    if _mode(db.parent) & 0o022:
        if _shared(db.parent):
            fixes = [
                f"move the database out of the shared folder {db.parent} into a folder of "
                "your own (unset SUBROSA_DB / --db to use the default, private one)"
            ]
        else:
            fixes.append(f"chmod go-w {shlex.quote(str(db.parent))}")
    return "; ".join(fixes) or "chmod u+w on the index files"


def _role_access(subject: Subject) -> tuple[str, bool, bool] | None:
    """The server's role, whether it owns the tables and whether it may write
    (subrosa.pg.role_access); None when it cannot be asked (the database check says
    why)."""
    from subrosa.pg import connect, role_access

    try:
        conn = connect(subject.db_url)
        try:
            return role_access(conn)
        finally:
            conn.close()
    except Exception:  # noqa: BLE001 - the database check reports the cause
        return None


def _may_only_read(subject: Subject) -> bool:
    """Whether the database is a server whose role may not archive (a reader's)."""
    from subrosa.pg import is_server

    access = _role_access(subject) if is_server(subject.db_url) else None
    return access is not None and not (access[1] or access[2])


def _server_role(subject: Subject) -> str:
    """What the server's role may do (docs/team.md, "Security": owner, member, reader)."""
    access = _role_access(subject)
    if access is None:
        return "the database role's grants not checked (no connection: see the database check)"
    user, owns, writes = access
    if owns:
        return f"the database role {user} owns the tables (it may migrate)"
    if writes:
        return f"the database role {user} may archive and change facts, not migrate"
    return (
        f"the database role {user} may only read (search, transcript list/show, fact "
        "list): ingest and fact changes need a member's role (docs/team.md)"
    )


def check_permissions(subject: Subject) -> Check:
    problems: list[str] = []
    found = sqlite_path(subject.db_url)
    db = Path(found) if found is not None else None
    if db is not None and db.exists():
        # The files hold the data (SQLite gives -wal and -shm the database's mode); an
        # ordinary 755 folder only lets others see their names. A folder others may
        # write to is a problem: they could swap the database.
        for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            if path.exists() and _mode(path) & 0o077:
                problems.append(f"{path} is readable by others (mode {_mode(path):o})")
        if _mode(db.parent) & 0o022:
            problems.append(f"{db.parent} is writable by others (mode {_mode(db.parent):o})")
    for name in INDEX_FILES:
        path = subject.memory_dir / name
        if path.exists() and not os.access(path, os.W_OK):
            problems.append(f"{path} is not writable")
    if problems:
        return Check("permissions", False, "; ".join(problems) + ".", _permission_fix(db))
    if db is None:  # a server's database is shared by design; its grants are its own
        return Check("permissions", True, f"index files writable; {_server_role(subject)}")
    return Check("permissions", True, "database private to you; index files writable")


CHECKS: tuple[Callable[[Subject], Check | None], ...] = (
    check_memory_dir,
    check_database,
    check_pooler,
    check_hooks,
    check_claude_code,
    check_auto_memory,
    check_old_memory_dir,
    check_mcp,
    check_index,
    check_leaves_registered,
    check_leaf_frontmatter,
    check_backlog,
    check_search_ranges,
    check_postings,
    check_search_runs,
    check_permissions,
)


def _cut_short(subject: Subject, exc: BaseException) -> str | None:
    """The one sentence for a check's statement the server cut short (a lock_timeout or
    statement_timeout in the URL's options, an administrator's cancel), else None."""
    from subrosa.errors import cut_short, cut_short_sentence

    reason = cut_short(exc)
    return None if reason is None else cut_short_sentence(hide_passwords(subject.db_url), reason)


def _one_line(exc: BaseException) -> str:
    """The driver's message of `exc` on one line, without SQLAlchemy's statement and link."""
    from subrosa.errors import one_line_reason

    return one_line_reason(str(getattr(exc, "orig", None) or exc)) or type(exc).__name__


def run_checks(subject: Subject) -> list[Check]:
    """Every check that applies (None: not here), in order; a check that crashes is
    reported, not raised."""
    results = []
    for check in CHECKS:
        try:
            result = check(subject)
        except Exception as exc:  # noqa: BLE001 - doctor must finish
            said = _cut_short(subject, exc) or repr(exc)
            result = Check(check.__name__.removeprefix("check_"), False, said)
        if result is not None:
            results.append(result)
    return results
