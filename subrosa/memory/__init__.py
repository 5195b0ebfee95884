"""The memory half: leaf files in a memory dir, the facts they are registered as, and
the MEMORY.md / MEMORY_archive.md index generated from them.

Use cases (what the commands, and anything else, call; each takes plain values: a
database URL, a Project or a memory dir, settings values; none knows click):
    generate    take over appended index lines, reconcile, plan, write both index files
    adopt       a memory dir taken over as it is (backups, loose lines); rebuild from disk
    review      the staleness review, and the sure cases archived under the lock
    facts       register a leaf; archive, pin, move, list, show facts; resolve wikilinks
    remember    a fact an agent states whole: a canonical leaf, registered through
                facts.upsert's refusals (put back when refused), then generate

Data and rules they use:
    leaf        leaf files: strict and lenient parsers, the canonical writer, the one
                capped raw reader, the content hash
    frontfix    pure: frontmatter changed line by line, every other line kept as
                written (`adopt --fix-frontmatter`; `remember` restating a leaf)
    state       `.subrosa/`: the sidecar facts.jsonl, and the record of the last index written
    project     a memory dir, the key its facts are stored under (its project's name on
                every machine, subrosa.identity), and its lock
    store       the facts in the database: every query and change (upsert, archive, pin,
                move, rebuild, the named reads the use cases need)
    rows        the facts table through sqlite3, for the per-fact commands and generate
                on an SQLite file at the newest schema (no SQLAlchemy import)
    quick       generate's quick path: the facts reconciled with the leaves through sqlite3
                when nothing needs a take-over (a stat per leaf, changed ones read)
    report      plain values: what a reconcile found and did, the lines a take-over reads
    values      pure: a fact's column values from a leaf, a sidecar row or a command, and
                its --json and sidecar shapes (shared by store and rows)
    marker      the index files' names, and how subrosa recognizes the ones it wrote
    indexfile   pure: index lines as others write them, parsed
    takeover    index lines written by others, taken over; facts reconciled with the disk
    generator   pure: rank, pack into the budget, render both index files
    witness     loads the witness (skills/memory-compact/check_memory.py) for `check`
    staleness   pure: the staleness rules
    recall      facts for a query (sqlite3, no SQLAlchemy: `subrosa search` runs without
                it) and their hit counts, written under the project lock
    pgfacts     recall's two index lookups spelled for a PostgreSQL server's GIN index
    exchange    every project's facts as plain records, out and back in (export/import;
                a fact the target has is left alone)
    leftover    the leaves an older subrosa left in its own spelling of the project's
                Claude Code folder: compared (doctor, generate), copied over, never
                over a file (`adopt --from`)

Rules: the leaves are the truth and are never rewritten unless the user asks; every
change to the facts runs under the project lock and brings the sidecar in step before
it commits; `store` runs every SQLAlchemy query and `rows` (and `recall`) every sqlite3
one, both with the values of `values`; `leaf`, `state`, `marker` (an index file's
header) and subrosa.fsutil every file read and write (the use cases, `takeover` and
`quick` go through them); nothing here
imports the archive half, the Claude Code half or click. This file imports nothing,
so the hooks can load a module of this folder without paying for the rest.
"""
