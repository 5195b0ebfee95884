"""User settings: an optional TOML file, overridden by environment variables.

Standard library only (tomllib, and subrosa.tomlsubset for the plain files most are),
and no pathlib (subrosa.paths says why): the Stop hook reads `nudge_every` from here
(only when the file names it: subrosa.claude.hooks), `subrosa search` the `db`.
The file is `$SUBROSA_CONFIG`, else `$XDG_CONFIG_HOME/subrosa/config.toml`, else
`~/.config/subrosa/config.toml`. Every key is optional:

    budget = 23000            # bytes of MEMORY.md generate plans for (at most 25000)
    max_lines = 150           # lines of MEMORY.md generate plans for (at most 200: Claude
                              # Code loads 200; the rest is headroom for appended lines)
    nudge_every = 15          # Stop hook: nudge the extraction skill every N turns
    tool_result_chars = 2000  # transcript archive: tool results are cut to this length
    db = "postgresql+psycopg://me@db.example.com/team?sslmode=require"
                              # the database (a file path or a URL; SUBROSA_DB and --db win)
    user = "alice"            # who archives sessions on this machine (SUBROSA_USER wins;
                              # default: the login name)
    [projects]                # a name for each folder whose repository has no remote
    "~/code/acme-tools" = "acme-tools"     # (subrosa.identity)
    [type_weights]            # generator rank: higher loads first
    feedback = 4
    user = 3
    project = 2
    reference = 1
"""

from __future__ import annotations

import os

from subrosa.errors import InvalidInput
from subrosa.fsutil import JSON_CAP, read_capped
from subrosa.paths import (
    absolute,
    config_file,
    data_dir,
    expand_user,
    is_file,
    join,
    parent,
    sqlite_url,
)

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from subrosa.tuples import NamedTuple

FACT_TYPES = ("user", "feedback", "project", "reference")
# Claude Code loads the first 200 lines of MEMORY.md, and the witness (document 003)
# fails one over 25,000 bytes: generate never plans past either.
LINE_CAP = 200
BYTE_CAP = 25_000
CAPS = {"budget": BYTE_CAP, "max_lines": LINE_CAP}
DEFAULT_TYPE_WEIGHTS = {"feedback": 4, "user": 3, "project": 2, "reference": 1}


class Settings(NamedTuple):
    """The settings in effect (a NamedTuple, not a dataclass: dataclasses cost every
    command that reads a setting ~15 ms of CPU to import)."""

    budget: int = 23_000
    max_lines: int = 150
    nudge_every: int = 15
    tool_result_chars: int = 2_000
    type_weights: dict[str, int] = DEFAULT_TYPE_WEIGHTS


def config_path(env: dict[str, str] | None = None) -> str:
    """Where the settings file is looked for (see subrosa.paths.config_file)."""
    return config_file(env)


def _positive_int(raw: object, key: str, where: object) -> int:
    try:
        value = int(str(raw))
    except ValueError:
        raise InvalidInput(f"{where}: {key} must be a whole number, not {raw!r}.") from None
    if value <= 0:
        raise InvalidInput(f"{where}: {key} must be positive, not {value}.")
    return value


def read_file(env: dict[str, str] | None = None) -> dict[str, object]:
    """The settings file's table, or an empty one when there is no file."""
    path = config_path(env)
    if not is_file(path):
        return {}
    from subrosa.tomlsubset import loads

    try:
        data = read_capped(path, JSON_CAP, follow_links=True)  # bounded, regular files only
        text = (data or b"").decode("utf-8")
        table = loads(text)  # the usual plain file, without tomllib's imports (~7 ms)
        if table is not None:
            return table
        import tomllib  # anything else: tomllib reads it, or says what is wrong

        return tomllib.loads(text)
    except RecursionError:  # `a = [[[[…`
        raise InvalidInput(f"{path}: not valid TOML (nested too deeply).") from None
    except ValueError as exc:  # TOMLDecodeError, UnicodeDecodeError, a 5,000-digit number
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInput(
            f"{path}: not valid TOML ({detail}); fix it (docs/settings.md lists every key)."
        ) from None


def text_setting(key: str, env: dict[str, str] | None = None) -> str | None:
    """A text setting: `SUBROSA_<KEY>` when set and not empty, else the file's `key`."""
    env = dict(os.environ) if env is None else env
    value = env.get(f"SUBROSA_{key.upper()}")
    if value:
        return value
    raw = read_file(env).get(key)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidInput(f"{config_path(env)}: {key} must be a string, not {raw!r}.")
    return raw or None


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Read the settings file (if any) and the `SUBROSA_*` overrides."""
    env = dict(os.environ) if env is None else env
    path = config_path(env)
    data = read_file(env)
    values: dict[str, object] = {}
    for key in ("budget", "max_lines", "nudge_every", "tool_result_chars"):
        env_key = f"SUBROSA_{key.upper()}"
        if env_key in env and env[env_key] != "":
            values[key] = _positive_int(env[env_key], env_key, "environment")
        elif key in data:
            values[key] = _positive_int(data[key], key, path)
        if key in CAPS and key in values and values[key] > CAPS[key]:  # type: ignore[operator]
            where = "environment" if env.get(f"SUBROSA_{key.upper()}") else path
            raise InvalidInput(
                f"{where}: {key} must be at most {CAPS[key]} (the cap MEMORY.md must stay "
                f"under), not {values[key]}."
            )
    weights = dict(DEFAULT_TYPE_WEIGHTS)
    raw_weights = data.get("type_weights", {})
    if not isinstance(raw_weights, dict):
        raise InvalidInput(f"{path}: type_weights must be a table.")
    for name, weight in raw_weights.items():
        if name not in FACT_TYPES:
            raise InvalidInput(
                f"{path}: type_weights names an unknown type {name!r} (the types are "
                f"{', '.join(FACT_TYPES)})."
            )
        try:
            weights[name] = int(str(weight))
        except ValueError:
            raise InvalidInput(
                f"{path}: type_weights.{name} must be a whole number, not {weight!r}."
            ) from None
    return Settings(type_weights=weights, **values)  # type: ignore[arg-type]


def resolve_db_url(explicit: str | None = None, env: dict[str, str] | None = None) -> str:
    """The database as an SQLAlchemy URL: flag, `SUBROSA_DB`, the settings file's `db`,
    else `<data dir>/subrosa.db`.

    A value containing `://` is taken as a URL, as is; anything else is a file path
    (relative to the settings file's folder when it comes from there). A path is spelled
    the way SQLAlchemy's `URL.create("sqlite", database=path)` renders it (`%`, `?`, `#`,
    `@` and the like percent-encoded), so that `sqlite_path` and SQLAlchemy both read
    the same file back whatever its name.
    """
    env = dict(os.environ) if env is None else env
    value = explicit or env.get("SUBROSA_DB")
    base = os.getcwd()
    if not value:
        value = text_setting("db", env)
        base = parent(config_file(env))
    if value and "://" in value:
        return value
    path = join(base, expand_user(value)) if value else join(data_dir(env), "subrosa.db")
    return sqlite_url(absolute(path))
