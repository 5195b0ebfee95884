"""The witness, loaded from the one file that implements it.

`skills/memory-compact/check_memory.py` is standard library only so the skill works
when copied on its own into `.claude/skills/`. subrosa runs that very file rather than
a copy of its logic, so `subrosa check` and the script give the same verdicts, JSON and
exit codes by construction; the take-over parser uses its link grammar for the same reason.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from types import ModuleType

from subrosa.resources import skills_dir

MODULE_NAME = "subrosa._check_memory"


@cache
def load() -> ModuleType:
    """The check_memory.py module shipped with subrosa."""
    path = skills_dir() / "memory-compact" / "check_memory.py"
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{path}: the witness script is missing from this install")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


def md_targets(text: str) -> list[str]:
    """The local `.md` files `text` links to, as the witness reads them."""
    targets: list[str] = load().md_targets(text)
    return targets


def wikilinks(body: str) -> list[str]:
    """The targets of `[[wikilinks]]` in `body`, in order, without duplicates (the
    witness's grammar, so `fact link` and `check --strict` always agree)."""
    seen: dict[str, None] = {}
    for match in load().WIKILINK.finditer(body):
        seen.setdefault(match.group(1).strip(), None)
    return list(seen)


def resolve_wikilink(target: str, stems: set[str]) -> str | None:
    """The leaf stem a `[[target]]` names, accepting snake_case or kebab-case spellings."""
    resolved: str | None = load().resolve_wikilink(target, stems)
    return resolved
