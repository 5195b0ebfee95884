"""The archive half: Claude Code transcripts, kept and searchable after Claude Code
deletes them.

Modules:
    transcripts  pure: JSONL lines in, messages and session facts out (lenient)
    redact       pure: secrets replaced by [REDACTED:<kind>] before anything is stored
    cjk          Chinese, Japanese and Korean text in the full-text index
    pending      the drop box the SessionEnd hook writes and ingest drains
    ingest       transcripts into the archive, incrementally, by byte offset
    search       facts and messages for a query, ranked (standard library only)
    conversation pure: an archived session as framed text (no content can pass for a turn)

Rules: the archive is written through the DB-API (sqlite3), not SQLAlchemy, for speed
(docs/architecture.md says why); nothing here imports the memory half, the Claude
Code half or click. This file imports nothing (the SessionEnd hook loads `pending`).
"""
