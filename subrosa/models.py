"""The database tables, as SQLAlchemy 2 typed models.

The database is a cache of the memory dir plus what only subrosa knows (each fact's
hook, pin, status, curated position, section, hits). `subrosa rebuild` recovers all
of it but hits from the leaves and the sidecar state file (see subrosa.state).
Times are stored as naive UTC.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    DateTime,
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
    # The project is the resolved memory dir: one database serves every project.
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
