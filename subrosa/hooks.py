"""Claude Code hooks (session-start, stop, session-end). Standard library only.

Placeholder until the Claude Code integration lands: every hook fails open.
"""

from __future__ import annotations

import sys


def run_hook(argv: list[str]) -> int:
    """Run one hook; always exit 0 (a hook must never break the agent)."""
    print("subrosa: hooks are not available in this build yet.", file=sys.stderr)
    return 0
