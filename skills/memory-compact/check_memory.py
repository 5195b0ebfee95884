#!/usr/bin/env python3
"""The memory witness: re-derive the index invariants from disk alone, let the exit code speak.

Standard library only, read-only, one file: it works wherever this skill is copied
(`.claude/skills/memory-compact/`), with or without subrosa installed. `subrosa check`
loads and runs this very file, so both give the same verdicts, JSON and exit codes.

Checks, on a memory dir:
1. MEMORY.md is within the harness load cap (default 200 lines / 25,000 bytes;
   bytes are UTF-8 bytes of the whole file, newlines included).
2. The bijection over MEMORY.md + MEMORY_archive.md: every topic `.md` file in the
   dir is linked exactly once across the two files; no orphan files (on disk, linked
   from neither), no orphan links (linked, not on disk), no duplicate references.
   When MEMORY_archive.md exists, MEMORY.md must link it (else the cold tier is hidden).
3. Dangling `[[wikilinks]]` in topic files: advisory, fatal only with --strict.
4. Secrets (a token, a key, a password assignment) in MEMORY.md or MEMORY_archive.md,
   files meant for git: advisory, fatal only with --strict. The rules are subrosa's
   own, in `secret_scan.py` beside this file (a copy of subrosa/secrets.py, standard
   library only); without it this check is skipped and says so. The secret itself
   is never printed: its kind, file and line are.

Exit 0 clean, 1 a hard invariant failed, 2 bad usage (e.g. no such directory).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import unquote

INDEX = "MEMORY.md"
ARCHIVE = "MEMORY_archive.md"
INDEX_FILES = (INDEX, ARCHIVE)
MAX_LINES = 200
MAX_BYTES = 25_000

# An inline Markdown link: [text](target "optional title"). Text may nest one level of
# brackets and hold backslash escapes (`[players\\[pid\\]](x.md)`: a `\\]` closes
# nothing, as in CommonMark); the target has no spaces (subrosa percent-encodes them)
# or is <angled>.
LINK = re.compile(
    r"\[(?:\\[^\n]|[^\[\]\\\n]|\[(?:\\[^\n]|[^\[\]\\\n])*\])*\]"
    r"\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)(?:\s+\"[^\"\n]*\")?\s*\)"
)
WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:[#|][^\]\n]*)?\]\]")
# A code span (CommonMark: a run of backticks closed by a run as long, on one line), not
# opened by an escaped backtick (`\``, as a title subrosa writes holds one). A link in it
# is text about a link (`[text](file.md)` as an example), no reference: subrosa's
# take-over reads it so too (subrosa/memory/indexfile.py uses this very pattern).
CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")
# The opening line of a fenced code block: three or more backticks (whose info string
# holds no backtick: "```x```" is a code span) or tildes. The block runs to a line of
# the same character at least as long, or to the end of the file; the links in it are
# text too, for the witness as for subrosa's take-over (which uses these two rules).
FENCE = re.compile(r"^\s{0,3}(`{3,}(?=[^`\n]*$)|~{3,})")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def md_targets(text: str) -> list[str]:
    """The local `.md` files that `text` links to, in order, as filenames relative to its
    dir; a link in a code span is text, not a reference."""
    if "`" in text:
        text = CODE_SPAN.sub(" ", text)
    found = []
    for match in LINK.finditer(text):
        raw = match.group(1).strip()
        if raw.startswith("<") and raw.endswith(">"):
            raw = raw[1:-1].strip()
        raw = raw.split("#", 1)[0].split("?", 1)[0]
        if not raw or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", raw) or raw.startswith("/"):
            continue  # an anchor, a URL, or an absolute path: not a topic file
        target = unquote(raw)
        while target.startswith("./"):
            target = target[2:]
        if target.lower().endswith(".md"):
            found.append(target)
    return found


def fence_closes(line: str, fence: str) -> bool:
    """Whether `line` closes the fenced block that `fence` (its opening run) opened."""
    closing = line.strip()
    return len(closing) >= len(fence) and set(closing) == {fence[0]}


def without_fences(text: str) -> str:
    """`text` with the lines of its fenced code blocks (fences included) emptied."""
    if "```" not in text and "~~~" not in text:
        return text
    lines = text.splitlines(keepends=True)
    fence: str | None = None
    for number, line in enumerate(lines):
        if fence is not None:
            if fence_closes(line, fence):
                fence = None
        elif opener := FENCE.match(line.rstrip("\r\n")):
            fence = opener.group(1)
        else:
            continue
        lines[number] = line[len(line.rstrip("\r\n")) :]
    return "".join(lines)


def topic_files(directory: Path) -> list[str]:
    """Every topic `.md` file directly in the dir (the two index files excluded); a symlink
    counts only when it resolves to a file inside the dir (as subrosa's own listing)."""
    root = directory.resolve()
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.suffix == ".md"
        and p.name not in INDEX_FILES
        and p.is_file()
        and not (p.is_symlink() and p.resolve().parent != root)
    )


