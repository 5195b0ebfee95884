"""Which database a command opens, and what it says about it: file paths of any spelling,
server URLs with their query parameters, and passwords that are never printed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url

from subrosa.archive.pending import pending_dir
from subrosa.config import resolve_db_url
from subrosa.db import DatabaseError, database_url, get_engine, open_database
from subrosa.errors import InvalidInput, hide_passwords
from subrosa.paths import sqlite_path
from tests.conftest import Db, RunCli, subrosa_forked, subrosa_process, write_leaf

pytestmark = pytest.mark.engines

ODD_NAMES = ["it's #1 (50%); a@b", "q?x=1&y=2", "plus+and space", "percent %41 stays", "東京"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_database_file_may_have_any_name(tmp_path: Path, name: str) -> None:
    path = tmp_path / name / f"{name}.db"
    path.parent.mkdir()  # a folder the user names must exist (only the data dir is made)
    url = resolve_db_url(str(path))
    assert url == URL.create("sqlite", database=str(path)).render_as_string()
    assert sqlite_path(url) == str(path)
    assert database_url(url).database == str(path)
    open_database(url)
    assert path.is_file()  # and no other file beside it but its -wal, -shm and lock
    assert all(p.name.startswith(path.name) for p in path.parent.iterdir())


def test_the_cli_opens_and_names_an_oddly_named_file(tmp_path: Path, run: RunCli) -> None:
    """Alembic's ConfigParser once read the `%` of such a path as interpolation."""
    memory = tmp_path / "memory"
    memory.mkdir()
    path = tmp_path / "it's #1 (50%); a@b?.db"
    write_leaf(memory, "alpha.md")
    on = ["--memory-dir", str(memory), "--db", str(path)]
    run(*on, "fact", "upsert", "--leaf", "alpha.md", "--hook", "a")
    status = json.loads(run(*on, "db", "status", "--json").stdout)
    assert status["current"] is True and sqlite_path(status["url"]) == str(path)
    assert path.is_file()


def test_the_settings_file_may_name_the_database(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = isolated_env / ".config" / "subrosa" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('db = "team.db"\n', encoding="utf-8")
    assert sqlite_path(resolve_db_url()) == str(config.parent / "team.db")  # beside the file
    config.write_text('db = "postgresql://me@db.example.com/team?sslmode=require"\n')
    assert resolve_db_url() == "postgresql://me@db.example.com/team?sslmode=require"
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "env.db"))
    assert sqlite_path(resolve_db_url()) == str(tmp_path / "env.db")
    assert sqlite_path(resolve_db_url(str(tmp_path / "flag.db"))) == str(tmp_path / "flag.db")
    monkeypatch.delenv("SUBROSA_DB")
    config.write_text("db = 3\n")
    with pytest.raises(InvalidInput, match="db must be a string"):
        resolve_db_url()


def test_postgresql_means_psycopg_3() -> None:
    assert database_url("postgresql://me@h/db").drivername == "postgresql+psycopg"
    assert database_url("postgres://me@h/db").drivername == "postgresql+psycopg"
    # Another driver's name is refused (the archive, search and ingest, speak psycopg 3
    # and libpq only): test_a_postgresql_driver_other_than_psycopg_is_one_sentence_alike.
    with pytest.raises(InvalidInput):
        database_url("postgresql+psycopg2://me@h/db")


def test_passwords_are_hidden_in_any_text() -> None:
    message = (
        "cannot reach postgresql+psycopg://me:s3cr%40t@db:5432/team?sslmode=require; "
        "nor mysql://root:hunter2@h/x; sqlite:////a:b@c.db and https://github.com/o/r stay, "
        "as does https://git.example.com:8443/o/r by me@example.com"
    )
    shown = hide_passwords(message)
    assert "s3cr" not in shown and "hunter2" not in shown
    assert "postgresql+psycopg://me:***@db:5432/team?sslmode=require" in shown
    assert "sqlite:////a:b@c.db and https://github.com/o/r stay, as does https://git" in shown
    assert shown.endswith("https://git.example.com:8443/o/r by me@example.com")
    assert str(DatabaseError(message)) == shown


