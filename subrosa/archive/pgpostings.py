"""Postings per sealed chunk of message ids, on a PostgreSQL server (docs/team.md,
"Round eleven"): for each lexeme of the `words` vectors of a chunk's messages, the ids
holding it, newest first, in one row. Search reads a medium or common word's newest
matches from a few such rows instead of reading thousands of rows through a GIN index.

A chunk is CHUNK consecutive ids (chunk = id / CHUNK). Only sealed chunks have postings;
any write to a sealed chunk's messages unseals it in the writer's own transaction, so
the rows of a sealed chunk are always those its messages give.
"""

from __future__ import annotations

# Ids a chunk holds: a medium word's 4,000 newest matches in a few dozen rows, and the
# newest, unsealed chunk (read through the GIN index, as before) at most this many ids.
CHUNK = 4096
