"""The memory half: leaf files in a memory dir, the facts they are registered as, and
the MEMORY.md / MEMORY_archive.md index generated from them.

Modules:
    leaf        leaf files: strict and lenient parsers, the canonical writer
    state       the sidecar `.subrosa/facts.jsonl`: what only subrosa knows, beside the leaves
    project     a memory dir, the key its facts are stored under, and its lock
    store       the facts in the database: upsert, archive, pin, move, rebuild
    marker      how subrosa recognizes the index files it wrote
    witness     loads the witness (skills/memory-compact/check_memory.py) for `check`
    generator   pure: rank, pack into the budget, render both index files
    takeover    index lines written by others, taken over; facts reconciled with the disk
    staleness   pure: the staleness rules
    recall      facts for a query (sqlite3, no SQLAlchemy: `subrosa search` runs without
                it) and their hit counts, written under the project lock

Rules: the leaves are the truth and are never rewritten unless the user asks; every
change to the facts runs under the project lock and rewrites the sidecar; nothing
here imports the archive half, the Claude Code half or click. This file imports
nothing, so the hooks can load a module of this folder without paying for the rest.
"""
