"""Fidelity: every bullet a user wrote survives `adopt` and `generate` (issue 17).

For each memory dir (copies of the shared corpus's, the vendored fixtures', and dirs made
here with each pattern: brackets, code spans, wrapped bullets, prose, CJK, links to notes
in subfolders, a file linked twice, type words, sections, tags, a 164-line index without
leaves, an 81-leaf dir) the real CLI runs `adopt --materialize`, `generate` twice and
`check`; then lines are added to the MEMORY.md subrosa wrote (prose, a wrapped bullet, a
bullet between two facts, brackets) and `generate` runs again. Every original bullet,
all its lines, is then looked for in the memory dir's markdown:

- identical: its lines are there as written (a leaf made from it holds them), or the
  index line of its file has the same link, title and hook (the list marker, the
  separator after the link and emphasis around it are index syntax subrosa writes its
  own way; a title that was only the file name gives way to the leaf's title);
- escaped: the same once subrosa's escapes are undone: a backslash where two brackets
  would form a link (`[x]\\(y.md)`), a tag shown as `‹tag›` (docs/security.md);
- changed: its file has an index line, with other words;
- lost: nowhere.

Also checked: the facts the bullets became keep the bullets' order (curated positions),
the sections keep their names, `check` passes (caps held), and no real leaf is left
below the budget while a leaf made from a line is in MEMORY.md.

    python bench/fidelity.py [--keep DIR]

Exit 1 when a bullet is changed or lost, or an order, section or cap check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from _table import print_table  # noqa: E402

CORPUS = REPO.parent.parent / "shared" / "corpus" / "memory"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/memory")
FIXTURES = REPO / "tests" / "fixtures" / "memory"

_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_BREAK = re.compile(r"^\s{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
# A leading link, with emphasis around it, and the separator after it.
_LEAD = re.compile(
    r"^(?:\*\*|__|\*|_)?\[((?:\\.|[^\[\]\\]|\[[^\[\]]*\])*)\]\(\s*<?([^\s()<>]+)>?\s*\)"
    r"(?:\*\*|__|\*|_)?\s*(?:(?:—|–|--|-|:|;|,|\||=>|->)\s*)?(.*)$"
)
_ITEM = re.compile(r"^- \[((?:\\.|[^\[\]\\])*)\]\(([^\s()]+)\)(?: — (.*))?$")
_ARCHIVED = re.compile(r"\s*\(archived (?:\d{4}-\d{2}-\d{2}|undated): .*\)$")
_SPACE = re.compile(r"\s+")
_ESCAPE = re.compile(r"\\([\[\]()`])")


@dataclass
class Bullet:
    number: int
    lines: list[str]
    section: str | None

    @property
    def text(self) -> str:
        return " ".join(line.strip() for line in self.lines)

    @property
    def item(self) -> str:
        first = _BULLET.match(self.lines[0])
        head = first.group(2) if first else self.lines[0]
        return " ".join([head.strip(), *(line.strip() for line in self.lines[1:])]).strip()


@dataclass
class Index:
    bullets: list[Bullet] = field(default_factory=list)
    prose: list[tuple[int, str]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)


def read_index(text: str) -> Index:
    """Bullets (with their continuation lines: indented lines right under them), prose
    lines and `##` sections, read independently of subrosa's own parser."""
    index = Index()
    section: str | None = None
    fence: str | None = None
    current: Bullet | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if fence is not None:
            index.prose.append((number, raw))
            closing = raw.strip()
            if len(closing) >= len(fence) and set(closing) == {fence[0]}:
                fence = None
            continue
        opener = _FENCE.match(raw)
        if opener:
            fence, current = opener.group(1), None
            index.prose.append((number, raw))
            continue
        if not raw.strip() or _BREAK.match(raw):
            current = None
            continue
        heading = _HEADING.match(raw)
        if heading:
            current = None
            if len(heading.group(1)) >= 2:
                section = heading.group(2).strip()
                index.sections.append(section)
            continue
        if _BULLET.match(raw):
            current = Bullet(number, [raw], section)
            index.bullets.append(current)
        elif current is not None and raw[:1] in " \t":
            current.lines.append(raw)
        else:
            current = None
            index.prose.append((number, raw))
    return index


def norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


_LT_FORMS = re.compile(r"&(?:lt|#0*60|#x0*3c);?|[＜﹤‹]", re.IGNORECASE)
_GT_FORMS = re.compile(r"&(?:gt|#0*62|#x0*3e);?|[＞﹥›]", re.IGNORECASE)


def unescape(text: str) -> str:
    """subrosa's escapes undone: backslashes it puts in brackets, and every form of `<`
    and `>` read as one (a tag, in any of them, is shown as ‹tag›)."""
    return _GT_FORMS.sub(">", _LT_FORMS.sub("<", _ESCAPE.sub(r"\1", text)))


@dataclass
class Result:
    name: str
    bullets: int = 0
    identical: int = 0
    escaped: int = 0
    changed: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    prose_lost: list[str] = field(default_factory=list)
    order_ok: bool = True
    sections_ok: bool = True
    check_ok: bool = True
    outranked: int = 0
    notes: list[str] = field(default_factory=list)


class Cli(Protocol):
    """Something that runs `subrosa ARGS` and says how it went (returncode, stdout,
    stderr): a real process here, the in-process CliRunner in tests/test_fidelity.py."""

    def __call__(self, *args: str) -> Any: ...


class Subrosa:
    """The real CLI, in a process of its own, on a throwaway HOME and database."""

    def __init__(self, home: Path) -> None:
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("SUBROSA_", "CLAUDE_"))
        }
        self.env.update(
            HOME=str(home),
            XDG_DATA_HOME=str(home / "data"),
            XDG_CONFIG_HOME=str(home / "config"),
            SUBROSA_DB=str(home / "subrosa.db"),
            TERM="dumb",
        )

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "subrosa", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=str(REPO),
            timeout=600,
        )


def markdown_files(directory: Path) -> dict[str, str]:
    found = {}
    for path in sorted(directory.rglob("*.md")):
        if ".subrosa" in path.parts or not path.is_file():
            continue
        found[str(path.relative_to(directory))] = path.read_text(encoding="utf-8", errors="replace")
    return found


