"""Whether the Claude Code process of a session still runs. Standard library only (the
SessionStart and SessionEnd hooks use it).

Claude Code (2.1.332 at least) gives every hook and Bash command `CLAUDE_PID`, its own
process id. SessionStart records it with what makes a process id one process: on Linux
its start time (`/proc/PID/stat`, field 22, in clock ticks since boot), the boot it
belongs to (`/proc/sys/kernel/random/boot_id`) and the pid namespace it is counted in;
everywhere the host name. A later hook of the same project then tells:

- `GONE`: that process is no longer there. On the same host and in the same pid
  namespace: no such pid, a pid now held by a process that started at another time, a
  zombie, or a boot id that changed (the machine restarted: a power cut).
- `ALIVE`: that very process still runs (or, where no start time can be read, some
  process holds the pid: the safe side, never taken for gone).
- `UNKNOWN`: nothing to check against (no pid recorded, another host or container, no
  way to ask on this system); the caller then goes by how long the session was quiet.

Claude Code's own `<claude root>/sessions/<pid>.json` holds much the same, but it is
undocumented and not yet written when a new session's SessionStart runs (2.1.332), so
the hooks keep their own record.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

ALIVE = "alive"
GONE = "gone"
UNKNOWN = "unknown"
# How far up from the hook CLAUDE_PID may be: the hook runs under `sh -c` (Claude Code,
# sh, subrosa), a wrapper or two more are allowed for. Further up it names some other
# process (a Claude Code that started the one running this hook, from its Bash tool).
ANCESTOR_DEPTH = 6


def _read(path: str, limit: int = 4096) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("ascii", "replace")
    except (OSError, ValueError):
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of `/proc/PID/stat` after the command name (state first), or None."""
    text = _read(f"/proc/{pid}/stat")
    if text is None or ")" not in text:
        return None
    # The command name is in parentheses and may hold spaces and parentheses itself.
    return text[text.rindex(")") + 1 :].split()


def _start_of(fields: list[str] | None) -> str:
    """A process's start time (clock ticks since boot), "" when unknown."""
    return fields[19] if fields is not None and len(fields) > 19 else ""


def here() -> dict[str, str]:
    """What a recorded pid is only meaningful with: the host, the boot, the pid namespace."""
    boot = (_read("/proc/sys/kernel/random/boot_id") or "").strip()
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, ValueError, AttributeError):
        namespace = ""
    try:
        host = os.uname().nodename
    except AttributeError:  # Windows
        host = os.environ.get("COMPUTERNAME", "")
    return {"host": host, "boot": boot, "pid_ns": namespace}


def _is_ancestor(pid: int) -> bool:
    """Whether `pid` is this process's parent, or its parent's, up to ANCESTOR_DEPTH
    (True where /proc cannot say: then CLAUDE_PID is taken at its word)."""
    current = os.getppid()
    for _ in range(ANCESTOR_DEPTH):
        if current == pid:
            return True
        fields = _stat_fields(current)
        if fields is None:
            return not os.path.isdir("/proc/self")
        try:
            current = int(fields[1])
        except (IndexError, ValueError):
            return False
        if current <= 1:
            return False
    return False


def claude_process(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Claude Code process this hook runs under, as SessionStart records it: `pid`
    (None when Claude Code does not say, or names a process that is not above this
    one), `start`, and `here()`."""
    raw = (os.environ if env is None else env).get("CLAUDE_PID", "").strip()
    pid = int(raw) if raw.isdecimal() and 1 < int(raw) < 2**31 else None
    if pid is not None and not _is_ancestor(pid):
        pid = None
    start = _start_of(_stat_fields(pid)) if pid is not None else ""
    return {"pid": pid, "start": start, **here()}


def judge(record: dict[str, Any], now_here: dict[str, str] | None = None) -> str:
    """ALIVE, GONE or UNKNOWN for a process as `claude_process` recorded it."""
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or not 1 < pid < 2**31:
        return UNKNOWN
    now_here = here() if now_here is None else now_here
    if str(record.get("host") or "") != now_here["host"]:
        return UNKNOWN
    boot = str(record.get("boot") or "")
    if boot and now_here["boot"] and boot != now_here["boot"]:
        return GONE  # this host restarted since
    if str(record.get("pid_ns") or "") != now_here["pid_ns"]:
        return UNKNOWN  # another container's pid: not ours to look up
    if os.path.isdir("/proc/self"):
        fields = _stat_fields(pid)
        if fields is None:
            return GONE
        start = str(record.get("start") or "")
        if fields[0] in ("Z", "X") or (start and _start_of(fields) != start):
            return GONE
        return ALIVE
    if os.name != "posix":
        return UNKNOWN  # os.kill would end the process on Windows, not probe it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return GONE
    except PermissionError:
        return ALIVE  # someone else's process holds the pid
    except OSError:
        return UNKNOWN
    return ALIVE
