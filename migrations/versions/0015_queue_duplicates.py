"""Prompts an ingest from before 0012 kept twice are kept once, and the queue's state is
saved for the files such an ingest read last.

From 0011 to 0012 ingest kept a prompt typed while Claude worked when it found it in the
queue (a `queue-operation` record) but did not save the queue's state with the file's
offset (0012 does: ingested_files.queue_state). So an archive ingested then holds two
copies of a prompt that waited in the queue when one ingest ran and was taken up before
the next (the queued copy, `sha1:…`, and the user record or the `queued_command`
attachment Claude Code wrote when it was sent), and of a prompt put back into the input
box (`popAll`) and queued again; and a prompt that waited at the last such ingest is
kept once more by the first ingest after the upgrade, when it reads it taken up. A
search for the person's words found each twice, `transcript show` showed it twice.

For each transcript on this disk whose part already read holds a queue record (the
files 0011 read again), the file is read again from its start as ingest reads it
(subrosa.archive.ingest.read_again: the current parser and its default redaction, in
two parts cut at the offset where the last ingest stopped, as a read since 0012 would
have been), nothing stored:

- Copies: for a text the archive holds a queued copy of (`sha1:` key, role user) in one
  of the file's sessions, when the archive holds more messages of that session with that
  text than the read keeps, and at least one of them is kept by it, the others are
  deleted, newest first, down to the number the read keeps: only a copy the read does
  not keep (a queued copy, or a record of this file it leaves out), so a prompt is never
  left with fewer copies than a new archive ingested this way holds, and never with
  none. The search index follows (SQLite's delete trigger; the row's `words` column on
  PostgreSQL); the session's message count, and that of any session sharing the copy
  (shared_messages), go down.
- State: when the file's state was saved without a queue (queue_state NULL: every
  ingest from before 0012), the state at its offset is saved if every prompt that state
  names is held by the archive in its session; else NULL stays (a prompt then may be
  kept twice again; it is never left out).

A file not on this disk, or that cannot be read, keeps what it has (as 0011 says why).
The files are read at ~56 MB/s of CPU (the corpus's 12 such files, 8.9 MB, in 0.16 s):
a few seconds for a 1 GB archive whose queue-holding files are a quarter of it, as the
corpus's are; a command on a terminal shows them on its re-index bar, file by file.

The rules are imported, not copied (as 0014 imports index_terms): the copies a read
keeps, and the state the next ingest resumes from, are the current ingest's.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

import mmap
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

MARKERS = (b'"queue-operation"', b'"queued_command"')


def upgrade() -> None:
    from subrosa.archive.ingest import read_again

    bind = op.get_bind()
    config = op.get_context().config
    progress = None if config is None else config.attributes.get("progress")
    rows = bind.execute(
        sa.text('SELECT path, "offset", queue_state FROM ingested_files ORDER BY path')
    ).all()
    todo = [row for row in rows if _holds_queued(str(row[0]), int(row[1] or 0))]
    for path, offset, state in todo:
        try:
            again = read_again(str(path), int(offset))
        except Exception:
            # Gone since, unreadable, or anything else: this file keeps its copies. A
            # repair skipped leaves a prompt shown twice; a migration that raised would
            # leave every command without the archive.
            again = None
        if again is not None:
            _drop_copies(bind, again)
            if state is None and again.state_at is not None and _all_held(bind, again.state_at):
                bind.execute(
                    sa.text("UPDATE ingested_files SET queue_state = :state WHERE path = :path"),
                    {"state": again.state_at, "path": path},
                )
        if progress is not None:
            progress(1, len(todo))


def _holds_queued(path: str, offset: int) -> bool:
    """Whether the first `offset` bytes of the file at `path` hold a queue record (0011's)."""
    if offset <= 0:
        return False
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            end = min(offset, len(data))
            return any(data.find(marker, 0, end) >= 0 for marker in MARKERS)
    except (OSError, ValueError):  # gone, unreadable, empty
        return False


def _drop_copies(bind: sa.Connection, again: Any) -> None:
    """Delete the copies the archive holds beyond what the read keeps (see the docstring)."""
    from subrosa.archive.ingest import text_digest

    if not again.sessions:
        return
    queued = bind.execute(
        sa.text(
            "SELECT DISTINCT m.session_pk, s.session_id, m.text FROM messages m"
            " JOIN sessions s ON s.id = m.session_pk WHERE s.session_id IN :sessions"
            " AND m.role = 'user' AND m.uuid LIKE 'sha1:%'"
        ).bindparams(sa.bindparam("sessions", expanding=True)),
        {"sessions": sorted(again.sessions)},
    ).all()
    for session_pk, session_id, text in queued:
        kept = again.kept[(session_id, text_digest(text))]
        if kept < 1:
            continue
        held = bind.execute(
            sa.text(
                "SELECT id, uuid FROM messages WHERE session_pk = :pk AND role = 'user'"
                " AND text = :text ORDER BY id DESC"
            ),
            {"pk": session_pk, "text": text},
        ).all()
        surplus = len(held) - kept
        extra = [
            int(rowid)
            for rowid, uuid in held
            if uuid not in again.kept_uuids
            and (str(uuid).startswith("sha1:") or uuid in again.seen_uuids)
        ][: max(0, surplus)]
        if extra:
            _delete(bind, session_pk, extra)


def _delete(bind: sa.Connection, session_pk: int, ids: list[int]) -> None:
    """Delete the messages `ids` of session `session_pk`, and their counts."""
    expanding = sa.bindparam("ids", expanding=True)
    sharing = bind.execute(
        sa.text(
            "SELECT session_pk, count(*) FROM shared_messages WHERE message_id IN :ids"
            " GROUP BY session_pk"
        ).bindparams(expanding),
        {"ids": ids},
    ).all()
    counts = [(session_pk, len(ids)), *((int(pk), int(n)) for pk, n in sharing)]
    bind.execute(
        sa.text("DELETE FROM shared_messages WHERE message_id IN :ids").bindparams(expanding),
        {"ids": ids},
    )
    bind.execute(
        sa.text("DELETE FROM messages WHERE id IN :ids").bindparams(expanding), {"ids": ids}
    )
    for pk, n in counts:
        bind.execute(
            sa.text(
                "UPDATE sessions SET message_count ="
                " CASE WHEN message_count > :n THEN message_count - :n ELSE 0 END WHERE id = :pk"
            ),
            {"pk": pk, "n": n},
        )


def _all_held(bind: sa.Connection, state: str) -> bool:
    """Whether every prompt the queue's `state` names is held by the archive, as the
    person's, in its session: the next ingest, resuming from it, leaves those out."""
    from subrosa.archive.transcripts import resume_queue

    carry = resume_queue(state)
    if carry is None:
        return False
    named = {(s, q.text) for s, queue in carry.kept_early.items() for q in queue}
    named |= set(carry.kept_again) | set(carry.from_queue)
    named |= {(s, t) for s, texts in carry.popped.items() for t in texts}
    named |= {(s, t) for s, texts in carry.just_taken.items() for t in texts}
    held: dict[str, set[str]] = {}
    for session, text in named:
        if session not in held:
            texts = bind.execute(
                sa.text(
                    "SELECT m.text FROM messages m JOIN sessions s ON s.id = m.session_pk"
                    " WHERE s.session_id = :session AND m.role = 'user'"
                ),
                {"session": session},
            ).scalars()
            held[session] = {t for value in texts for t in (value, value.strip())}
        if text not in held[session] and text.strip() not in held[session]:
            return False
    return True


def downgrade() -> None:
    pass