def test_a_password_given_as_a_query_parameter_is_hidden_too() -> None:
    # libpq takes `?password=` as it takes `user:password@`: the same secret, spelled
    # where a URL copied from a managed service's dialog or a script may carry it.
    message = "postgresql://me@db/team?sslmode=require&password=hunter2&x=1 and ?password=s3cr"
    shown = hide_passwords(message)
    assert "hunter2" not in shown and "s3cr" not in shown
    assert shown == "postgresql://me@db/team?sslmode=require&password=***&x=1 and ?password=***"


def test_a_malformed_url_is_one_sentence_without_its_password(run: RunCli) -> None:
    result = run("--db", "postgresql://me:hunter2@db:notaport/team", "db", "status", expect=1)
    assert "hunter2" not in result.output
    assert "postgresql://me:***@db:notaport/team: not a database URL" in result.stderr


def _with_password(db: Db, password: str = "hunter2 s3cr%t") -> str:
    return make_url(db.url).set(password=password).render_as_string(hide_password=False)


@pytest.mark.engines("postgresql")
def test_the_password_is_never_printed(db: Db, run: RunCli, tmp_path: Path) -> None:
    """The test server trusts its socket, so any password connects; none may be shown."""
    url = _with_password(db)
    memory = tmp_path / "memory"
    memory.mkdir()
    on = ["--db", url, "--memory-dir", str(memory)]
    outputs = [run(*on, "db", "upgrade").output]
    outputs.append(run(*on, "db", "status").output)
    outputs.append(run(*on, "db", "status", "--json").output)
    outputs.append(run(*on, "doctor", "--json", expect=None).output)
    outputs.append(run(*on, "transcript", "list").output)
    missing = make_url(url).set(database="no_such_database").render_as_string(False)
    failed = run("--db", missing, "--memory-dir", str(memory), "db", "status", expect=1)
    # Refused at the connection, as search's and ingest's own connections say it.
    assert "cannot connect" in failed.stderr and "no_such_database" in failed.stderr
    outputs.append(failed.output)
    for output in outputs:
        assert "hunter2" not in output and "s3cr" not in output, output
    assert "subrosa:***@" in outputs[1]


@pytest.mark.engines("postgresql")
def test_a_password_in_the_query_is_never_printed(db: Db, run: RunCli, tmp_path: Path) -> None:
    url = make_url(db.url).update_query_dict({"password": "hunter2"}).render_as_string(False)
    on = ["--db", url, "--memory-dir", str(tmp_path)]
    outputs = [run(*on, "db", "status").output, run(*on, "db", "status", "--json").output]
    outputs.append(run(*on, "doctor", "--json", expect=None).output)
    missing = make_url(url).set(database="no_such_database").render_as_string(False)
    outputs.append(run("--db", missing, "db", "status", expect=1).output)
    outputs.append(run("--db", missing, "search", "x", expect=1).output)
    for output in outputs:
        assert "hunter2" not in output and "password=***" in output, output


@pytest.mark.engines("postgresql")
def test_doctor_hides_the_password_of_a_server_it_cannot_open(
    db: Db, run: RunCli, tmp_path: Path
) -> None:
    missing = make_url(_with_password(db)).set(database="no_such_database")
    on = ["--db", missing.render_as_string(False), "--memory-dir", str(tmp_path)]
    assert "hunter2" not in run(*on, "doctor", expect=None).output


@pytest.mark.engines("postgresql")
def test_query_parameters_reach_the_server(db: Db) -> None:
    query = {"application_name": "subrosa-test", "options": "-c statement_timeout=4321"}
    engine = get_engine(make_url(db.url).update_query_dict(query).render_as_string(False))
    with engine.connect() as conn:
        assert conn.execute(text("SHOW application_name")).scalar() == "subrosa-test"
        assert conn.execute(text("SHOW statement_timeout")).scalar() == "4321ms"
    # libpq ignores sslmode on a unix socket (the test server's), so this shows only
    # that it is handed to the driver, as is every other parameter.
    url = "postgresql://me:hunter2@db.example.com/team?sslmode=verify-full&connect_timeout=3"
    engine = get_engine(url)
    _args, kwargs = engine.dialect.create_connect_args(engine.url)
    assert kwargs["sslmode"] == "verify-full" and str(kwargs["connect_timeout"]) == "3"
    assert engine.dialect.driver == "psycopg"


