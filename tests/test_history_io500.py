"""IO500's phases in the results store like any other figure: a series per target, phase and the io500 settings
the phase ran with (its record's cell) and hosts; its value in the phase's unit; its valid flag respected; a
regression of one phase between runs found by `history changes`."""

import copy
import json

import pytest

from fsbench.campaign.config import validate
from fsbench.campaign.plan import Plan
from fsbench.history import changes, io500, points, store
from fsbench.history.key import entries
from fsbench.io500 import phases as ph

from conftest import IO500_SMALL as IO500

PROVENANCE = {"arrays": {"p": {"spec": {"kind": "path", "path": "/srv/data"}, "devices": [], "targets": {}}}}


def config(tmp_path, **io500):
    settings = copy.deepcopy(IO500)
    for k, v in io500.items():
        settings[k] = v if not isinstance(v, dict) else settings[k] | v
    c = {"campaign": "io5", "arrays": {"p": {"kind": "path", "path": str(tmp_path)}}, "io500": settings}
    return validate(c | {"history": False, "scratch": str(tmp_path)})


# What doubts a figure, and io500's rule that every write phase of 1 s breaks (as a real record says it: a
# submission's rule, not held against the figure by the history).
DOUBT, LIST_RULE = "counted 990 of 1000 items", "Runtime is smaller than expected minimum runtime"
FIGURES = 13  # io500's standard phases but the timestamp, which has no figure


def records(tmp_path, c, run: int, value=lambda phase: 10.0, valid=True, hosts=("local",), why=None) -> list:
    """A run's phase records, as fsbench.io500.launch writes them (the fields the store reads)."""
    cell = Plan(c).cell_spec("local", "p", "path", "io500", 1)
    folder = tmp_path / f"run{run}-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    found = []
    for i, phase in enumerate(ph.PHASES):
        r = {
            "step": "io500",
            "phase": phase,
            "value": value(phase),
            "unit": ph.unit(phase),
            "seconds": 1.0,
            "valid": valid,
            "invalid_reasons": LIST_RULE if phase in ph.WRITES else "",
            "doubts": "" if valid or why == LIST_RULE else DOUBT,
            "started_at": 1_780_000_000.0 + 86400 * run + i,
            "hosts": {h: {} for h in hosts},
            "cell": cell,
        }
        (folder / f"{phase}.json").write_text(json.dumps(r))
        found.append(folder / f"{phase}.json")
    return found


def append(where, tmp_path, c, run, **kw):
    rows = entries(io500.rows(records(tmp_path, c, run, **kw)), PROVENANCE, c, {})
    return store.append(where, rows), rows


def test_each_phase_is_a_series_in_its_unit_keyed_by_the_settings_it_ran_with(tmp_path):
    c = config(tmp_path)
    _, rows = append(str(tmp_path / "h.sqlite"), tmp_path, c, 0)
    assert [e["row"]["op"] for e in rows] == [p for p in ph.PHASES if p != "timestamp"]
    assert len({e["series"] for e in rows}) == FIGURES
    first = rows[0]
    assert first["key"]["io500"]["ior-easy"] == {"transferSize": 65536, "blockSize": 2**20}
    assert first["key"]["host"] is None and first["key"]["hosts"] == "local"  # a path array: shared storage
    assert first["row"]["gib_s"] == 10.0 and rows[1]["row"]["kiops"] == 10.0
    again = entries(io500.rows(records(tmp_path, config(tmp_path), 1)), PROVENANCE, c, {})
    assert [e["series"] for e in again] == [e["series"] for e in rows]  # another run: the same series
    for change in (
        {"processes": 4},
        {"ior-easy": {"transferSize": "128KiB"}},
        {"ior-easy": {"blockSize": "2MiB"}},
        {"ior-hard": {"segmentCount": 20}},
        {"mdtest-easy": {"n": 30}},
        {"mdtest-hard": {"n": 30}},
        {"stonewall-time": 5},
    ):
        other = entries(io500.rows(records(tmp_path, config(tmp_path, **change), 1)), PROVENANCE, c, {})
        assert not {e["series"] for e in other} & {e["series"] for e in rows}, change
    two = entries(io500.rows(records(tmp_path, c, 1, hosts=("n1", "n2"))), PROVENANCE, c, {})
    assert not {e["series"] for e in two} & {e["series"] for e in rows}  # more hosts, more processes


