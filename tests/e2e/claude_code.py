"""The real Claude Code CLI, installed from npm and run offline against `FakeAnthropic`.

Standard library only (plus filelock, a subrosa dependency, for the install lock), and no
import of subrosa: the e2e tests drive subrosa through its command line only, so a
reorganization of the package cannot break them.

- `install_claude_code(version, cache)` installs `@anthropic-ai/claude-code@VERSION` with
  npm into `<cache>/claude-code-VERSION/` once (later runs, and other worktrees, reuse
  it) and returns its `claude` binary. It raises `Unavailable` with one sentence when it
  cannot (no npm, no network).
- `ClaudeProject` is one throwaway git project with its own HOME, Claude Code config dir
  and subrosa data dir, wired to a `FakeAnthropic`: `.run(prompt)` is one `claude -p`
  session, `.conversation()` a multi-turn one, `.subrosa(...)` the subrosa command with
  the same environment the hooks get.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tests.e2e.fake_anthropic import FakeAnthropic

T = TypeVar("T")

PACKAGE = "@anthropic-ai/claude-code"
# A version known to run offline against the fake API (no login, no network at start).
# Change it on purpose, run the e2e suite, and say what changed in the commit.
PINNED_VERSION = "2.1.332"
INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 180
# Keep Claude Code off the network and quiet: no telemetry, error reports, update checks,
# feedback surveys or other non-essential calls; nothing but the fake API is ever asked.
OFFLINE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_UPDATES": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "DISABLE_GROWTHBOOK": "1",
}
# The tools a scripted model may call without a permission prompt (`-p` has nobody to
# ask). Not --dangerously-skip-permissions: Claude Code refuses it when run as root, as
# in CI containers.
ALLOWED_TOOLS = ("Bash", "Skill", "Read", "Write", "Edit")


class Unavailable(Exception):
    """Claude Code cannot be installed or run here; the message is the skip reason."""


@dataclass(frozen=True)
class ClaudeCode:
    """An installed Claude Code: its binary and the version it reports."""

    binary: Path
    version: str

    def at_least(self, version: str) -> bool:
        """Whether this Claude Code is `version` or newer (for what changed between
        versions: docs/claude-code.md, "Claude Code versions")."""
        return _version_key(self.version) >= _version_key(version)


def _version_key(version: str) -> tuple[int, ...]:
    """`2.1.63` as (2, 1, 63); a suffix (`-beta`) and what is not a number are left out."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("-")[0]))


# --- installing -----------------------------------------------------------------------