def test_a_server_subrosa_does_not_support_is_one_sentence(run: RunCli, tmp_path: Path) -> None:
    # Not "no database driver for mysql" (no driver would help), nor the archive's old
    # "needs an SQLite file" (PostgreSQL serves it too); the password never shows.
    for command in (["fact", "list"], ["search", "x"], ["transcript", "list"]):
        db = ["--db", "mysql://alice:hunter22@db/z", "--memory-dir", str(tmp_path)]
        said = run(*db, *command, expect=2).stderr
        assert "an SQLite file or on a PostgreSQL server" in said, (command, said)
        assert "hunter22" not in said and "driver" not in said


def test_a_postgresql_driver_other_than_psycopg_is_one_sentence_alike(
    run: RunCli, tmp_path: Path
) -> None:
    # A URL copied from another tool's settings (SQLAlchemy's psycopg2 spelling): the
    # facts said "psycopg is not installed beside subrosa: pip install ..." (psycopg is,
    # and installing it again would not help), the archive the sentence below.
    for command in (["fact", "list"], ["search", "x"], ["db", "status"]):
        db = ["--db", "postgresql+psycopg2://alice:hunter22@db/z", "--memory-dir", str(tmp_path)]
        said = run(*db, *command, expect=2).stderr
        assert "an SQLite file or on a PostgreSQL server" in said, (command, said)
        assert "hunter22" not in said and "not installed" not in said


def test_a_server_out_of_reach_is_one_line_with_libpqs_hint(run: RunCli, tmp_path: Path) -> None:
    """libpq's message is the failure, then a hint on a line of its own: the error is
    one line, the hint a sentence of its own after the failure, the password hidden."""
    db = ["--db", "postgresql+psycopg://bob:pw99@127.0.0.1:9/team", "--memory-dir", str(tmp_path)]
    failed = run(*db, "fact", "list", expect=1)
    [line] = failed.stderr.strip().splitlines()
    assert "bob:***@127.0.0.1:9/team: cannot connect (" in line and "pw99" not in line
    assert "Connection refused. Is the server running" in line
    # `subrosa search` reaches the server through libpq itself (subrosa.libpq): alike.
    searched = subrosa_process("--db", "postgresql://bob:pw99@127.0.0.1:9/team", "search", "x")
    [line] = searched.stderr.decode().strip().splitlines()
    assert searched.returncode == 1 and "bob:***@127.0.0.1:9/team: cannot connect (" in line
    assert "Connection refused. Is the server running" in line and "pw99" not in line


def test_one_line_reason_joins_a_drivers_lines_as_sentences() -> None:
    from subrosa.errors import one_line_reason

    assert one_line_reason("failed: Connection refused\n\tIs it running?\n") == (
        "failed: Connection refused. Is it running?"
    )
    assert one_line_reason("FATAL:\n  no   such role.\nHINT: x") == "FATAL: no such role. HINT: x"
    assert one_line_reason("") == ""


def test_a_missing_driver_is_one_sentence_alike_everywhere(tmp_path: Path) -> None:
    # psycopg hidden (an import of it fails, as where it is not installed): the facts
    # (SQLAlchemy) and search's fast path told to take psycopg say the same sentence.
    # (Its default, libpq itself, needs no psycopg: it reaches for the server, which
    # is not there, and says so, the password hidden.)
    hidden = tmp_path / "hidden" / "psycopg"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = {**os.environ, "PYTHONPATH": str(hidden.parent)}
    url = "postgresql://alice:hunter22@127.0.0.1:9/team"
    proc = subrosa_process("--db", url, "search", "x", env=env)
    assert proc.returncode != 0 and "hunter22" not in proc.stderr.decode()
    assert "alice:***@127.0.0.1:9/team: cannot connect" in proc.stderr.decode()
    env["SUBROSA_PG_DRIVER"] = "psycopg"
    said = []
    for command in (["fact", "list"], ["search", "x"]):
        proc = subrosa_process("--db", url, "--memory-dir", str(tmp_path), *command, env=env)
        err = proc.stderr.decode()
        assert proc.returncode != 0 and "hunter22" not in err, (command, err)
        assert "psycopg is not installed beside subrosa" in err, (command, err)
        said.append(err[err.index("psycopg is not installed") :])
    assert said[0] == said[1]  # the URL before it as each entry read it


