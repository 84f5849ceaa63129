"""The results store, against SQLite and a real PostgreSQL server: idempotent appends, one transaction per append
(kill -9 inside it leaves the store as it was), concurrent appends that lose nothing."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from fsbench.campaign.config import ConfigError, validate
from fsbench.history import key, points, store

from conftest import PG_PASSWORD, REPO, row


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("postgres_tcp")  # over TCP, its password in PGPASSWORD


def run_rows(campaign, reps=3, started="2026-01-01T00:00:00+00:00", cells=("raw", "ext4")) -> list[dict]:
    """What one run appends: per cell, write and read rows for each rep, with key and context."""
    provenance = {"arrays": {"demo": {"spec": {"kind": "loop", "size": 2**30}, "devices": [{"model": "loop"}]}}}
    found = []
    for target in cells:
        for op in ("write", "read"):
            for rep in range(1, reps + 1):
                r = row(target, op, 100.0 + rep, rep, campaign=campaign, started_at=f"{started[:-6]}{rep}+00:00")
                r |= {"workload": "io", "iodepth": 1, "shared_file": False, "lat_p50_us": 10.0}
                cell = {"array_spec": {"kind": "loop", "size": 2**30}, "fs": None, "size": 10**9, "cache": "drop"}
                found += key.entries(pd.DataFrame([r]), provenance, {}, {"firmware": "1"}, cell_of=lambda _, c=cell: c)
    return found


def count(where, campaign=None) -> int:
    return sum(1 for r in store.load(where) if campaign in (None, r["campaign"]))


def test_rerun_adds_nothing_and_a_remeasured_cell_adds_its_rows(where):
    first = run_rows("nvme-2026-10")
    assert store.append(where, first)["added"] == 12
    assert store.append(where, first)["added"] == 0  # the finished campaign again
    # one cell measured again: new started_at for its rows, the others as they were
    again = [e for e in first if e["row"]["target"] != "ext4"] + run_rows(
        "nvme-2026-10", started="2026-01-02T00:00:00+00:00", cells=("ext4",)
    )
    assert store.append(where, again)["added"] == 6
    assert count(where) == 18
    # same cell, another campaign name: one series
    store.append(where, run_rows("nvme-2026-12", started="2026-02-01T00:00:00+00:00"))
    found = points.points(store.load(where))
    assert set(found.groupby("series")["campaign"].nunique()) == {2}


def test_a_run_is_one_measuring_pass_whatever_the_campaign_name(where):
    """The same campaign measured three nights in a row: three runs. Appending a night again (aggregate and
    history rerun, nothing measured) adds no run; a re-measured cell is a run of its own rows."""
    nights = [run_rows("nightly", started=f"2026-03-0{d}T02:00:00+00:00") for d in (1, 2, 3)]
    for night in nights:
        store.append(where, night)
    store.append(where, nights[1])  # history rerun alone: its rows are in the store, in their run
    assert store.append(where, nights[0] + nights[2])["added"] == 0
    runs = points.runs(store.load(where))
    assert list(runs["run"]) == [f"nightly 2026-03-0{d}T02:00:001+00:00" for d in (1, 2, 3)]
    assert list(runs["rows"]) == [12, 12, 12] and set(runs["campaign"]) == {"nightly"}
    found = points.points(store.load(where))
    assert set(found.groupby(["series", "metric"])["run"].nunique()) == {3}  # three points per series
    redo = run_rows("nightly", started="2026-03-04T02:00:00+00:00", cells=("ext4",))
    assert store.append(where, nights[2] + redo)["added_by_run"] == {"nightly 2026-03-04T02:00:001+00:00": 6}
    shown = subprocess.run(
        [sys.executable, "-m", "fsbench", "history", "runs", "--store", where],
        env=os.environ | {"PYTHONPATH": str(REPO / "scripts")},
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) == 5, shown.stdout + shown.stderr
    assert "started" in shown.stdout and "rows" in shown.stdout


def test_a_store_of_schema_1_gets_a_run_per_campaign(tmp_path):
    import sqlalchemy as sa

    where = str(tmp_path / "old.sqlite")
    store.append(where, run_rows("old", started="2026-01-01T00:00:00+00:00"))
    engine = sa.create_engine(store.url_of(where))
    with engine.begin() as conn:  # as schema 1 left it: no run column
        conn.exec_driver_sql("DROP INDEX ix_measurements_run")
        conn.exec_driver_sql("ALTER TABLE measurements DROP COLUMN run")
    engine.dispose()
    assert {r["run"] for r in store.load(where)} == {"old 2026-01-01T00:00:001+00:00"}
    store.append(where, run_rows("new", started="2026-02-01T00:00:00+00:00"))
    assert list(points.runs(store.load(where))["run"].str.split().str[0]) == ["old", "new"]


CHILD = """
import json, sys
sys.path.insert(0, {scripts!r})
from fsbench.history import store
def pause():
    print("inside", flush=True)
    sys.stdin.readline()  # until the parent says go on (or kills us)
