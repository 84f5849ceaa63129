"""The campaign as jobs (fsbench.campaign.plan): a cell's path and its wildcards are one another's inverse, its params
carry every setting, and the priorities run a cell's steps back to back, cells in rounds, targets in order."""

import json
import re

import pytest

from fsbench.campaign.cells import ALL_HOSTS, Cell, CellSpec, cells
from fsbench.campaign.config import validate
from fsbench.campaign.plan import WILDCARDS, Plan, forget_device_state

MiB = 2**20


def campaign(**extra) -> dict:
    config = {
        "campaign": "p",
        "scratch": "/var/tmp/fsbench-plan-test",
        "arrays": {"a": {"kind": "loop", "size": "1GiB"}, "b": {"kind": "loop", "size": "1GiB"}},
        "filesystems": {"ext4": {"type": "ext4"}, "xfs": {"type": "xfs", "mount": ["noatime"]}},
        "io": {
            "size": "64MiB",
            "block_sizes": ["64KiB", "1MiB"],
            "patterns": ["seq", "rand"],
            "direct": [False, True],
            "streams": [1, 4],
            "repeats": 3,
        },
    } | extra
    return validate(config)


def test_a_cell_path_reads_back_as_the_same_cell_and_matches_the_wildcards():
    for cell in cells(campaign()):
        host, array, target, test = cell.path.split("/")
        assert Cell.from_wildcards(host, array, target, test, str(cell.rep)) == cell
        assert re.fullmatch(WILDCARDS["test"], test) and re.fullmatch(WILDCARDS["host"], host)
        assert re.fullmatch(WILDCARDS["array"], array)


def test_a_shared_file_cell_says_so_in_its_path():
    shared = Cell("local", "a", "xfs", "seq", MiB, True, 4, 1, 32, True)
    assert shared.test == "seq-1MiB-direct-4s-qd32-shared"
    assert Cell.from_wildcards("local", "a", "xfs", shared.test, 1) == shared
    plan = Plan(campaign(io={"size": "64MiB", "block_sizes": ["1MiB"], "streams": [4], "shared_file": [False, True]}))
    assert plan.tests == ["seq-1MiB-buffered-4s", "seq-1MiB-buffered-4s-shared"]
    assert plan.cell_spec("local", "a", "xfs", "seq-1MiB-buffered-4s-shared", "1")["shared_file"] is True


def test_a_test_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="not a test: 'seq-1MiB-sideways-1s'"):
        Cell.from_wildcards("local", "a", "raw", "seq-1MiB-sideways-1s", 1)


def test_cell_spec_carries_every_setting_of_the_measurement():
    config = campaign()
    plan = Plan(config)
    spec = plan.cell_spec("local", "a", "xfs", "rand-64KiB-direct-4s", "2")
    assert spec | {"array_spec": None, "fs": None} == {
        "campaign": "p",
        "host": "local",
        "array": "a",
        "target": "xfs",
        "fs_type": "xfs",
        "pattern": "rand",
        "block_size": 64 * 1024,
        "direct": True,
        "streams": 4,
        "iodepth": 1,
        "shared_file": False,
        "rep": 2,
        "test": "rand-64KiB-direct-4s",
        "size": 64 * MiB,
        "data": "random",
        "engine": "python",
        "method": 3,
        "cache": "drop",
        "array_spec": None,
        "fs": None,
        "workdir": "/var/tmp/fsbench-plan-test/p/a",
    }
    assert spec["array_spec"] == config["arrays"]["a"]
    assert spec["fs"]["mount"] == ["noatime"] and spec["fs"]["name"] == "xfs" and len(spec["fs"]["fingerprint"]) == 16
    assert plan.cell_spec("local", "a", "raw", "seq-1MiB-buffered-1s", "1")["fs"] is None
    # mkfs and mount depend on the filesystem and the cell, not on how the I/O is done
    device = plan.device_spec("local", "a", "xfs", "rand-64KiB-direct-4s", "2")
    assert set(device) == {
        "campaign",
        "host",
        "array",
        "target",
        "fs_type",
        "test",
        "rep",
        "array_spec",
        "fs",
        "workdir",
    }
    engine_changed = Plan(campaign(io=config["io"] | {"engine": "fio"}))
    assert engine_changed.device_spec("local", "a", "xfs", "rand-64KiB-direct-4s", "2") == device
    assert engine_changed.cell_spec("local", "a", "xfs", "rand-64KiB-direct-4s", "2") != spec


