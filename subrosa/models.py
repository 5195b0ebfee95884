"""The database tables, as SQLAlchemy 2 typed models.

The database is a cache of the memory dir plus what only subrosa knows (each fact's
hook, pin, status, curated position, section, hits). `subrosa rebuild` recovers all
of it but hits from the leaves and the sidecar state file (see subrosa.memory.state).
Times are stored as naive UTC.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Fact(Base):
    """One fact: a leaf file in a project's memory dir, and its place in the index."""

    __tablename__ = "facts"
    __table_args__ = (
        UniqueConstraint("project", "slug", name="uq_facts_project_slug"),
        Index("ix_facts_project_position", "project", "position"),
        CheckConstraint("status IN ('active', 'archived')", name="ck_facts_status"),
        CheckConstraint(
            "type IN ('user', 'feedback', 'project', 'reference')", name="ck_facts_type"
        ),
    )

    # An explicit integer primary key: the full-text index over facts is an
    # external-content FTS5 table keyed by rowid, and implicit rowids are not
    # stable across VACUUM.
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The project (subrosa.identity.facts_key): the name of the repository holding the
    # memory dir, the same on every machine, else the resolved memory dir. One database
    # serves every project.
    project: Mapped[str] = mapped_column(String, nullable=False)
    slug: Mapped[str] = mapped_column(String, nullable=False)
    # The leaf's filename, relative to the memory dir.
    path: Mapped[str] = mapped_column(String, nullable=False)
    title: Mapped[str] = mapped_column(String, nullable=False)
    type: Mapped[str] = mapped_column(String, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    hook: Mapped[str] = mapped_column(Text, nullable=False, default="")
    # The leaf body is cached so facts are searchable without reading every file.
    body: Mapped[str] = mapped_column(Text, nullable=False, default="")
    section: Mapped[str | None] = mapped_column(String, nullable=True)
    pinned: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    status: Mapped[str] = mapped_column(String, nullable=False, default="active")
    archive_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    archived_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    hits: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # Curated display order, dense and 1-based within a project.
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    # When the leaf last changed (its mtime): the generator's recency key, and
    # re-derivable from disk.
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    last_hit_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    content_hash: Mapped[str] = mapped_column(String, nullable=False)
    # The leaf's size, mtime (ns) and inode when content_hash was taken, or NULL: a leaf
    # whose stat is unchanged is not read again by generate (subrosa.memory.leaf.stat_key).
    leaf_stat: Mapped[str | None] = mapped_column(String, nullable=True)


class TranscriptSession(Base):
    """One Claude Code session in the transcript archive (it outlives the source files)."""

    __tablename__ = "sessions"
    __table_args__ = (Index("ix_sessions_project_last", "project", "last_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Claude Code's session id (a UUID; subagent transcripts carry their parent's).
    session_id: Mapped[str] = mapped_column(String, nullable=False, unique=True)
    # The project's name on every machine (subrosa.identity.sessions_key: the normalized
    # git remote, or a configured name), else the encoded project folder under
    # `<claude root>/projects/` the transcript came from.
    project: Mapped[str] = mapped_column(String, nullable=False)
    cwd: Mapped[str | None] = mapped_column(String, nullable=True)
    git_branch: Mapped[str | None] = mapped_column(String, nullable=True)
    title: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    first_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    last_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    message_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # Which machine and member archived the session (`transcript list --by`): in a
    # team's database, whose session it is. NULL for sessions archived before 0006.
    host: Mapped[str | None] = mapped_column(String, nullable=True)
    username: Mapped[str | None] = mapped_column(String, nullable=True)


class TranscriptMessage(Base):
    """One user or assistant message, redacted, as it is shown and searched."""

    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_session", "session_pk"),)

    # An explicit integer primary key: messages_fts is an external-content FTS5
    # table keyed by rowid, and implicit rowids are not stable across VACUUM. Ids
    # grow with ingest order, which search uses as its recency order.
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_pk: Mapped[int] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False
    )
    # Claude Code's message uuid (or a content hash when it has none): resumed and
    # forked sessions repeat earlier messages, which are stored once.
    uuid: Mapped[str] = mapped_column(String, nullable=False, unique=True)
    role: Mapped[str] = mapped_column(String, nullable=False)
    timestamp: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    # What unicode61 cannot find in the text, computed in Python (subrosa.terms): its
    # CJK characters one per token (unicode61 makes a whole run of CJK one token) and
    # the parts of its camelCase identifiers; NULL for most messages (docs/search.md).
    terms: Mapped[str | None] = mapped_column(Text, nullable=True)


class MessageRun(Base):
    """Ids lo to hi are one session's messages, with no other session's message among
    them (ids grow with ingest, so a run is what one ingest of a session added, or
    several in a row): a project's messages are its sessions' runs. Search walks a
    project's runs, newest first, where testing every match of the archive's index
    for its project would walk through the other projects' (subrosa.archive.search,
    for_project). Kept by ingest on both engines; derived from messages, as the rest
    of the archive is from the transcripts (migration 0009 backfills it)."""

    __tablename__ = "message_runs"

    session_pk: Mapped[int] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    lo: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    hi: Mapped[int] = mapped_column(Integer, nullable=False)


class SharedMessage(Base):
    """A message a session's transcript holds that is stored under another session: a
    fork's file (`--fork-session`, `/branch`) begins with a copy of its parent's history,
    the records keeping their uuids, and a message is stored once (messages.uuid). Ingest
    writes a row when a uuid it reads for one session is stored under another, so
    `transcript show` gives each session all it holds, whichever was archived first."""

    __tablename__ = "shared_messages"
    # Deleting a message (or a session) deletes its rows here: the index on message_id
    # keeps that a lookup. The primary key serves `transcript show` (by session).
    __table_args__ = (Index("ix_shared_messages_message", "message_id"),)

    session_pk: Mapped[int] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[int] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    # Where the message comes in the session: the id it would have had, had it been
    # stored under this session (ids grow in the order ingest reads the file).
    position: Mapped[int] = mapped_column(Integer, nullable=False)


class ArchiveReindex(Base):
    """A re-index of the archive under way (migration 0003, subrosa.archive.reindex):
    the messages from `next_id` on are not in messages_fts yet. No row: none."""

    __tablename__ = "archive_reindex"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    next_id: Mapped[int] = mapped_column(Integer, nullable=False)


# 64-bit on both engines: SQLite's INTEGER always is; PostgreSQL's is 32-bit, too
# small for a file's mtime in nanoseconds.
BigInt = BigInteger().with_variant(Integer(), "sqlite")


class IngestedFile(Base):
    """How far each transcript file has been read, so ingest reads only what is new."""

    __tablename__ = "ingested_files"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    project: Mapped[str] = mapped_column(String, nullable=False)
    # Identity checks: a file replaced (another inode), truncated (smaller than the
    # offset) or rewritten (its first bytes changed) is read again from the start.
    inode: Mapped[int] = mapped_column(BigInt, nullable=False)
    size: Mapped[int] = mapped_column(BigInt, nullable=False)
    mtime_ns: Mapped[int] = mapped_column(BigInt, nullable=False)
    # Where the last complete line ended.
    offset: Mapped[int] = mapped_column(BigInt, nullable=False)
    head_hash: Mapped[str] = mapped_column(String, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)
    # Migration 0012: the queue of prompts typed while Claude worked, where the last read
    # ended (subrosa.archive.transcripts.queue_state), so that the next read keeps a
    # prompt taken up there once. NULL for most files.
    queue_state: Mapped[str | None] = mapped_column(Text, nullable=True)
