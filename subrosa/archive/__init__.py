"""The archive half: Claude Code transcripts, kept and searchable after Claude Code
deletes them.

Modules:
    transcripts   pure: JSONL lines in, messages and session facts out (lenient)
    redact        pure: secrets replaced by [REDACTED:<kind>] before anything is stored
    pending       the drop box the SessionEnd hook writes and ingest drains
    connection    the archive's DB-API (sqlite3) connection, opened and migrated; the
                  ingest lock; why the archive does not use SQLAlchemy
    ingest        transcripts into the archive, incrementally, by byte offset; the
                  `ingest` use case, and the archive made ready for a reader
    sessions      the archived sessions read back (`transcript list` and `show`)
    conversation  pure: an archived session as framed text (no content can pass for a turn)
    search        archived messages for a query: FTS5, bm25 over bounded candidates in
                  two tiers, copies collapsed, sessions; snippets (standard library
                  only; the query language is subrosa.query)
    reindex       the full-text index rebuilt in place after a migration, resumable
    runs          each message inside a run of its session's ids (message_runs),
                  checked (doctor) and derived again (db upgrade)
    pgstore       the archive on a PostgreSQL server: opened, and ingest's writes for
                  many writers at once (COPY, ON CONFLICT (uuid), id blocks)
    pgsearch      search's index lookups spelled for a server's GIN index (tsquery)
    pgpostings    postings per sealed chunk of ids on a server: the chunks sealed after
                  ingest, import and `db upgrade` (migration 0018 keeps them true)
    exchange      sessions and messages as plain records, out (SQLAlchemy Core, either
                  engine: rare, not hot) and back in through ingest's write path

Rules: the archive is read and written through the DB-API (sqlite3), not SQLAlchemy,
for speed (connection says why; an export's reading is the one exception); nothing
here imports the memory half, the Claude Code half or click. This file imports
nothing (the SessionEnd hook loads `pending`).
"""