def test_a_filesystem_fingerprint_changes_with_its_options_only():
    before = Plan(campaign()).cell_spec("local", "a", "xfs", "seq-1MiB-buffered-1s", "1")["fs"]["fingerprint"]
    ext4 = Plan(campaign()).cell_spec("local", "a", "ext4", "seq-1MiB-buffered-1s", "1")["fs"]["fingerprint"]
    changed = campaign(filesystems={"ext4": {"type": "ext4"}, "xfs": {"type": "xfs", "mount": ["relatime"]}})
    after = Plan(changed)
    assert after.cell_spec("local", "a", "xfs", "seq-1MiB-buffered-1s", "1")["fs"]["fingerprint"] != before
    assert after.cell_spec("local", "a", "ext4", "seq-1MiB-buffered-1s", "1")["fs"]["fingerprint"] == ext4


def test_priorities_are_one_per_cell_in_rounds_then_hosts_arrays_targets_tests():
    config = campaign(hosts=["n1", "n2"])
    plan = Plan(config)
    order = sorted(cells(config), key=lambda c: -plan.priority(c.host, c.array, c.target, c.test, c.rep))
    keys = [plan.priority(c.host, c.array, c.target, c.test, c.rep) for c in order]
    assert len(set(keys)) == len(keys)  # no two cells share a priority: a cell's steps run back to back
    assert max(keys) < plan.top_priority and min(keys) >= 0
    assert [c.rep for c in order] == sorted(c.rep for c in order)  # every rep 1 before any rep 2
    first_round = [c for c in order if c.rep == 1]
    assert [c.host for c in first_round] == sorted(c.host for c in first_round)
    for _, group in _runs(first_round, lambda c: (c.host, c.array)):
        targets = [c.target for c in group]
        assert targets == sorted(targets, key=["raw", "ext4", "xfs"].index)  # raw first, then config order
        for _, same_target in _runs(group, lambda c: c.target):
            assert [c.test for c in same_target] == plan.tests  # tests in campaign order


def test_an_adaptive_campaign_orders_its_extra_repeats_after_the_planned_ones():
    config = campaign(io={"size": "64MiB", "block_sizes": ["1MiB"], "repeats": {"min": 2, "max": 5, "target_ci": 0.1}})
    plan = Plan(config)
    later = plan.priority("local", "b", "raw", "seq-1MiB-buffered-1s", 5)
    assert 0 <= later < min(plan.priority(c.host, c.array, c.target, c.test, c.rep) for c in cells(config))


def test_all_hosts_cells_have_their_own_place_in_the_order(tmp_path):
    config = validate(
        {
            "campaign": "p",
            "scratch": str(tmp_path),
            "hosts": ["n1", "n2"],
            "arrays": {"shared": {"kind": "path", "path": str(tmp_path), "all_hosts": True}},
            "io": {"size": "1MiB", "block_sizes": ["1MiB"], "repeats": 2},
        }
    )
    plan = Plan(config)
    found = {(c.host, c.rep): plan.priority(c.host, c.array, c.target, c.test, c.rep) for c in cells(config)}
    assert {h for h, _ in found} == {"n1", "n2", ALL_HOSTS} and len(set(found.values())) == len(found)


def test_describe_names_the_step_and_the_cell():
    spec = Plan(campaign()).cell_spec("local", "a", "ext4", "seq-1MiB-buffered-1s", "1")
    assert CellSpec.from_params(spec).describe("mkfs") == "mkfs of a/ext4/seq-1MiB-buffered-1s rep 1"
    hosted = Plan(campaign(hosts=["n1"])).cell_spec("n1", "a", "ext4", "seq-1MiB-buffered-1s", "2")
    assert CellSpec.from_params(hosted).describe("read") == "read of a/ext4/seq-1MiB-buffered-1s rep 2 on n1"
    # The params become a frozen spec at a step's boundary; a setting fsbench does not know fails there.
    assert CellSpec.from_params(spec).as_record() == spec
    with pytest.raises(ValueError, match="cell settings fsbench does not know: blocksize"):
        CellSpec.from_params(spec | {"blocksize": 1})


def test_forgetting_the_device_state_deletes_only_state_files(tmp_path):
    ready = tmp_path / "state/local/a/ext4/seq-1MiB-buffered-1s/rep1/mount.ready"
    released = tmp_path / "state/local/a/released.json"
    record = tmp_path / "runs/local/a/ext4/seq-1MiB-buffered-1s/rep1/mount.json"
    for path in (ready, released, record):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    assert forget_device_state(tmp_path) == [str(ready)]
    assert not ready.exists() and released.exists() and record.exists()
    assert forget_device_state(tmp_path / "nowhere") == []