hook = pause if sys.argv[3] == "pause" else None
done = store.append(sys.argv[1], json.load(open(sys.argv[2])), batch=4, between_batches=hook)
print(json.dumps(done), flush=True)
"""


def child(where, entries, tmp_path, name, pause=True) -> subprocess.Popen:
    data = tmp_path / f"{name}.json"
    data.write_text(json.dumps(entries, default=str))
    code = CHILD.format(scripts=str(REPO / "scripts"))
    mode = "pause" if pause else "go"
    return subprocess.Popen(
        [sys.executable, "-c", code, where, str(data), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_kill_during_the_append_leaves_no_half_run_and_the_next_completes_it(where, tmp_path):
    store.append(where, run_rows("before"))
    entries = run_rows("killed", started="2026-03-01T00:00:00+00:00")
    proc = child(where, entries, tmp_path, "killed")
    assert proc.stdout.readline().strip() == "inside"  # 4 of its 12 rows written, not committed
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert count(where, "killed") == 0 and count(where, "before") == 12  # the store as it was
    assert store.append(where, entries)["added"] == 12  # the next run completes it
    assert count(where) == 24


def test_two_appends_at_once_lose_nothing(where, tmp_path):
    a_rows = run_rows("a", started="2026-04-01T00:00:00+00:00")
    b_rows = run_rows("b", started="2026-05-01T00:00:00+00:00") + a_rows[:5]  # overlapping: both carry 5 of a's
    a = child(where, a_rows, tmp_path, "a")
    assert a.stdout.readline().strip() == "inside"  # a holds its transaction open
    b = child(where, b_rows, tmp_path, "b", pause=False)
    while True:  # let a go on, batch after batch, b meanwhile waiting (SQLite) or writing (PostgreSQL)
        a.stdin.write("\n")
        a.stdin.flush()
        line = a.stdout.readline()
        if line.strip() != "inside":
            a_done = json.loads(line)
            break
    a.stdin.close()
    b_done = json.loads(b.stdout.readline())
    assert a.wait() == 0 and b.wait() == 0
    assert count(where, "a") == 12 and count(where, "b") == 12
    assert a_done["added"] + b_done["added"] == 24  # each row added once, by one of them


def test_marks_need_a_known_run(where):
    store.append(where, run_rows("known"))
    store.mark(where, "known", "new firmware")
    assert store.load_marks(where) == {"known": "new firmware"}
    with pytest.raises(ValueError, match="no run 'unknown'"):
        store.mark(where, "unknown", "x")


def test_a_url_with_a_password_is_refused_and_says_where_the_password_goes():
    for url in ("postgresql://me:s3cret@db.example/perf", "postgresql://me@db.example/perf?password=s3cret"):
        with pytest.raises(ConfigError) as e:
            validate({"campaign": "c", "arrays": {"a": {"kind": "path", "path": "/tmp"}}, "history": url})
        message = str(e.value)
        assert "s3cret" not in message and "history" in message, message
        assert all(place in message for place in ("PGPASSWORD", "~/.pgpass", "PGSERVICE", "pg_service.conf"))
        with pytest.raises(ConfigError, match="PGPASSWORD"):  # --store too
            store.load(url)
    assert store.url_of("postgresql://me@db.example/perf").startswith("postgresql+psycopg://me@")


def test_a_libpq_key_value_string_is_postgresql_and_refused_with_a_password(postgres_tcp, tmp_path, monkeypatch):
    """`host=db user=bench` (libpq's conninfo, no ://) is a PostgreSQL store, not an SQLite file of that name; with
    password= it is refused as a URL with one is, and the message does not show it."""
    base = {"campaign": "c", "arrays": {"a": {"kind": "path", "path": "/tmp"}}}
    for given in ("host=db.example user=me password=s3cret", "host=db.example password='s3 cret' dbname=perf"):
        with pytest.raises(ConfigError) as e:
            validate(base | {"history": given})
        assert "s3" not in str(e.value) and "password=***" in str(e.value) and "PGPASSWORD" in str(e.value)
        with pytest.raises(ConfigError, match="PGPASSWORD"):  # --store too
            store.load(given)
    assert validate(base | {"history": "service=perf"})["history"] == "service=perf"
    host, port = postgres_tcp.split("@")[1].split("/")[0].split(":")
    monkeypatch.chdir(tmp_path)  # an SQLite file named after the string would land here
    given = f"host={host} port={port} user=postgres dbname=postgres"
    assert store.append(given, run_rows("conninfo"))["added"] == 12
    assert count(postgres_tcp, "conninfo") == 12 and not list(tmp_path.iterdir())
    assert store.describe(given) == f"postgresql+psycopg://?dbname=postgres&host={host}&port={port}&user=postgres"
    service = tmp_path.parent / "pg_service.conf"  # a bare service= name: libpq reads the rest from the file
    service.write_text(f"[perf]\nhost={host}\nport={port}\nuser=postgres\ndbname=postgres\n")
    monkeypatch.setenv("PGSERVICEFILE", str(service))
    assert count("service=perf", "conninfo") == 12 and not list(tmp_path.iterdir())
    assert store.url_of("a=b.sqlite") == f"sqlite:///{tmp_path / 'a=b.sqlite'}"  # no libpq keyword: a file


def test_libpq_finds_the_password_in_pgpass_and_not_at_all_fails_in_one_line(postgres_tcp, monkeypatch, tmp_path):
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "nowhere"))
    with pytest.raises(OSError) as e:
        store.load(postgres_tcp)
    assert "password" in str(e.value) and "\n" not in str(e.value), str(e.value)
    host, port = postgres_tcp.split("@")[1].split("/")[0].split(":")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{host}:{port}:*:postgres:{PG_PASSWORD}\n")
    passfile.chmod(0o600)  # libpq ignores a password file others can read
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    assert store.append(postgres_tcp, run_rows("pgpass"))["added"] == 12
    service = tmp_path / "pg_service.conf"  # a service file names the server; the password still from PGPASSFILE
    service.write_text(f"[perf]\nhost={host}\nport={port}\nuser=postgres\ndbname=postgres\n")
    monkeypatch.setenv("PGSERVICEFILE", str(service))
    assert count("postgresql:///?service=perf") == 12


def test_a_server_that_never_answers_fails_after_the_timeout_in_one_line():
    with socket.socket() as s:  # the kernel completes the handshake; nobody ever answers libpq's start-up packet
        s.bind(("127.0.0.1", 0))
        s.listen()
        url = f"postgresql://me@127.0.0.1:{s.getsockname()[1]}/perf"
        t0 = time.monotonic()
        with pytest.raises(OSError) as e:
            store.load(url, timeout=2)
        took = time.monotonic() - t0
    assert 1.5 < took < 30, took
    assert str(e.value).startswith("results store postgresql+psycopg://me@127.0.0.1") and "\n" not in str(e.value)


def test_the_filesystem_of_a_store_is_read_and_a_shared_one_warned_of(tmp_path, monkeypatch):
    for path in ("/proc/self", "/dev/shm", "/", str(tmp_path)):
        found = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", path], capture_output=True, text=True)
        assert store.filesystem_type(path) == found.stdout.split()[-1], path  # mounts on one point: the last
    assert store.lock_warning(str(tmp_path / "deeper/history.sqlite")) is None  # a local disk (or tmpfs)
    assert store.lock_warning("postgresql://me@db.example/perf") is None
    # No NFS, Lustre or FUSE filesystem can be mounted here without its server: the type as mountinfo would name it
    for kind in ("nfs4", "lustre", "gpfs", "beegfs", "fuse.sshfs", "fuse"):
        monkeypatch.setattr(store, "filesystem_type", lambda path, kind=kind: kind)
        warning = store.lock_warning(str(tmp_path / "history.sqlite"))
        assert warning and kind in warning and "local disk" in warning


def test_the_history_keys_are_checked_before_anything_runs():
    base = {"campaign": "c", "arrays": {"a": {"kind": "path", "path": "/tmp"}}}
    assert validate(base)["history_timeout"] == 10 and validate(base)["history_min_change"] == 0.05
    for name, bad in (("history_timeout", 0), ("history_timeout", "soon"), ("history_min_change", -0.1)):
        with pytest.raises(ConfigError, match=f"'{name}'.*{bad}"):
            validate(base | {name: bad})


def test_left_out_runs_and_series_are_listed_with_why(tmp_path):
    where = str(tmp_path / "h.sqlite")
    for i, night in enumerate(("n1", "n2", "n3", "n4")):
        entries = run_rows(night, started=f"2026-0{i + 1}-01T00:00:00+00:00")
        for e in entries:  # the first three nights' raw rows too short to count
            if e["row"]["target"] == "raw" and i < 3:
                e["row"] |= {"valid": False, "invalid_reasons": "short"}
        store.append(where, entries)
    gone = points.left_out(store.load(where))
    assert points.left_out_summary(gone) == [
        "6 run(s) of 2 series left out: invalid (short)",  # raw write and raw read, 3 nights each
        "2 series left out: one valid run only: nothing to compare it with yet",
    ]
    shown = subprocess.run(
        [sys.executable, "-m", "fsbench", "history", "changes", "--store", where],
        env=os.environ | {"PYTHONPATH": str(REPO / "scripts")},
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0 and "6 run(s) of 2 series left out: invalid (short)" in shown.stdout, shown.stdout


def test_a_store_of_invalid_runs_only_says_why_it_lists_no_series(tmp_path):
    where = str(tmp_path / "h.sqlite")
    for i, night in enumerate(("n1", "n2")):
        entries = run_rows(night, started=f"2026-0{i + 1}-01T00:00:00+00:00")
        for e in entries:
            e["row"] |= {"valid": False, "invalid_reasons": "short"}
        store.append(where, entries)
    shown = subprocess.run(
        [sys.executable, "-m", "fsbench", "history", "series", "--store", where],
        env=os.environ | {"PYTHONPATH": str(REPO / "scripts")},
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "(none)" and "left out: invalid (short)" in shown.stdout, shown.stdout
