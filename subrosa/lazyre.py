"""Regular expressions compiled when first used, not when their module is imported.

Why: a `subrosa search` or a hook is a new process each time, and compiling a module's
patterns was a third of what importing the search path cost (`re` builds the table of a
class of CJK or emoji ranges in Python, code point by code point: ~1-3 ms each; the
search path's modules keep ~45 patterns, of which a search of English words uses about
ten). So the patterns a module
keeps are made with compile_lazily(): the same `re.Pattern` API, compiled at the first
call of one of its methods. Standard library only (the hooks import it), and not
`typing` at run time: the hooks' path never imports it (~4 ms).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, AnyStr

# What a pattern's first use binds on the object: later calls find the bound method in
# the instance (~0.1 us less than a compiled pattern's method lookup).
_BOUND = (
    "search",
    "match",
    "fullmatch",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
    "scanner",
)


class _Compiled:
    """A compiled pattern's methods and attributes, bound on the object: what a _Lazy
    becomes at its first use (a class that defines __getattr__ makes every attribute
    lookup of its instances slower, ~50-100 ns a call; this one has none)."""

    pattern: Any

    def __repr__(self) -> str:
        return f"compile_lazily({self.pattern!r})"


class _Lazy(_Compiled):
    """Stands for `re.compile(pattern, flags)` until it is used. `pattern` is known
    without compiling; everything else (methods, `flags`, `groups`, `groupindex`)
    compiles it, once."""

    def __init__(self, pattern: Any, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like ask for dunders
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for method in _BOUND:
            setattr(self, method, getattr(compiled, method))
        self.flags = compiled.flags
        self.groups = compiled.groups
        self.groupindex = compiled.groupindex
        self.__class__ = _Compiled  # type: ignore[assignment]  # the same layout
        return getattr(compiled, name)


def compile_lazily(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled at its first use (see the module)."""
    return _Lazy(pattern, flags)  # type: ignore[return-value]  # a stand-in with its API
