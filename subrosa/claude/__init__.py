"""The Claude Code half: the hooks, their per-session state, and the set-up.

Modules:
    hooks       SessionStart, Stop, SessionEnd: standard library only, fail open
    checkpoint  `.extract/`: turn counters, checkpoint marks, the queue, the live session;
                `checkpoint-mark` (finding the session's transcript) and the queue as listed
    liveness    whether a session's Claude Code process still runs (a session killed
                outright is queued by the next hook of its project)
    install     the hooks merged into settings.json (and out again), the skills copied
    settings    Claude Code's settings files read: where subrosa's hooks are registered,
                whether its plugin is enabled (the plugin's SessionStart asks)

Rules: `hooks`, `checkpoint`, `liveness` and `settings` import the standard library and
the standard-library modules of subrosa only (a test checks it in a subprocess), and of
the standard library neither typing, pathlib nor contextlib (paths are str, through
subrosa.paths); they may use the memory and archive halves' stdlib-only modules, never
click or SQLAlchemy. This file imports nothing.
"""