def test_a_phase_regression_between_runs_is_found_and_invalid_phases_stay_out(tmp_path):
    where, c = str(tmp_path / "h.sqlite"), config(tmp_path)
    noise = [1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.01, 0.99]
    for run, wobble in enumerate(noise):
        slow = 0.6 if run >= 4 else 1.0  # mdtest-hard-write 40 % slower from the fifth run on
        done, _ = append(
            where, tmp_path, c, run, value=lambda p, w=wobble, s=slow: 10.0 * w * (s if p == "mdtest-hard-write" else 1)
        )
        assert done["added"] == FIGURES and len(done["added_by_run"]) == 1  # one run, its own
    stored = store.load(where)
    assert len(points.runs(stored)) == 8 and points.runs(stored)["series"].eq(FIGURES).all()
    found = changes.analyse(points.points(stored), {})
    hit = found[found["verdict"] == "regression"]
    assert list(hit["op"]) == ["mdtest-hard-write"] and list(hit["metric"]) == ["kiops"]
    assert hit["ratio"].iloc[0] == pytest.approx(0.6, abs=0.02)
    # a ninth run whose phases are not valid: stored, never a point of a verdict
    done, _ = append(where, tmp_path, c, 8, value=lambda p: 1.0, valid=False)
    stored = store.load(where)
    assert done["added"] == FIGURES and len(points.points(stored)) == 8 * FIGURES
    assert len(points.points(stored, invalid=True)) == FIGURES
    assert changes.analyse(points.points(stored), {}).equals(found)
    assert set(points.points(stored, invalid=True)["reasons"]) == {DOUBT}  # the list's rule is not held against it
    # a tenth run short of the list's 300 s only: not valid for the list, yet a figure the history follows
    append(where, tmp_path, c, 9, valid=False, why=LIST_RULE)
    assert len(points.points(store.load(where))) == 9 * FIGURES
    listed = points.points(stored).groupby("series").tail(1)
    assert points.label(listed[listed["op"] == "find"].iloc[0]) == "local/p path io500 find"


def test_a_record_of_io500_method_4_is_judged_by_what_doubts_its_figure(tmp_path):
    """Before `doubts`, one `invalid_reasons` held both the list's rules of the time and the doubts."""
    cell = Plan(config(tmp_path)).cell_spec("local", "p", "path", "io500", 1) | {"method": 4}
    old = {"step": "io500", "phase": "mdtest-hard-write", "value": 5.0, "unit": "kIOPS", "seconds": 1.0}
    old |= {"valid": False, "invalid_reasons": "counted 990 of 1000 items; ran 1 s, under the list's 300 s"}
    old |= {"started_at": 1_780_000_000.0, "hosts": {"local": {}}, "cell": cell}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (row,) = io500.rows([tmp_path / "old.json"]).to_dict("records")
    assert not row["valid"] and row["invalid_reasons"] == "counted 990 of 1000 items"


def test_a_target_s_previous_run_is_the_latest_earlier_one_of_its_campaign(tmp_path):
    """What the phase chart draws beside this run's bars (fsbench.history.io500.previous)."""
    where, c = str(tmp_path / "h.sqlite"), config(tmp_path)
    append(where, tmp_path, c, 0, value=lambda p: 1.0)
    append(where, tmp_path, c, 1, value=lambda p: 2.0 if p != "find" else 7.0)
    now = records(tmp_path, c, 2, value=lambda p: 3.0)
    other = config(tmp_path) | {"campaign": "elsewhere"}  # another campaign's run after run 1: not this one's
    append(where, tmp_path, other, 1.5, value=lambda p: 5.0)
    store.append(where, entries(io500.rows(now), PROVENANCE, c, {}))  # this run stored already (history ran first)
    stored = store.load(where)
    started, figures = io500.previous(stored, [json.loads(r.read_text()) for r in now])
    assert started == "2026-05-29T20:26:40.000000+00:00"  # run 1's first phase
    assert figures == {p: 7.0 if p == "find" else 2.0 for p in ph.PHASES if p != "timestamp"}
    first = [json.loads(r.read_text()) for r in records(tmp_path, c, 0)]
    assert io500.previous(stored, first) is None  # nothing before the first run
    assert io500.previous([], first) is None