def test_a_database_in_a_folder_that_is_not_there_is_one_sentence(
    tmp_path: Path, isolated_env: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path the user gave (--db, SUBROSA_DB, the settings file's db) whose folder does
    not exist is refused, naming it, and no folder is made; subrosa's own data dir is."""
    memory = tmp_path / "memory"
    memory.mkdir()
    write_leaf(memory, "alpha.md")
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    missing = tmp_path / "nowhere" / "deeper"
    wanted = missing / "x.db"
    commands = (
        ["fact", "list"],
        ["fact", "upsert", "alpha", "--hook", "a"],
        ["generate"],
        ["ingest"],
        ["search", "alpha"],
        ["transcript", "list"],
        ["db", "upgrade"],
        ["db", "status"],
    )

    def refused(*args: str, env: dict[str, str] | None = None) -> None:
        for command in commands:
            # A real process: the fast paths (search, generate, upsert, ingest) answer
            # there.
            done = subrosa_forked(*args, *command, env=env)
            lines = done.stderr.decode().splitlines()
            assert done.returncode == 2, (command, lines)
            assert len(lines) == 1 and str(wanted) in lines[0], (command, lines)
            assert "folder" in lines[0], lines
            assert not (tmp_path / "nowhere").exists(), command
        assert run(*args, "fact", "list", expect=2).exit_code == 2

    refused("--db", str(wanted))
    monkeypatch.setenv("SUBROSA_DB", str(wanted))
    refused()
    monkeypatch.delenv("SUBROSA_DB")
    config = isolated_env / ".config" / "subrosa" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'db = "{wanted}"\n', encoding="utf-8")
    refused()
    config.unlink()

    # The default place, subrosa's data dir, is made when it is not there yet.
    data = isolated_env / ".local" / "share" / "subrosa"
    assert not data.exists()
    run("fact", "upsert", "alpha", "--hook", "a")
    assert (data / "subrosa.db").is_file()


def test_the_hooks_fail_open_on_a_database_folder_that_is_not_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session still ends; what it should archive waits for a database that works."""
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "0")
    wanted = tmp_path / "nowhere" / "x.db"
    monkeypatch.setenv("SUBROSA_DB", str(wanted))
    transcript = tmp_path / "s-1.jsonl"
    transcript.write_text("{}\n", encoding="utf-8")
    payload = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    for name in ("session-start", "stop", "session-end"):
        done = subrosa_process("hook", name, input=json.dumps(payload))
        assert done.returncode == 0, done.stderr
    pending = list(Path(pending_dir()).iterdir())
    assert len(pending) == 1
    done = subrosa_process("ingest", "--pending")  # what the hook starts in the background
    assert done.returncode == 2 and str(wanted) in done.stderr.decode()
    assert list(Path(pending_dir()).iterdir()) == pending
    assert not wanted.parent.exists()


def test_a_schema_a_newer_subrosa_wrote_is_refused_in_one_sentence(
    db: Db, run: RunCli, tmp_path: Path
) -> None:
    """A teammate's newer subrosa upgraded the team's server (or this machine ran a newer
    one once): this subrosa does not know that revision, so it must neither write nor
    try to migrate it, and every command says so in one sentence, with what to do; `db
    status` and doctor too. The revision stays as it was."""
    memory = tmp_path / "memory"
    memory.mkdir()
    on = ["--db", db.url, "--memory-dir", str(memory)]
    run(*on, "db", "upgrade")
    engine = get_engine(resolve_db_url(db.url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    said = "revision 0999, which this subrosa does not know"
    for args in (
        ["search", "anything", "--all-projects"],
        ["transcript", "list"],
        ["fact", "list"],
        ["generate"],
        ["db", "upgrade"],
    ):
        result = run(*on, *args, expect=1)
        assert said in result.stderr and "upgrade subrosa" in result.stderr, (args, result.output)
    process = subrosa_process(*on, "search", "anything", "--all-projects")
    assert process.returncode == 1 and b"Traceback" not in process.stderr
    assert said.encode() in process.stderr
    status = json.loads(run(*on, "db", "status", "--json").stdout)
    assert status["revision"] == "0999" and status["current"] is False
    assert status["newer"] is True
    assert "upgrade subrosa" in run(*on, "db", "status").stdout
    checks = json.loads(run(*on, "doctor", "--json", expect=1).stdout)["checks"]
    (database,) = [c for c in checks if c["name"] == "database"]
    assert said in database["detail"] and not database["ok"]
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0999"


def test_doctor_asks_for_the_driver_not_the_password_when_psycopg_is_missing(
    tmp_path: Path,
) -> None:
    # The database line says psycopg is missing: its fix is to install it, not to look
    # at the URL, the password and the server (which are fine).
    hidden = tmp_path / "hidden" / "psycopg"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = {**os.environ, "PYTHONPATH": str(hidden.parent)}
    url = "postgresql://alice:hunter22@127.0.0.1:9/team"
    proc = subrosa_process("--db", url, "--memory-dir", str(tmp_path), "doctor", env=env)
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "hunter22" not in out + proc.stderr.decode()
    line = out[out.index("!! database") :].split("\n")
    assert "psycopg is not installed beside subrosa" in line[0]
    assert line[1].strip() == "fix: install psycopg beside subrosa, as the line above says"


def test_doctor_names_a_password_file_libpq_ignores(tmp_path: Path) -> None:
    # docs/team.md step 3: libpq ignores ~/.pgpass unless it is private, and says so in
    # a WARNING of its own; the connection then fails for want of a password. doctor's
    # fix names the file and the chmod, not only "check the password".
    home = Path(os.environ["HOME"])
    pgpass = home / ".pgpass"
    pgpass.write_text("127.0.0.1:9:team:alice:hunter22\n")
    pgpass.chmod(0o644)
    url = "postgresql://alice@127.0.0.1:9/team"
    proc = subrosa_process("--db", url, "--memory-dir", str(tmp_path), "doctor")
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "hunter22" not in out + proc.stderr.decode()
    fix = out[out.index("!! database") :].split("\n")[1].strip()
    assert f"chmod 600 {pgpass}" in fix, fix
    pgpass.chmod(0o600)
    proc = subrosa_process("--db", url, "--memory-dir", str(tmp_path), "doctor")
    out = proc.stdout.decode()
    assert "chmod 600" not in out


@pytest.mark.engines("postgresql")
def test_libpq_warns_of_a_password_file_others_may_read_once(db: Db, tmp_path: Path) -> None:
    # libpq warns on stderr of a ~/.pgpass others may read at each connection it opens,
    # and ignores the file; doctor opens several and printed the warning 6 times, `db
    # upgrade` twice. Once a process is enough: the file is ignored either way.
    pgpass = Path(os.environ["HOME"]) / ".pgpass"
    pgpass.write_text("*:*:*:*:unused\n")
    pgpass.chmod(0o644)
    on = ["--db", db.url, "--memory-dir", str(tmp_path)]
    try:
        for args in (["db", "upgrade"], ["doctor"], ["doctor", "--json"], ["search", "x"]):
            proc = subrosa_process(*on, *args)
            err = proc.stderr.decode()
            assert proc.returncode in (0, 1), (args, err)
            warned = f'password file "{pgpass}" has group or world access'
            assert err.count(warned) == 1, (args, err)
    finally:
        pgpass.chmod(0o600)  # the test's teardown connects too
    proc = subrosa_process(*on, "doctor")
    assert proc.returncode == 0 and "password file" not in proc.stderr.decode()
