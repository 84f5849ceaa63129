"""The results store, against SQLite and a real PostgreSQL server: idempotent appends, one transaction per append
(kill -9 inside it leaves the store as it was), concurrent appends that lose nothing."""

import json
import os
import signal
import subprocess
import sys

import pytest

from fsbench.history import series, store

from conftest import REPO, row


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("postgres")


def run_rows(campaign, reps=3, started="2026-01-01T00:00:00+00:00", cells=("raw", "ext4")) -> list[dict]:
    """What one run appends: per cell, write and read rows for each rep, with key and context."""
    provenance = {"arrays": {"demo": {"spec": {"kind": "loop", "size": 2**30}, "devices": [{"model": "loop"}]}}}
    found = []
    for target in cells:
        for op in ("write", "read"):
            for rep in range(1, reps + 1):
                r = row(target, op, 100.0 + rep, rep, campaign=campaign, started_at=f"{started[:-6]}{rep}+00:00")
                r |= {"workload": "io", "iodepth": 1, "shared_file": False, "lat_p50_us": 10.0}
                found += series.entries(__import__("pandas").DataFrame([r]), provenance, {"firmware": "1"})
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
    points = series.points(store.load(where))
    assert set(points.groupby("series")["campaign"].nunique()) == {2}


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