def _read(path: Path) -> str | None:
    """A regular file's text; None when there is none (a FIFO or a device is no file)."""
    if not path.is_file():
        return None
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


@functools.cache
def secret_scan() -> ModuleType | None:
    """subrosa's secret rules, from `secret_scan.py` beside this file, or None."""
    path = Path(__file__).with_name("secret_scan.py")
    spec = importlib.util.spec_from_file_location("_subrosa_secret_scan", path)
    if not path.is_file() or spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def find_secrets(texts: dict[str, str]) -> list[dict[str, Any]] | None:
    """Each secret in the named texts as {"file", "line", "kind"}; None when the rules
    are missing."""
    scan = secret_scan()
    if scan is None:
        return None
    found = []
    for name, text in texts.items():
        for span in scan.look_through(text, scan.find_spans):
            line = text.count("\n", 0, span.start) + 1
            found.append({"file": name, "line": line, "kind": span.kind})
    return found


def line_count(text: str) -> int:
    """Lines as Claude Code loads them: split at `\n` only (U+2028, U+0085, a form feed
    or a lone `\r` inside a line do not end it); a last line without `\n` counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def resolve_wikilink(target: str, stems: set[str]) -> str | None:
    """The leaf stem a `[[target]]` names (snake_case or kebab-case spelling), or None."""
    name = target.strip().removesuffix(".md")
    for candidate in (name, name.replace("-", "_"), name.replace("_", "-")):
        if candidate in stems:
            return candidate
    return None


def witness(
    directory: Path, *, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES, strict: bool = False
) -> dict[str, Any]:
    """The verdict on `directory`, as the JSON document `--json` prints."""
    index_path = directory / INDEX
    index_bytes = index_path.read_bytes() if index_path.is_file() else b""
    index_text = index_bytes.decode("utf-8", errors="replace")
    archive_text = _read(directory / ARCHIVE)
    lines = line_count(index_text)

    files = topic_files(directory)
    counts: dict[str, int] = {}
    links_archive = False
    for text in (index_text, archive_text or ""):
        for target in md_targets(without_fences(text)):
            if target == ARCHIVE and text is index_text:
                links_archive = True
            if target in INDEX_FILES:
                continue
            counts[target] = counts.get(target, 0) + 1
    orphan_files = [name for name in files if name not in counts]
    orphan_links = sorted(t for t in counts if not (directory / t).is_file())
    duplicate_refs = sorted(t for t, n in counts.items() if n > 1)
    unlinked_archive = archive_text is not None and not links_archive

    stems = {Path(name).stem for name in files}
    dangling = []
    for name in files:
        body = _read(directory / name) or ""
        seen: set[str] = set()
        for match in WIKILINK.finditer(body):
            target = match.group(1).strip()
            if target not in seen and resolve_wikilink(target, stems) is None:
                dangling.append({"file": name, "target": target})
            seen.add(target)

    secrets = find_secrets({INDEX: index_text, ARCHIVE: archive_text or ""})

    ok = not (
        lines > max_lines
        or len(index_bytes) > max_bytes
        or orphan_files
        or orphan_links
        or duplicate_refs
        or unlinked_archive
        or (strict and dangling)
        or (strict and secrets)
    )
    return {
        "ok": ok,
        "dir": str(directory),
        "memory_md": {
            "lines": lines,
            "bytes": len(index_bytes),
            "max_lines": max_lines,
            "max_bytes": max_bytes,
        },
        "orphan_files": orphan_files,
        "orphan_links": orphan_links,
        "duplicate_refs": duplicate_refs,
        "unlinked_archive": unlinked_archive,
        "dangling_wikilinks": dangling,
        "secrets": secrets,
        "strict": strict,
    }


def report_lines(verdict: dict[str, Any]) -> list[str]:
    """The verdict for people, one problem per line."""
    memory = verdict["memory_md"]
    out = [
        f"MEMORY.md: {memory['lines']} lines (cap {memory['max_lines']}), "
        f"{memory['bytes']:,} bytes (cap {memory['max_bytes']:,})"
    ]
    if memory["lines"] > memory["max_lines"]:
        out.append(f"FAIL over the line cap by {memory['lines'] - memory['max_lines']}")
    if memory["bytes"] > memory["max_bytes"]:
        out.append(f"FAIL over the byte cap by {memory['bytes'] - memory['max_bytes']:,}")
    for name in verdict["orphan_files"]:
        out.append(f"FAIL orphan file: {name} (linked from neither {INDEX} nor {ARCHIVE})")
    for name in verdict["orphan_links"]:
        out.append(f"FAIL orphan link: {name} (linked, but not on disk)")
    for name in verdict["duplicate_refs"]:
        out.append(f"FAIL duplicate reference: {name} (linked more than once)")
    if verdict["unlinked_archive"]:
        out.append(f"FAIL {INDEX} does not link {ARCHIVE}: the cold tier is hidden")
    level = "FAIL" if verdict["strict"] else "note"
    for item in verdict["dangling_wikilinks"]:
        out.append(f"{level} dangling wikilink: [[{item['target']}]] in {item['file']}")
    if verdict["secrets"] is None:
        out.append("note: secret_scan.py is not beside check_memory.py: secrets not checked")
    for item in verdict["secrets"] or ():
        out.append(
            f"{level} secret: a {item['kind']} on line {item['line']} of {item['file']}"
            " (files meant for git: take it out of the fact's hook or description)"
        )
    out.append("OK" if verdict["ok"] else "NOT OK")
    return out


def _main_repo_root(gitfile: Path) -> Path | None:
    """For a worktree (`.git` is a file): the main repository, through gitdir and commondir."""
    try:
        text = gitfile.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:") :].strip())
    if not gitdir.is_absolute():
        gitdir = (gitfile.parent / gitdir).resolve()
    try:
        common = Path((gitdir / "commondir").read_text(encoding="utf-8").strip())
    except OSError:
        return gitfile.parent
    if not common.is_absolute():
        common = (gitdir / common).resolve()
    return common.parent


def default_dir(env: dict[str, str] | None = None, cwd: str | None = None) -> Path:
    """The memory dir subrosa resolves (subrosa.paths.resolve_memory_dir; a test keeps the
    two in step): SUBROSA_MEMORY_DIR; else the nearest `.claude/memory` from
    $CLAUDE_PROJECT_DIR (or the working directory) up to the top of its git checkout,
    or in a worktree without one the main repository's; else Claude Code's auto-memory
    dir, keyed by the main repository's root (worktrees share it)."""
    env = dict(os.environ) if env is None else env
    if env.get("SUBROSA_MEMORY_DIR"):
        return Path(env["SUBROSA_MEMORY_DIR"]).expanduser().absolute()
    start = Path(env.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd()).expanduser().absolute()
    top = next((p for p in (start, *start.parents) if (p / ".git").exists()), None)
    folders = [start] if top is None else [start, *start.parents]
    for folder in folders:
        if (folder / ".claude" / "memory").is_dir():
            return folder / ".claude" / "memory"
        if folder == top:
            break
    root = top or start
    if top is not None and (top / ".git").is_file():
        root = _main_repo_root(top / ".git") or top
        if root != top and (root / ".claude" / "memory").is_dir():
            return root / ".claude" / "memory"
    claude = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")
    return claude.expanduser() / "projects" / _NOT_ALNUM.sub("-", str(root)) / "memory"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="check_memory.py",
        description="The memory witness: MEMORY.md within the load cap, every topic file "
        "linked exactly once across MEMORY.md + MEMORY_archive.md, and no secret in either.",
    )
    p.add_argument("--dir", help="The memory dir (default: this project's Claude Code memory).")
    p.add_argument(
        "--strict",
        action="store_true",
        help="Also fail on dangling [[wikilinks]] and on secrets in the index files.",
    )
    p.add_argument("--json", action="store_true", help="Print one JSON document on stdout.")
    p.add_argument("--max-lines", type=int, default=MAX_LINES, help="Line cap (default 200).")
    p.add_argument("--max-bytes", type=int, default=MAX_BYTES, help="Byte cap (default 25000).")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the witness; return the exit code (0 clean, 1 failed, 2 bad usage)."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    directory = Path(args.dir).expanduser() if args.dir else default_dir()
    if args.max_lines <= 0 or args.max_bytes <= 0:
        print("Error: --max-lines and --max-bytes must be positive.", file=sys.stderr)
        return 2
    if not directory.is_dir():
        print(
            f"Error: {directory}: no such memory directory; point at yours with --dir DIR "
            "or SUBROSA_MEMORY_DIR.",
            file=sys.stderr,
        )
        return 2
    for name in INDEX_FILES:
        # A repository may hold `MEMORY.md -> ~/.ssh/id_rsa`; whatever the witness reads
        # it reports to the agent that runs it.
        if (directory / name).is_symlink():
            print(
                f"Error: {directory / name}: is a symbolic link; the witness does not read "
                "through one (replace it with the file itself).",
                file=sys.stderr,
            )
            return 2
    try:
        verdict = witness(
            directory, max_lines=args.max_lines, max_bytes=args.max_bytes, strict=args.strict
        )
    except OSError as exc:
        print(
            f"Error: {exc.filename or directory}: cannot be read ({exc.strerror}).", file=sys.stderr
        )
        return 2
    if args.json:
        print(json.dumps(verdict, ensure_ascii=False, indent=2))
    else:
        print("\n".join(report_lines(verdict)))
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
