"""Files that ship with subrosa: the Alembic migrations and the skills.

They live at the top of the repository; a wheel carries them inside the package
(`subrosa/_migrations`, `subrosa/_skills`, see pyproject.toml). Look in both.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(packaged: str, top_level: str) -> Path:
    inside = _PACKAGE / packaged
    if inside.is_dir():
        return inside
    beside = _PACKAGE.parent / top_level
    if beside.is_dir():
        return beside
    raise FileNotFoundError(f"subrosa is installed without its {top_level}/ directory")


def migrations_dir() -> Path:
    """The Alembic script directory."""
    return _find("_migrations", "migrations")


def skills_dir() -> Path:
    """The skills shipped with subrosa (memory-extraction, memory-compact)."""
    return _find("_skills", "skills")


def source_checkout() -> Path | None:
    """The repository this subrosa runs from (an editable install, or `python -m`
    in a clone), or None for an installed wheel."""
    top = _PACKAGE.parent
    return top if (top / "pyproject.toml").is_file() and (top / "skills").is_dir() else None