def default_cache_dir(env: dict[str, str] | None = None) -> Path:
    """`$SUBROSA_E2E_CACHE`, else `$XDG_CACHE_HOME/subrosa-e2e`, else `~/.cache/subrosa-e2e`."""
    env = dict(os.environ) if env is None else env
    if env.get("SUBROSA_E2E_CACHE"):
        return Path(env["SUBROSA_E2E_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base).expanduser() / "subrosa-e2e"


def reported_version(binary: Path) -> str | None:
    """What `claude --version` says (e.g. `2.1.332`), or None when it does not run."""
    with tempfile.TemporaryDirectory(prefix="claude-version-") as home:
        try:
            done = subprocess.run(
                [str(binary), "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                env={"PATH": os.environ.get("PATH", ""), "HOME": home, **OFFLINE_ENV},
            )
        except (OSError, subprocess.SubprocessError):
            return None
    match = re.match(r"\s*(\d+\.\d+\.\d+\S*)", done.stdout)
    return match.group(1) if done.returncode == 0 and match else None


def _binary_in(prefix: Path, version: str) -> Path | None:
    """The installed `claude` that runs and reports `version`.

    `node_modules/.bin/claude` first; when npm skipped the package's postinstall (which
    puts the native binary in place of a stub), the platform package's binary itself.
    """
    modules = prefix / "node_modules"
    candidates = [modules / ".bin" / "claude"]
    candidates += sorted((modules / "@anthropic-ai").glob("claude-code-*/claude"))
    for candidate in candidates:
        if candidate.is_file() and reported_version(candidate) == version:
            return candidate
    return None


def install_claude_code(version: str, cache: Path) -> ClaudeCode:
    """Claude Code `version`, installed with npm under `cache` unless it already is."""
    target = cache / f"claude-code-{version}"
    found = _binary_in(target, version)
    if found:
        return ClaudeCode(found, version)
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise Unavailable(
            f"the Claude Code e2e tests need node and npm on PATH to install {PACKAGE}@{version}"
        )
    from filelock import FileLock

    cache.mkdir(parents=True, exist_ok=True)
    # Several pytest runs (other worktrees) may start at once: one installs, the others wait.
    with FileLock(str(cache / f"claude-code-{version}.lock"), timeout=INSTALL_TIMEOUT_S):
        found = _binary_in(target, version)
        if found:
            return ClaudeCode(found, version)
        staging = Path(tempfile.mkdtemp(prefix=f".claude-code-{version}-", dir=cache))
        try:
            _npm_install(npm, staging, version)
            if _binary_in(staging, version) is None:
                raise Unavailable(
                    f"npm installed {PACKAGE}@{version}, but no `claude` in it runs and reports "
                    f"{version} (unsupported platform?)"
                )
            if target.exists():
                shutil.rmtree(target)  # an earlier, broken install
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    found = _binary_in(target, version)
    if found is None:
        raise Unavailable(f"{target}: the installed Claude Code does not run")
    return ClaudeCode(found, version)


def _npm_install(npm: str, prefix: Path, version: str) -> None:
    argv = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--no-package-lock",
        "--no-update-notifier",
        "--loglevel=error",
        f"{PACKAGE}@{version}",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Unavailable(
            f"npm install {PACKAGE}@{version} took over {INSTALL_TIMEOUT_S} s"
        ) from None
    if done.returncode != 0:
        why = _npm_error(done.stderr) or f"exit {done.returncode}"
        raise Unavailable(f"npm could not install {PACKAGE}@{version} (offline?): {why}")


def _npm_error(stderr: str) -> str | None:
    """npm's telling error line ("No matching version ...", "network request ... failed")."""
    for line in stderr.splitlines():
        text = re.sub(r"^npm (error|ERR!) ", "", line.strip())
        if text == line.strip() or text.startswith(
            ("code ", "syscall ", "errno ", "A complete log")
        ):
            continue
        return text.removeprefix("notarget ")
    return None


def claude_code_from_env(env: dict[str, str]) -> ClaudeCode:
    """`$SUBROSA_E2E_CLAUDE` (a `claude` binary to use as it is), else the pinned version
    (`$SUBROSA_E2E_CLAUDE_VERSION` overrides it) installed from npm."""
    given = env.get("SUBROSA_E2E_CLAUDE")
    if given:
        binary = Path(given).expanduser()
        version = reported_version(binary)
        if version is None:
            raise Unavailable(f"SUBROSA_E2E_CLAUDE={given} does not run `--version`")
        return ClaudeCode(binary, version)
    version = env.get("SUBROSA_E2E_CLAUDE_VERSION") or PINNED_VERSION
    return install_claude_code(version, default_cache_dir(env))


def subrosa_bin_dir() -> Path:
    """The bin dir of the venv running the tests, which holds this checkout's `subrosa`."""
    for candidate in (Path(sys.prefix) / "bin", Path(sys.executable).parent):
        if (candidate / "subrosa").is_file():
            return candidate
    found = shutil.which("subrosa")
    if found is None:
        raise Unavailable(
            "no `subrosa` command beside this Python; install the checkout: pip install -e ."
        )
    return Path(found).parent


# --- running --------------------------------------------------------------------------


def encode_project_path(path: Path) -> str:
    """Claude Code's folder name for a project: every UTF-16 code unit that is not an
    ASCII letter or digit becomes `-` (an emoji, two code units, gives `--`); a name over
    200 characters is cut to 200 and followed by `-` and the path's hash (a Java-style
    string hash over its code units, absolute, in base 36). Read from Claude Code
    2.1.332's own code; its docs (sessions.md) say the same in words."""
    text = str(path)
    units = text.encode("utf-16-le", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
    name = "".join(chr(c) if chr(c).isascii() and chr(c).isalnum() else "-" for c in codes)
    if len(name) <= 200:
        return name
    digest = 0
    for code in codes:
        digest = ((digest * 31 + code + 2**31) % 2**32) - 2**31
    return f"{name[:200]}-{_base36(abs(digest))}"


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
        if not number:
            return digits


@dataclass
class Run:
    """One finished `claude -p` process."""

    session_id: str
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> Run:
        assert self.returncode == 0, f"claude exited {self.returncode}\n{self.stderr}"
        return self


@dataclass
class ClaudeProject:
    """A git project, a HOME and a subrosa data dir under `root`, and Claude Code wired to
    `api`. Everything runs with `env`: nothing from the machine's own set-up leaks in."""

    claude: ClaudeCode
    api: FakeAnthropic
    root: Path
    subrosa_bin: Path
    env: dict[str, str] = field(init=False)
    # Add to it for other tools, e.g. an MCP server's "mcp__subrosa__search".
    allowed_tools: list[str] = field(default_factory=lambda: list(ALLOWED_TOOLS))
    # The project's folder under `root` (a path with spaces, non-ASCII, several levels).
    project_name: str = "project"

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.home = self.root / "home"
        self.project = self.root / self.project_name
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        node_dir = Path(shutil.which("node") or "/usr/bin/node").parent
        path = [str(self.subrosa_bin), str(node_dir), "/usr/local/bin", "/usr/bin", "/bin"]
        self.env = {
            "PATH": os.pathsep.join(dict.fromkeys(path)),
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "e2e"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "TMPDIR": str(self.root / "tmp"),
            "CLAUDE_CODE_TMPDIR": str(self.root / "tmp"),
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-fake-key",
            "GIT_AUTHOR_NAME": "e2e",
            "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
            "GIT_COMMITTER_NAME": "e2e",
            "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
            **OFFLINE_ENV,
        }
        self.git("init", "-q")

    # --- places ------------------------------------------------------------------------

    @property
    def claude_dir(self) -> Path:
        return self.home / ".claude"

    def transcript_dir(self, cwd: Path | None = None) -> Path:
        """Where Claude Code keeps the transcripts of sessions started in `cwd`."""
        return self.claude_dir / "projects" / encode_project_path(cwd or self.project)

    def transcript(self, session_id: str) -> Path:
        """The transcript file of a session (whatever folder Claude Code filed it in)."""
        found = sorted(self.claude_dir.glob(f"projects/*/{session_id}.jsonl"))
        assert found, f"no transcript for session {session_id}"
        return found[0]

    def auto_memory_dir(self, cwd: Path | None = None) -> Path:
        """Claude Code's own auto-memory dir for the project."""
        return self.transcript_dir(cwd) / "memory"

    @property
    def settings_file(self) -> Path:
        return self.project / ".claude" / "settings.json"

    # --- commands ------------------------------------------------------------------------

    def git(self, *args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=self.project, env=self.env, check=True, capture_output=True
        )

    def subrosa(
        self,
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        expect: int | None = 0,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run this checkout's `subrosa` in the project (a real process, never imported)."""
        done = subprocess.run(
            [str(self.subrosa_bin / "subrosa"), *args],
            cwd=cwd or self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            input=input,
            timeout=RUN_TIMEOUT_S,
        )
        if expect is not None:
            assert done.returncode == expect, (
                f"subrosa {' '.join(args)}: exit {done.returncode} != {expect}\n"
                f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
            )
        return done

    def subrosa_json(self, *args: str, **kw: Any) -> Any:
        return json.loads(self.subrosa(*args, "--json", **kw).stdout)

    def argv(
        self,
        *extra: str,
        session_id: str | None = None,
        resume: str | None = None,
        plugin_dirs: tuple[Path, ...] = (),
        continue_last: bool = False,
        fork: bool = False,
    ) -> list[str]:
        argv = [str(self.claude.binary), "-p", "--allowedTools", ",".join(self.allowed_tools)]
        if self.claude.at_least("2.1.285") and not self.claude.at_least("2.1.302"):
            # These start in auto mode, whose classifier (a request the fake API cannot
            # answer) blocks the allowed tools; 2.1.284 and 2.1.302 on start in default.
            argv += ["--permission-mode", "default"]
        if resume:
            argv += ["--resume", resume]
        elif continue_last:
            argv += ["--continue"]
        if fork:
            argv += ["--fork-session"]
        if session_id and (fork or not (resume or continue_last)):
            argv += ["--session-id", session_id]
        for plugin in plugin_dirs:
            argv += ["--plugin-dir", str(plugin)]
        return argv + list(extra)

    def run(
        self,
        prompt: str,
        *extra: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        session_id: str | None = None,
        resume: str | None = None,
        continue_last: bool = False,
        fork: bool = False,
        plugin_dirs: tuple[Path, ...] = (),
        check: bool = True,
    ) -> Run:
        """One `claude -p PROMPT` session, to its end; or one more turn of the session
        `resume` (`--resume`), or of the project's newest one (`continue_last`:
        `--continue`, the run's `session_id` then ""); with `fork`, that turn goes into
        a new session (`--fork-session`, its id `session_id` or a fresh one)."""
        if fork:
            sid = session_id or str(uuid.uuid4())
        else:
            sid = resume or ("" if continue_last else session_id or str(uuid.uuid4()))
        argv = self.argv(
            *extra,
            session_id=sid or None,
            resume=resume,
            plugin_dirs=plugin_dirs,
            continue_last=continue_last,
            fork=fork,
        )
        done = subprocess.run(
            [*argv, "--", prompt],
            cwd=cwd or self.project,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        run = Run(sid, done.returncode, done.stdout, done.stderr)
        return run.check() if check else run

    @contextmanager
    def conversation(
        self,
        *extra: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        session_id: str | None = None,
        plugin_dirs: tuple[Path, ...] = (),
    ) -> Iterator[Conversation]:
        """A multi-turn session in one Claude Code process (stream-json in and out): each
        `.say(text)` is one user turn, answered before the next is sent; leaving the block
        ends the session (SessionEnd runs)."""
        sid = session_id or str(uuid.uuid4())
        argv = self.argv(
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            *extra,
            session_id=sid,
            plugin_dirs=plugin_dirs,
        )
        with open(self.root / "tmp" / f"claude-{sid}.stderr", "w+b") as stderr:
            process = subprocess.Popen(
                argv,
                cwd=cwd or self.project,
                env={**self.env, **(env or {})},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            talk = Conversation(sid, process)
            try:
                yield talk
                talk.close()
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                stderr.seek(0)
                talk.stderr = stderr.read().decode("utf-8", "replace")


class Conversation:
    """A live stream-json Claude Code session (see `ClaudeProject.conversation`)."""

    def __init__(self, session_id: str, process: subprocess.Popen[str]) -> None:
        self.session_id = session_id
        self.process = process
        self.events: list[dict[str, Any]] = []
        self.stderr = ""
        self.returncode: int | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            self._lines.put(line)
        self._lines.put(None)

    def say(self, text: str, timeout: float = RUN_TIMEOUT_S) -> dict[str, Any]:
        """Send one user message; return Claude Code's `result` event for that turn."""
        self.send(text)
        return self.result(timeout)

    def send(self, text: str) -> None:
        """Send one user message without waiting (typed while Claude Code is busy, it is
        queued: Claude Code hands it over within the running turn)."""
        stdin = self.process.stdin
        assert stdin is not None
        message = {"type": "user", "message": {"role": "user", "content": text}}
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def result(self, timeout: float = RUN_TIMEOUT_S) -> dict[str, Any]:
        """Claude Code's next `result` event (the end of a turn)."""
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no answer from Claude Code within {timeout} s") from None
            if line is None:
                raise AssertionError(f"Claude Code exited mid-turn ({self.process.wait()})")
            with suppress(ValueError):
                event = json.loads(line)
                self.events.append(event)
                if event.get("type") == "result":
                    return dict(event)

    def close(self, timeout: float = RUN_TIMEOUT_S) -> int:
        """End the session: close stdin and wait for Claude Code (and its SessionEnd hooks)."""
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        self.returncode = self.process.wait(timeout=timeout)
        self._reader.join(timeout=timeout)
        return self.returncode


# --- small helpers for the tests --------------------------------------------------------


def write_leaf(
    directory: Path,
    filename: str,
    description: str,
    fact_type: str = "project",
    body: str = "",
) -> Path:
    """A leaf in the canonical shape (name = the filename in kebab-case)."""
    name = filename.removesuffix(".md").replace("_", "-")
    text = (
        f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: {fact_type}\n"
        f"---\n\n{body or description}\n"
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return path


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 60.0) -> T:
    """Poll `probe` until it returns something truthy; a bounded wait, not a speed test."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)
