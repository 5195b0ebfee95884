"""`subrosa check` without click, rich or SQLAlchemy: as fast as the witness script.

The witness (skills/memory-compact/check_memory.py) is standard library only and never
opens the database, yet behind click and the index commands' imports `subrosa check`
took ten times as long as the script (bench/cli.py). Here the arguments are read by
hand, the memory dir resolved as every command resolves it (subrosa.paths), and the
script's own `main` runs. Anything this reader does not know exactly (`--help`, a
typo, a value that is not a number) goes to the click command, which says what is wrong.
"""

from __future__ import annotations

from subrosa.cli.fastsearch import ROOT_OPTIONS

FLAGS = ("--strict", "--json")
NUMBERS = ("--max-lines", "--max-bytes")


def parse_argv(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """`[root options] check [options]` (root options also after `check`): the
    --memory-dir given (or None) and the witness's argv; None for anything else."""
    roots = {option.name for option in ROOT_OPTIONS}
    memory_dir: str | None = None
    witness: list[str] = []
    seen_check = False
    args = iter(argv)
    for arg in args:
        name, has_value, value = arg.partition("=")
        if arg == "check" and not seen_check:
            seen_check = True
            continue
        if name in roots or (seen_check and (name in NUMBERS or name == "--dir")):
            if not has_value:
                following = next(args, None)
                if following is None:
                    return None
                value = following
            if name in NUMBERS and not value.lstrip("-").isdigit():
                return None
            if name == "--memory-dir":
                memory_dir = value
            elif name not in roots:  # --db: the witness never opens the database
                witness += [name, value]
        elif seen_check and arg in FLAGS:
            witness.append(arg)
        else:
            return None
    return (memory_dir, witness) if seen_check else None


def main(argv: list[str]) -> int | None:
    """Run `subrosa check` from `argv`, or None when the click command must answer."""
    parsed = parse_argv(argv)
    if parsed is None:
        return None
    memory_dir, witness = parsed
    if "--dir" not in witness:
        from subrosa.paths import resolve_memory_dir

        witness += ["--dir", str(resolve_memory_dir(memory_dir or None))]
    from subrosa.memory.witness import load

    return int(load().main(witness))