def _runs(items, key):
    """Consecutive runs of items with the same key, in order."""
    runs = []
    for item in items:
        if runs and runs[-1][0] == key(item):
            runs[-1][1].append(item)
        else:
            runs.append((key(item), [item]))
    return runs


def test_a_cell_is_compared_with_every_other_target_and_its_neighbouring_block_sizes():
    plan = Plan(campaign(raw=False, io={"size": "64MiB", "block_sizes": ["64KiB", "4MiB", "1MiB"], "repeats": 2}))
    middle = Cell("local", "a", "ext4", "seq", MiB, False, 1, 1).test
    assert plan.partners("local", "a", "ext4", middle) == [
        ("xfs", middle),
        ("ext4", "seq-64KiB-buffered-1s"),
        ("ext4", "seq-4MiB-buffered-1s"),
    ]
    # The smallest size has one neighbour; raw is compared with every filesystem.
    with_raw = Plan(campaign(raw=True, io={"size": "64MiB", "block_sizes": ["64KiB", "1MiB"], "repeats": 2}))
    assert with_raw.partners("local", "a", "raw", "seq-64KiB-buffered-1s") == [
        ("ext4", "seq-64KiB-buffered-1s"),
        ("xfs", "seq-64KiB-buffered-1s"),
        ("raw", "seq-1MiB-buffered-1s"),
    ]


def test_the_metadata_and_io500_method_versions_are_in_their_cells_params():
    """Version 2 (the per-file loop in C, workers bound to a CPU; the python engine's streams bound likewise), and
    metadata's and io500's 3 (an empty file's read is its open and close; find stats what IO500's find stats) and
    4 (files named as mdtest names them), and the python engine's 3 at iodepth > 1, re-measure cells measured
    before and start new history series for them; fio's cells keep their params."""
    from fsbench.campaign.cells import IO500_TEST

    config = campaign(metadata={"files": 100}, io500={"processes": 1})
    plan = Plan(config)
    meta = next(t for t in plan.tests if t.startswith("meta-"))
    assert plan.cell_spec("local", "a", "ext4", meta, "1")["method"] == 4
    # io500 5: as the io500 application measures (no cache drop by default, data checks, its read-from rules);
    # 6: the ior transfers in C and IOR's own check of each word read; 7: ior-rnd4K-easy-read as IOR -z -z;
    # 8: mdtest's files at mdtest's depth
    assert plan.cell_spec("local", "a", "ext4", IO500_TEST, "1")["method"] == 8
    assert plan.cell_spec("local", "a", "ext4", "rand-64KiB-direct-4s", "1")["method"] == 3
    # 3 at iodepth > 1 (each I/O submitted as soon as it is queued) apart; both paths' 4 KiB page buffers after it
    assert plan.cell_spec("local", "a", "ext4", "rand-64KiB-direct-4s-qd32", "1")["method"] == 4
    with_fio = Plan(campaign(io=config["io"] | {"engine": "fio"}))
    assert "method" not in with_fio.cell_spec("local", "a", "ext4", "rand-64KiB-direct-4s", "1")


def _finished(results, plan: Plan, key: tuple, step: str, method: int | None, **other):
    """A finished record of the cell repeat `key` whose settings are the plan's but for its method (and `other`)."""
    spec = {k: v for k, v in plan.cell_spec(*key).items() if k != "method"} | ({"method": method} if method else {})
    spec |= other
    host, array, target, test, rep = key
    path = results / "runs" / host / array / target / test / f"rep{rep}" / f"{step}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"row": {}, "cell": CellSpec.from_params(spec).as_record()}))


