"""Facts for a query on a PostgreSQL server: the two index lookups of
subrosa.memory.recall (candidates, and which facts hold a unit), spelled for the GIN
index of migration 0005 instead of FTS5. The ranking is recall.py's, on both engines.

`VECTOR` is the index's expression word for word (PostgreSQL uses an expression index
only for a query that spells it): each field cut into the words unicode61 would see,
weighted title A, description and hook B, body D, their diacritics folded as unicode61
folds them (migration 0021). The candidates are the CANDIDATES
best by ts_rank with those weights, where SQLite takes FTS5's bm25 with the same
field weights: facts are few, so the two pick the same facts but in the largest
projects, and recall.py ranks them exactly either way.
"""

from __future__ import annotations

from subrosa.query import Unit, unit_written

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Migration 0021's function: 0005's weighted vector of the four fields, its diacritics
# folded as FTS5 folds them (subrosa.fold) when a field holds one.
VECTOR = "subrosa_fact_words(x.title, x.description, x.hook, x.body)"
# ts_rank's weights for D, C, B, A: FTS5's 1, -, 5, 10, over ten.
RANK_WEIGHTS = "{0.1, 0.2, 0.5, 1.0}"


def unit_query(unit: Unit) -> str:
    """A unit with its cuts, as a tsquery (CJK runs are tested on the text instead)."""
    queries = [alt.tsquery() for alt in unit.alts + unit.splits if not alt.cjk]
    return "" if not queries else "(" + " | ".join(queries) + ")"


def candidates(
    conn: Any, units: list[Unit], columns: str, where: str, params: list[Any], limit: int
) -> list[Any]:
    """The facts holding any of the units, the `limit` best by ts_rank first, and those
    holding a CJK run (as recall._candidates asks of FTS5)."""
    found: list[Any] = []
    written = [w[0] for w in map(unit_written, units) if w is not None]
    queries = [
        q for q in (unit_query(u) for u in units if not u.cjk and unit_written(u) is None) if q
    ]
    if queries:
        query = " | ".join(queries)
        found += conn.execute(
            f"SELECT {columns} FROM facts x WHERE {VECTOR} @@ ?::tsquery{where}"
            f" ORDER BY ts_rank('{RANK_WEIGHTS}', {VECTOR}, ?::tsquery) DESC, x.id LIMIT ?",
            [query, *params, query, limit],
        ).fetchall()
    runs = [unit.label for unit in units if unit.cjk]
    if runs or written:
        whole = "(x.title || ' ' || x.description || ' ' || x.hook || ' ' || x.body)"
        tests = [f"strpos({whole}, ?) > 0" for _ in runs]
        tests += [f"strpos(lower({whole}), ?) > 0" for _ in written]
        found += conn.execute(
            f"SELECT {columns} FROM facts x WHERE ({' OR '.join(tests)}){where}"
            " ORDER BY x.updated_at DESC LIMIT ?",
            [*runs, *written, *params, limit],
        ).fetchall()
    return found


def holders(conn: Any, unit: Unit, ids: list[int]) -> set[int]:
    """Which of the facts `ids` hold `unit` (not a CJK unit)."""
    query = unit_query(unit)
    if not query:
        return set()
    marks = ",".join("?" * len(ids))
    return {
        int(row[0])
        for row in conn.execute(
            f"SELECT x.id FROM facts x WHERE {VECTOR} @@ ?::tsquery AND x.id IN ({marks})",
            [query, *ids],
        )
    }