def index_lines(files: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Each file the two index files link, with its line's title and hook."""
    lines: dict[str, tuple[str, str]] = {}
    for name in ("MEMORY.md", "MEMORY_archive.md"):
        for line in files.get(name, "").splitlines():
            match = _ITEM.match(line)
            if match:
                hook = _ARCHIVED.sub("", match.group(3) or "")
                lines.setdefault(unquote(match.group(2)), (match.group(1), hook))
    return lines


def _target(raw: str) -> str:
    target = unquote(raw.split("#", 1)[0])
    while target.startswith("./"):
        target = target[2:]
    return target


def classify(
    bullet: Bullet, flat: dict[str, str], lines: dict[str, tuple[str, str]]
) -> tuple[str, str | None]:
    """(identical | escaped | changed | lost, the file the bullet lives in)."""
    whole = norm(bullet.text)
    for name, text in flat.items():
        if whole in text:
            return "identical", name
    lead = _LEAD.match(bullet.item)
    if lead is None:
        return _anywhere(bullet.item, flat)
    title, target, rest = lead.group(1), _target(lead.group(2)), lead.group(3)
    found = lines.get(target)
    if found is None:
        return _anywhere(bullet.item, flat)
    shown_title, hook = found
    named = title in (target, Path(target).name, Path(target).stem)
    if (named or shown_title == title) and norm(hook) == norm(rest):
        return "identical", target
    same_title = named or unescape(shown_title) == unescape(title)
    if same_title and norm(unescape(hook)) == norm(unescape(rest)):
        return "escaped", target
    kind, where = _anywhere(bullet.item, flat)
    return ("changed", target) if kind == "lost" else (kind, where)


def _anywhere(item: str, flat: dict[str, str]) -> tuple[str, str | None]:
    """The bullet's text (without its marker) anywhere, e.g. whole in the hook of a file
    it only mentions: identical, or escaped; else lost."""
    whole = norm(item)
    for name, text in flat.items():
        if whole in text:
            return "identical", name
    for name, text in flat.items():
        if norm(unescape(whole)) in unescape(text):
            return "escaped", name
    return "lost", None


def _facts(cli: Cli, directory: Path) -> list[dict[str, Any]]:
    done = cli("--memory-dir", str(directory), "fact", "list", "--all", "--json")
    return list(json.loads(done.stdout)) if done.returncode == 0 else []


def evaluate(
    cli: Cli, directory: Path, original: Index, result: Result, old_names: set[str]
) -> None:
    files = markdown_files(directory)
    flat = {name: norm(text) for name, text in files.items()}
    lines = index_lines(files)
    facts = _facts(cli, directory)
    position = {f["path"].split(str(directory) + os.sep, 1)[-1]: f["position"] for f in facts}
    by_path = {f["path"].split(str(directory) + os.sep, 1)[-1]: f for f in facts}
    places = []
    for bullet in original.bullets:
        result.bullets += 1
        kind, where = classify(bullet, flat, lines)
        if kind == "identical":
            result.identical += 1
        elif kind == "escaped":
            result.escaped += 1
        elif kind == "changed":
            result.changed.append(f"line {bullet.number}: {bullet.text[:100]}")
        else:
            result.lost.append(f"line {bullet.number}: {bullet.text[:100]}")
        if where in position:
            places.append((bullet.number, position[where], where))
    # Each bullet's fact, in the bullets' order (a fact several bullets speak for counts
    # at its first).
    seen: set[str] = set()
    last = 0
    for number, place, where in places:
        if where in seen:
            continue
        seen.add(where)
        if place < last:
            result.order_ok = False
            result.notes.append(f"order: line {number} ({where}) at position {place} < {last}")
        last = place
    for number, text in original.prose:
        if text.strip() and norm(text) not in "\n".join(flat.values()):
            result.prose_lost.append(f"line {number}: {text[:80]}")
    kept_sections = {f["section"] for f in facts if f["section"]}
    wanted = {b.section for b in original.bullets if b.section}
    missing = {s for s in wanted if norm(s) not in {norm(k) for k in kept_sections}}
    if missing:
        result.sections_ok = False
        result.notes.append(f"sections missing: {sorted(missing)}")
    check = cli("check", "--dir", str(directory))
    result.check_ok = result.check_ok and check.returncode == 0
    index_text = files.get("MEMORY.md", "")
    in_hot = {name for name in by_path if f"]({name})" in index_text}
    made_in_hot = [n for n in in_hot if n not in old_names]
    real_below = [n for n in old_names if n in by_path and n not in in_hot]
    if made_in_hot:
        result.outranked += len(real_below)


# ---------------------------------------------------------------- the pattern dirs


def _leaf(name: str, description: str, fact_type: str = "project", body: str = "Body.") -> str:
    return (
        f"---\nname: {name.replace('_', '-')}\ndescription: {json.dumps(description)}\n"
        f"metadata:\n  type: {fact_type}\n---\n\n{body}\n"
    )


PATTERNS: dict[str, dict[str, str]] = {
    "brackets": {
        "MEMORY.md": (
            "# Memory\n\n"
            "- [Players](players.md) — state lives in players[pid]; a list [{Type, Value}, ...]\n"
            "- [Matrix](matrix.md): index with m[0][1], never m[0, 1]\n"
            "- See [the spec](spec.md) and [x](other.md) before [changing] anything\n"
            "- [[wikilink]] in a bullet, and ![image](pic.png) too\n"
            "- [ ] an open task with [brackets]\n"
            "- [x] a done task\n"
            "- A reference [link][ref] and [a](b)(c)\n"
        ),
        "players.md": _leaf("players", "Players."),
        "spec.md": _leaf("spec", "The spec."),
    },
    "code-spans": {
        "MEMORY.md": (
            "- [Git](git.md) — use `git ls-tree`, not `git show <rev>:<path>`\n"
            "- [Spans](spans.md) — `` a ` b `` and `x](y)` and ```inline fence```\n"
            "- [Shell](shell.md) - `cd dir && make | tee log; echo $?`\n"
            "- Run `make test` before `git push` (no file)\n"
        ),
        "git.md": _leaf("git", "Git."),
        "spans.md": _leaf("spans", "Spans."),
    },
    "wrapped": {
        "MEMORY.md": (
            "- [Long](long.md) — a hook that goes on\n"
            "  onto a second line\n"
            "  and a third, with [brackets] and a [link](long.md)\n"
            "- [Tabbed](tabbed.md) — wrapped with a tab\n"
            "\tlike this\n"
            "- a bullet with no link\n"
            "    that wraps deeper\n"
            "  - a sub-bullet\n"
            "    with its own continuation\n"
            "1. [Numbered](numbered.md) — a numbered item\n"
            "   wrapped under it\n"
        ),
        "long.md": _leaf("long", "Long."),
        "tabbed.md": _leaf("tabbed", "Tabbed."),
    },
    "prose": {
        "MEMORY.md": (
            "# Memory Index\n\n"
            "Committed project knowledge. One line per memory; the file it points\n"
            "to holds the full fact. Add a pointer when you add a memory file.\n\n"
            "- [Alpha](alpha.md) — the first fact\n\n"
            "A paragraph between two bullets.\n\n"
            "- [Beta](beta.md) — the second fact\n\n"
            "```bash\nmake test\n```\n\n"
            "| tool | why |\n| --- | --- |\n| uv | speed |\n\n"
            "> a quoted remark\n\n"
            "<!-- a comment someone left -->\n"
            "Last words, at the end.\n"
        ),
        "alpha.md": _leaf("alpha", "Alpha."),
        "beta.md": _leaf("beta", "Beta."),
    },
    "cjk": {
        "MEMORY.md": (
            "# 记忆\n\n## 项目\n"
            "- [构建](构建.md) — 构建必须可复现，工具版本固定【重要】\n"
            "- [日本語](nihongo.md)：コードレビューは［必須］です\n"
            "- [한국어](korean.md) — 빌드는 항상 재현 가능해야 한다 [주의]\n"
            "- 没有文件的条目，也要保留\n"
        ),
        "构建.md": _leaf("构建", "构建。"),
        "nihongo.md": _leaf("nihongo", "日本語。"),
    },
    "subfolders": {
        "MEMORY.md": (
            "- [Design](notes/design.md) — the design note lives in a subfolder\n"
            "- [Deep](a/b/deep.md) — two folders down\n"
            "- [Dotted](./notes/dotted.md) — linked with ./\n"
            "- [Gone](notes/gone.md) — a subfolder note that does not exist\n"
            "- [Hidden](.private/secret.md) — a hidden folder is not read\n"
            "- [Top](top.md) — a leaf at the top\n"
        ),
        "notes/design.md": "# Design\n\nThe design.\n",
        "a/b/deep.md": _leaf("deep", "Deep."),
        "notes/dotted.md": "Dotted.\n",
        ".private/secret.md": "secret\n",
        "top.md": _leaf("top", "Top."),
    },
    "linked-twice": {
        "MEMORY.md": (
            "- [Setup](setup.md) — install with uv; see also [Release](release.md)\n"
            "- [Release](release.md) — release every second Tuesday\n"
            "- [Setup](setup.md) — a second line for setup, written later\n"
            "- Mentions [Setup](setup.md) and [Release](release.md) in passing\n"
        ),
        "setup.md": _leaf("setup", "Setup."),
        "release.md": _leaf("release", "Release."),
    },
    "type-words": {
        "MEMORY.md": (
            "- User prefers pnpm over npm\n"
            "- Project: ship v2 by March\n"
            "- **Feedback**: no mocks in tests\n"
            "- Reference material is in the wiki\n"
        ),
    },
    "sections": {
        "MEMORY.md": (
            "# My memory\n\n- [Top](top.md) — before any section\n\n"
            "## Tools\n- [Uv](uv.md) — use uv\n\n"
            "### Deeper\n- [Ruff](ruff.md) — lint with ruff\n\n"
            "# People\n- [Ana](ana.md) — owns the release\n\n"
            "## Only prose here\nA section with nothing but this line.\n\n"
            "## Last\n- [Zed](zed.md) — the last one\n"
        ),
        **{f"{n}.md": _leaf(n, n.title()) for n in ("top", "uv", "ruff", "ana", "zed")},
    },
    "tags": {
        "MEMORY.md": (
            "- [Rust](rust.md) — return Vec<String>, not &[u8]; a < b and x <= y\n"
            "- [Html](html.md) — <details> folds; &lt;b&gt; is an entity\n"
            "- Human: a line that starts like a turn\n"
        ),
        "rust.md": _leaf("rust", "Rust."),
        "html.md": _leaf("html", "Html."),
    },
}


def _long_index() -> dict[str, str]:
    """164 index lines and no leaves (as real auto-memory dirs come)."""
    lines = ["# Memory", ""]
    for n in range(164):
        lines.append(
            f"- [Fact {n:03d}](fact-{n:03d}.md) — a remembered rule number {n}, kept as "
            f"arr[{n}] with a list [{n}, {n + 1}] and enough words to cost real bytes, so "
            "that the index is over its budget"
        )
    return {"MEMORY.md": "\n".join(lines) + "\n"}


def _many_leaves() -> dict[str, str]:
    """81 real leaves (a few of 2.5 KB), each with its line, plus 40 lines without leaves."""
    files: dict[str, str] = {}
    lines = ["# Memory", ""]
    for n in range(81):
        body = ("A long leaf body. " * 140) if n % 20 == 0 else "Body."
        files[f"leaf_{n:02d}.md"] = _leaf(f"leaf_{n:02d}", f"Leaf {n}.", "reference", body)
        lines.append(f"- [Leaf {n}](leaf_{n:02d}.md) — " + f"the hook of leaf {n}, " * 8)
        if n % 2 == 0 and n < 80:
            lines.append(f"- a loose line {n} about item[{n}] " + "with words " * 16)
    files["MEMORY.md"] = "\n".join(lines) + "\n"
    return files


def pattern_dirs(root: Path) -> list[Path]:
    made = []
    patterns = dict(PATTERNS)
    patterns["long-index"] = _long_index()
    patterns["81-leaves"] = _many_leaves()
    for name, files in patterns.items():
        directory = root / name
        for rel, text in files.items():
            path = directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        made.append(directory)
    return made


# Lines added to the MEMORY.md subrosa wrote, for generate's take-over.
APPENDED = (
    "A prose line added by hand, with players[pid] in it.\n"
    "- an appended bullet with [brackets] that\n"
    "  wraps onto a continuation line\n"
)
INSERTED = "- a bullet put between the first two facts, with m[0][1]\n"


def run_dir(cli: Cli, source: Path, work: Path) -> Result:
    directory = work / source.name
    shutil.copytree(source, directory)
    result = Result(source.name)
    original = (directory / "MEMORY.md").read_text(encoding="utf-8")
    old_names = {p.name for p in directory.glob("*.md") if p.name != "MEMORY.md"}
    adopted = cli("adopt", str(directory), "--materialize")
    if adopted.returncode != 0:
        result.notes.append(f"adopt exit {adopted.returncode}: {adopted.stderr.strip()[:200]}")
        result.check_ok = False
    for _ in range(2):
        cli("--memory-dir", str(directory), "generate")
    evaluate(cli, directory, read_index(original), result, old_names)

    # generate's take-over: lines added to the MEMORY.md subrosa wrote.
    index = directory / "MEMORY.md"
    text = index.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    items = [i for i, line in enumerate(lines) if line.startswith("- [")]
    inserted_text = INSERTED if len(items) >= 2 else ""
    if inserted_text:
        lines.insert(items[1], inserted_text)
    index.write_text("".join(lines) + APPENDED, encoding="utf-8")
    added = read_index(inserted_text + APPENDED)
    generated = cli("--memory-dir", str(directory), "generate")
    if generated.returncode != 0:
        result.notes.append(f"generate exit {generated.returncode}: {generated.stderr[:200]}")
    after = Result(source.name)
    evaluate(cli, directory, added, after, old_names)
    result.bullets += after.bullets
    result.identical += after.identical
    result.escaped += after.escaped
    result.changed += [f"(appended) {c}" for c in after.changed]
    result.lost += [f"(appended) {c}" for c in after.lost]
    result.prose_lost += [f"(appended) {c}" for c in after.prose_lost]
    result.check_ok = result.check_ok and after.check_ok
    if inserted_text:
        # It keeps its place: right after the fact whose line was above it.
        above = next(
            (m for m in (_ITEM.match(x.rstrip("\n")) for x in reversed(lines[: items[1]])) if m),
            None,
        )
        facts = _facts(cli, directory)
        order = [f["path"].split(str(directory) + os.sep, 1)[-1] for f in facts]
        made = next((p for p in order if p.startswith("a_bullet_put_between")), None)
        want = order.index(unquote(above.group(2))) + 1 if above else 0
        if made is None or order.index(made) != want:
            result.order_ok = False
            where = order.index(made) if made else None
            result.notes.append(f"the inserted bullet is at {where}, not {want}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="Keep the memory dirs and database here.")
    args = parser.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="subrosa-fidelity-"))
    work.mkdir(parents=True, exist_ok=True)
    sources = sorted(FIXTURES.iterdir())
    if CORPUS.is_dir():
        sources += sorted(CORPUS.iterdir())
    else:
        print(f"(the shared corpus is not at {CORPUS}: its dirs are left out)")
    sources += pattern_dirs(work / "patterns")
    results = []
    for source in sources:
        cli = Subrosa(work / "home" / source.name)
        results.append(run_dir(cli, source, work / "runs"))
    rows = []
    for r in results:
        rows.append(
            (
                r.name,
                str(r.bullets),
                str(r.identical),
                str(r.escaped),
                str(len(r.changed)),
                str(len(r.lost)),
                str(len(r.prose_lost)),
                "ok" if r.order_ok else "BROKEN",
                "ok" if r.sections_ok else "BROKEN",
                "ok" if r.check_ok else "FAIL",
                str(r.outranked),
            )
        )
    total = [sum(int(row[i]) for row in rows) for i in range(1, 7)]
    rows.append(("all", *map(str, total), "", "", "", str(sum(r.outranked for r in results))))
    header = (
        "memory dir",
        "bullets",
        "identical",
        "escaped",
        "changed",
        "lost",
        "prose lost",
        "order",
        "sections",
        "check",
        "real leaves outranked",
    )
    print_table(rows, header)
    bad = False
    for r in results:
        for what in (*r.changed, *r.lost, *r.prose_lost, *r.notes):
            print(f"{r.name}: {what}")
            bad = True
        bad = bad or not (r.order_ok and r.sections_ok and r.check_ok) or r.outranked > 0
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
