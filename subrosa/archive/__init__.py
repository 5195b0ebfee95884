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

Rules: the archive is read and written through the DB-API (sqlite3), not SQLAlchemy,
for speed (connection says why); nothing here imports the memory half, the Claude
Code half or click. This file imports nothing (the SessionEnd hook loads `pending`).
"""
