"""`class X(NamedTuple)` without importing `typing` at run time.

Why: `subrosa search` is a new process each time, and `typing` was ~7 ms of a ~53 ms
search at 1 GB (it brings contextlib too); its NamedTuple was all the search path used
of it at run time. A module on that path writes

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from subrosa.tuples import NamedTuple

so mypy checks the fields as typing.NamedTuple's, and the process builds the class as
typing.NamedTuple does (3.11's NamedTupleMeta): a `collections.namedtuple` named after
the class, its fields and defaults from the class body's annotations, the body's
methods, docstring and other attributes set on it, the same class (no NamedTuple base:
`Cls.__mro__` is `(Cls, tuple, object)`). One difference nothing here reads: the
annotations stay as written (strings under `from __future__ import annotations`), where
typing turns strings into ForwardRef. Only the class form; not typing's functional one,
nor Generic bases. tests/test_tuples.py holds it to typing's.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What typing.NamedTuple refuses in a class body, and what it does not copy onto the class.
_PROHIBITED = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
        "_source",
    }
)
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})


class _NamedTupleMeta(type):
    def __new__(mcs, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if bases != (NamedTuple,):
            raise TypeError("can only inherit from a NamedTuple type")
        types = ns.get("__annotations__", {})
        default_names: list[str] = []
        for field_name in types:
            if field_name in ns:
                default_names.append(field_name)
            elif default_names:
                raise TypeError(
                    f"Non-default namedtuple field {field_name} "
                    f"cannot follow default field"
                    f"{'s' if len(default_names) > 1 else ''} "
                    f"{', '.join(default_names)}"
                )
        made = namedtuple(  # type: ignore[misc]  # mypy reads literal names only
            typename,
            list(types),
            defaults=[ns[name] for name in default_names],  # type: ignore[misc]
            module=ns["__module__"],
        )
        made.__annotations__ = made.__new__.__annotations__ = dict(types)
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _SPECIAL and key not in made._fields:
                setattr(made, key, value)
                set_name = getattr(type(value), "__set_name__", None)
                if set_name is not None:
                    set_name(value, made, key)
        return made


# Made as typing makes its own: the metaclass builds its subclasses, not this base.
NamedTuple = type.__new__(
    _NamedTupleMeta,
    "NamedTuple",
    (),
    {"__module__": __name__, "__doc__": "Subclass it as typing.NamedTuple (see the module)."},
)
