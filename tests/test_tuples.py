"""subrosa.tuples.NamedTuple, the search path's stand-in for typing.NamedTuple, makes
the same classes typing's does (what the modules built on it use of them)."""

from __future__ import annotations

import copy
import pickle
import typing
from typing import Any

import pytest

from subrosa import tuples


def _pair(base: Any) -> Any:
    class Point(base):
        """A point, and what the search path's tuples have: defaults, methods."""

        x: int
        y: int = 0
        label: str | None = None
        unit: str = "px"

        def norm(self) -> int:
            return abs(self.x) + abs(self.y)

        @property
        def flat(self) -> tuple[int, int]:
            return (self.x, self.y)

        @classmethod
        def origin(cls) -> Any:
            return cls(0)

        @staticmethod
        def kind() -> str:
            return "point"

        def __repr__(self) -> str:  # an override typing keeps too
            return f"<{self.x},{self.y}>"

    class Plain(base):
        a: int
        b: str = "b"

    return Point, Plain


# Module-level classes, so that pickle finds them by name.
class TypingPlain(typing.NamedTuple):
    a: int
    b: str = "b"


class StandInPlain(tuples.NamedTuple):
    a: int
    b: str = "b"


def test_the_stand_in_makes_the_classes_typing_makes() -> None:
    (t_point, t_plain), (s_point, s_plain) = _pair(typing.NamedTuple), _pair(tuples.NamedTuple)
    for t_cls, s_cls in ((t_point, s_point), (t_plain, s_plain)):
        assert s_cls._fields == t_cls._fields
        assert s_cls._field_defaults == t_cls._field_defaults
        assert [c.__name__ for c in s_cls.__mro__] == [c.__name__ for c in t_cls.__mro__]
        assert s_cls.__mro__[1:] == (tuple, object)
        assert s_cls.__name__ == t_cls.__name__ and s_cls.__module__ == t_cls.__module__
        assert s_cls.__qualname__ == t_cls.__qualname__
        assert s_cls.__doc__ == t_cls.__doc__
        assert list(s_cls.__annotations__) == list(t_cls.__annotations__)
        assert not isinstance(s_cls, type(tuples.NamedTuple))  # a plain namedtuple class
    assert s_point.__doc__ and "defaults, methods" in s_point.__doc__
    assert s_plain.__doc__ == "Plain(a, b)"  # namedtuple's own, as typing leaves it

    for cls in (t_point, s_point):
        p = cls(3, -4)
        assert (p.x, p.y, p.label, p.unit) == (3, -4, None, "px")
        assert p.norm() == 7 and p.flat == (3, -4) and cls.kind() == "point"
        assert cls.origin() == (0, 0, None, "px") and repr(p) == "<3,-4>"
        assert p._replace(y=5) == cls(3, 5) and p._asdict() == {
            "x": 3,
            "y": -4,
            "label": None,
            "unit": "px",
        }
        assert cls._make([1, 2, "a", "b"]) == (1, 2, "a", "b")
        assert p == (3, -4, None, "px") and hash(p) == hash((3, -4, None, "px"))
        with pytest.raises(AttributeError):
            p.x = 1  # type: ignore[misc]
        with pytest.raises(TypeError):
            cls()
    t, s = t_plain(1), s_plain(1)
    assert repr(s) == repr(t) == "Plain(a=1, b='b')"
    assert s == t and s._asdict() == t._asdict() and s._replace(b="c") == (1, "c")


def test_the_stand_in_pickles_and_copies_as_typing_does() -> None:
    for value in (TypingPlain(1), StandInPlain(2, "c")):
        again = pickle.loads(pickle.dumps(value))
        assert again == value and type(again) is type(value)
        assert copy.copy(value) == value and copy.deepcopy(value) == value


def test_the_stand_in_refuses_what_typing_refuses() -> None:
    for base in (typing.NamedTuple, tuples.NamedTuple):
        with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow"):

            class Late(base):  # type: ignore[misc, valid-type]
                a: int = 0
                b: int

        with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _asdict"):

            class Over(base):  # type: ignore[misc, valid-type]
                a: int

                def _asdict(self) -> dict[str, Any]:
                    return {}

        with pytest.raises(TypeError, match="can only inherit from a NamedTuple type"):

            class Mixed(base, int):  # type: ignore[misc, valid-type]
                a: int