def test_a_finished_cell_of_an_older_method_keeps_it_unless_the_campaign_says_current(tmp_path):
    from fsbench.campaign.cells import IO500_TEST

    config = campaign(metadata={"files": 100}, io500={"processes": 1})
    today = Plan(config)
    meta = next(t for t in today.tests if t.startswith("meta-"))
    deep, shallow = (
        ("local", "a", "ext4", "rand-64KiB-direct-4s-qd32", 1),
        ("local", "b", "xfs", "seq-1MiB-direct-1s", 2),
    )
    _finished(tmp_path, today, deep, "read", 2)  # the python engine at iodepth > 1: 2, now 4
    _finished(tmp_path, today, shallow, "read", None)  # version 1: no method in its params then
    _finished(tmp_path, today, ("local", "a", "xfs", meta, 1), "metadata", 3)
    _finished(tmp_path, today, ("local", "a", "xfs", IO500_TEST, 1), "mdtest-hard-delete", 8)  # today's
    # A cell changed otherwise is measured anew, with today's method: its record is not that cell's.
    changed = ("local", "b", "ext4", "seq-1MiB-direct-1s", 1)
    _finished(tmp_path, today, changed, "read", None, size=32 * MiB)
    cut = tmp_path / "runs/local/b/raw/seq-1MiB-direct-1s/rep1/read.json"  # a record cut short: not finished
    cut.parent.mkdir(parents=True)
    cut.write_text('{"row": ')

    plan = Plan(config, tmp_path)
    assert plan.cell_spec(*deep)["method"] == 2 and "method" not in plan.cell_spec(*shallow)
    assert plan.cell_spec("local", "a", "xfs", meta, "1")["method"] == 3
    # The key keeps its place among the params (Snakemake compares their serialised form).
    assert list(plan.cell_spec(*deep)) == list(today.cell_spec(*deep))
    assert plan.cell_spec("local", "a", "xfs", IO500_TEST, 1)["method"] == 8
    assert plan.cell_spec(*changed)["method"] == 3
    # Every other repeat of those cells, not finished, is measured with today's method.
    assert plan.cell_spec(*deep[:4], 2)["method"] == 4
    assert plan.older() == (
        "fsbench: 3 finished cell repeats were measured with an older method and keep their figures (methods: "
        "recorded): 1 metadata (method 3, now 4: 4: files named as mdtest names them (file.mdtest.<rank>.<i>)); "
        "1 python (method 1, now 3: 2: each stream bound to a CPU of its own, as IOR's ranks are; 3: buffers in 4 KiB "
        "pages as fio's and IOR's, not huge pages (io.buffer)); 1 python at iodepth > 1 (method 2, now 4: 3: each "
        "I/O submitted as soon as it is queued, as fio does; 4: buffers in 4 KiB pages as fio's and IOR's, not huge "
        "pages (io.buffer)). New cells are "
        "measured with the current method and no verdict compares across methods; `methods: current` measures "
        "them again."
    )

    again = Plan(config | {"methods": "current"}, tmp_path)
    assert again.cell_spec(*deep)["method"] == 4 and again.cell_spec(*shallow)["method"] == 3
    assert again.older().startswith("fsbench: 3 finished cell repeats measured with an older method are measured again")
    assert Plan(config, tmp_path / "nowhere").older() is None


def test_huge_page_buffers_are_a_setting_of_the_cell_where_asked_for():
    test = "seq-1MiB-direct-1s"
    assert "buffer" not in Plan(campaign()).cell_spec("local", "a", "ext4", test, "1")
    huge = Plan(campaign(io=campaign()["io"] | {"buffer": "hugepage"})).cell_spec("local", "a", "ext4", test, "1")
    assert huge["buffer"] == "hugepage" and CellSpec.from_params(huge).buffer == "hugepage"


def test_a_finished_io500_cell_of_an_older_method_keeps_its_phases_and_settings(tmp_path):
    """io500 method 5 brought in phases (timestamp, ior-rnd4K-easy-read) and ini keys with defaults (drop-caches,
    stonewall-time, ...): a cell measured at 4 keeps its 12 phases and its params as they were."""
    from fsbench.campaign.cells import IO500_TEST
    from fsbench.io500.phases import order

    config = campaign(io500={"processes": 1})
    today = Plan(config)
    key = ("local", "a", "xfs", IO500_TEST, 1)
    spec = today.cell_spec(*key)
    new_keys = ("stonewall-time", "drop-caches", "drop-caches-cmd", "dataPacketType", "mode")
    then = {k: v for k, v in spec["io500"].items() if k not in new_keys}
    old_phases = [p for p in order() if p not in ("timestamp", "ior-rnd4K-easy-read")]
    for phase in old_phases:
        _finished(tmp_path, today, key, phase, 4, io500=then)

    plan = Plan(config, tmp_path)
    kept = plan.cell_spec(*key)
    assert kept["method"] == 4 and kept["io500"] == then and list(kept) == list(spec)
    assert list(kept["io500"]) == [k for k in spec["io500"] if k in then]  # in the order its params had
    assert plan.io500_phases("local", "a", "xfs", order()) == tuple(old_phases)
    assert plan.io500_phases("local", "a", "ext4", order()) == order()  # not finished: today's
    again = Plan(config | {"methods": "current"}, tmp_path)
    assert again.io500_phases("local", "a", "xfs", order()) == order() and again.cell_spec(*key) == spec
    # A setting of its own changed: not that cell any more, measured anew with today's phases.
    other = Plan(campaign(io500={"processes": 1, "drop-caches": True}), tmp_path)
    assert other.io500_phases("local", "a", "xfs", order()) == order()
