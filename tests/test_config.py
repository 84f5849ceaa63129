"""Campaign validation: every bad value is refused with its key, its value and what is allowed."""

from pathlib import Path

import pytest
import yaml

from fsbench.campaign.cells import all_targets, cells, repeat_plan, targets
from fsbench.campaign.config import ConfigError, validate
from fsbench.cluster.hosts import one_host_at_a_time, short_hostname, workdirs_here

from conftest import REPO

GOOD = {
    "campaign": "t",
    "arrays": {"demo": {"kind": "loop", "size": "2GiB"}},
    "filesystems": {"ext3": {"type": "ext3", "mkfs": ["-j", "-T", "largefile4", "-b", 4096]}, "xfs": {"type": "xfs"}},
    "io": {"size": "256MiB", "block_sizes": ["1MiB", "4M"], "repeats": 2},
}


def with_(path: str, value):
    """GOOD with one key (dotted path) set to `value`; the value None deletes the key."""
    import copy

    config = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = config
    for p in parents:
        node = node.setdefault(p, {})
    if value is None:
        del node[last]
    else:
        node[last] = value
    return config


def test_good_campaign_gets_defaults_and_bytes():
    c = validate(GOOD)
    assert c["io"]["block_sizes"] == [2**20, 4 * 2**20]
    assert c["io"]["size"] == 256 * 2**20
    assert c["io"]["engine"] == "python" and c["io"]["cache"] == "drop" and c["io"]["data"] == "random"
    assert c["raw"] is True and c["scratch"] == "/var/tmp/fsbench"
    assert c["filesystems"]["ext3"]["mkfs"] == ["-j", "-T", "largefile4", "-b", "4096"]
    assert c["arrays"]["demo"] == {"kind": "loop", "members": 1, "size": 2**31, "level": None, "chunk": 512 * 2**10}
    assert targets(c, "demo") == ["raw", "ext3", "xfs"]
    assert len(list(cells(c))) == 3 * 2 * 2


def test_empty_campaign_is_the_schema_default():
    c = validate({})
    assert list(c["arrays"]) == ["demo"] and c["filesystems"] == {} and c["raw"] is True
    assert len(list(cells(c))) == 3


def test_default_config_file_is_valid():
    c = validate(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    assert targets(c, "demo") == ["raw", "ext3", "ext4", "xfs", "btrfs"]
    assert c["filesystems"]["ext3"]["mkfs"] == ["-j", "-T", "largefile4", "-b", "4096"]


def test_adaptive_repeats_plan_the_minimum_and_hosts_multiply_cells():
    c = validate(GOOD | {"io": GOOD["io"] | {"repeats": {"min": 3, "max": 10, "target_ci": 0.05}}})
    assert repeat_plan(c["io"]) == {"min": 3, "max": 10, "target_ci": 0.05, "decide": False}
    assert {x.rep for x in cells(c)} == {1, 2, 3}
    # decide: true needs no target_ci (the comparisons decide); one of the two is needed.
    decide = validate(GOOD | {"io": GOOD["io"] | {"repeats": {"min": 2, "max": 6, "decide": True}}})
    assert repeat_plan(decide["io"]) == {"min": 2, "max": 6, "target_ci": None, "decide": True}
    assert repeat_plan(validate(GOOD)["io"]) == {"min": 2, "max": 2, "target_ci": None, "decide": False}
    two = validate(GOOD | {"hosts": ["n1", "n2"]})
    assert [x.host for x in cells(two)] == ["n1"] * (len(list(cells(two))) // 2) + ["n2"] * (len(list(cells(two))) // 2)
    assert {x.host for x in cells(validate(GOOD))} == {"local"}
    together = validate(
        GOOD | {"hosts": ["n1", "n2"], "arrays": {"p": {"kind": "path", "path": "/tmp", "all_hosts": True}}}
    )
    assert [(x.host, x.target) for x in cells(together) if x.rep == 1 and x.block_size == 2**20] == [
        ("n1", "path"),
        ("n2", "path"),
        ("all", "path"),
    ]


def test_repeats_are_outermost():
    reps = [c.rep for c in cells(validate(GOOD)) if c.target == "raw"]
    assert reps == [1, 1, 2, 2]


CASES = [
    # (key path, bad value, text the message must contain)
    ("filesytems", {}, "'filesytems' is not known (did you mean 'filesystems'?)"),
    ("io.blocksizes", ["1M"], "'io.blocksizes' is not known (did you mean 'block_sizes'?)"),
    ("arrays.demo.sise", "1G", "'arrays.demo.sise' is not known"),
    ("campaign", "../x", "'campaign': value '../x'"),
    ("campaign", "a/b", "'campaign': value 'a/b'"),
    ("campaign", "", "'campaign': value ''"),
    ("campaign", 7, "'campaign': value 7"),
    ("arrays", {"../x": {"kind": "loop"}}, "'arrays': value '../x'"),
    ("filesystems", {"a/b": {"type": "xfs"}}, "'filesystems': value 'a/b'"),
    ("arrays", {}, "'arrays'"),
    (
        "arrays.demo.kind",
        "floppy",
        "'arrays.demo.kind': value 'floppy' is not allowed; allowed: one of loop, device, mdadm, path",
    ),
    ("arrays.demo.size", "lots", "'arrays.demo.size': value 'lots'"),
    ("arrays.demo.size", "100M", "'arrays.demo.size': value '100MiB' is not allowed; allowed: at least"),
    ("arrays.demo.members", 0, "'arrays.demo.members': value 0"),
    ("filesystems.xfs.type", "ntfs", "'filesystems.xfs.type': value 'ntfs' is not allowed; allowed: one of ext2"),
    ("filesystems.xfs.mkfs", "-f", "'filesystems.xfs.mkfs': value '-f'"),
    ("filesystems.xfs.mount", ["a,b"], "'filesystems.xfs.mount[0]': value 'a,b'"),
    ("filesystems.xfs.type", None, "'filesystems.xfs' lacks 'type', which is required; allowed: one of ext2"),
    ("io.size", "0", "'io.size': value '0'"),
    ("io.size", "-1M", "'io.size': value '-1M'"),
    ("io.size", "1.5Q", "'io.size': value '1.5Q'"),
    ("io.size", "big", "'io.size': value 'big'"),
    ("io.block_sizes", [], "'io.block_sizes': value []"),
    ("io.block_sizes", ["1MiB", "1M"], "'io.block_sizes'"),
    ("io.block_sizes", ["512MiB"], "'io.block_sizes[0]': value '512MiB' is not allowed; allowed: at most io.size"),
    ("io.block_sizes", ["3MiB"], "a divisor of io.size"),
    ("io.block_sizes", "1M", "'io.block_sizes': value '1M'"),
    ("io.repeats", 0, "'io.repeats': value 0"),
    ("io.repeats", -2, "'io.repeats': value -2"),
    ("io.repeats", "3", "'io.repeats': value '3'"),
    ("io.repeats", {"min": 3, "max": 10}, "or adaptive: {min: 3, max: 10, target_ci: 0.05} and/or decide: true"),
    ("io.repeats", {"min": 3, "max": 10, "decide": False}, "'io.repeats': value {\"min\": 3"),
    ("io.repeats", {"min": 3, "max": 10, "decide": "yes"}, "'io.repeats': value"),
    ("io.repeats", {"min": 1, "max": 10, "target_ci": 0.05}, "'io.repeats': value {\"min\": 1"),
    ("io.repeats", {"min": 3, "max": 10, "target_ci": 0}, "'io.repeats': value"),
    ("io.repeats", {"min": 3, "max": 10, "target_ci": 0.05, "step": 2}, "'io.repeats': value"),
    (
        "io.repeats",
        {"min": 5, "max": 3, "target_ci": 0.05},
        "'io.repeats.max': value 3 is not allowed; allowed: at least io.repeats.min (5)",
    ),
    ("hosts", ["node1", "node1"], "'hosts': value"),
    ("hosts", ["local"], "'hosts[0]': value 'local' is not allowed"),
    ("hosts", ["all"], "'hosts[0]': value 'all' is not allowed"),
    (
        "arrays",
        {"p": {"kind": "path", "path": "/tmp", "all_hosts": True}},
        "'arrays.p.all_hosts': value true is not allowed; allowed: true only with hosts: [...]",
    ),
    (
        "arrays",
        {"d": {"kind": "loop", "all_hosts": True}},
        "'arrays.d.all_hosts': value true is not allowed; allowed: no 'all_hosts' for kind loop",
    ),
    ("hosts", ["node 1"], "'hosts[0]': value 'node 1' is not allowed; allowed: a host name"),
    ("exclusive", "yes", "'exclusive': value 'yes' is not allowed; allowed: true: on Slurm"),
    ("hosts_parallel", "no", "'hosts_parallel': value 'no' is not allowed; allowed: true: hosts measure"),
    ("io.engine", "fo", "'io.engine': value 'fo'"),
    ("io.cache", "maybe", "'io.cache': value 'maybe'"),
    ("io.data", "ones", "'io.data': value 'ones'"),
    ("io.streams", [0], "'io.streams[0]': value 0"),
    ("io.patterns", [], "'io.patterns': value []"),
    ("raw", "yes", "'raw': value 'yes'"),
    ("scratch", "relative/dir", "'scratch': value 'relative/dir'"),
    ("filesystems.raw", {"type": "xfs"}, "'filesystems.raw'"),
    ("io.streams", [65], "'io.streams[0]': value 65"),
    ("io.direct", ["yes"], "'io.direct[0]': value 'yes'"),
    ("io.patterns", ["backwards"], "'io.patterns[0]': value 'backwards'"),
    ("arrays.demo.device", "/dev/sdz", "'arrays.demo.device': value '/dev/sdz' is not allowed; allowed: no 'device'"),
    ("arrays.demo", {"kind": "device"}, "'arrays.demo' lacks 'device', which kind device requires"),
    ("arrays.demo", {"kind": "device", "device": "/dev/no-such-disk"}, "allowed: an existing block device"),
    ("arrays.demo", {"kind": "device", "device": "/dev/null"}, "allowed: a block device"),
    ("arrays.demo", {"kind": "device", "device": "sda1"}, "'arrays.demo.device': value 'sda1'"),
    ("arrays.demo", {"kind": "mdadm", "devices": ["/dev/x"], "level": 0}, "'arrays.demo.devices'"),
    ("arrays.demo", {"kind": "mdadm", "devices": ["/dev/x", "/dev/y"]}, "lacks 'level', which kind mdadm requires"),
    ("arrays.demo", {"kind": "mdadm", "devices": ["/dev/x", "/dev/y"], "level": 3}, "'arrays.demo.level': value 3"),
    ("arrays.demo", {"kind": "loop", "members": 2, "level": 6}, "RAID 6 needs at least 4"),
    ("arrays.demo", {"kind": "loop", "members": 4}, "only filesystems that span devices (btrfs)"),
    ("arrays.demo", {"kind": "path", "path": "/no/such/dir"}, "'arrays.demo.path': value '/no/such/dir'"),
    ("arrays.demo", {"kind": "path", "path": "/tmp", "size": "1G"}, "no 'size' for kind path"),
]


def test_a_device_must_be_listed_in_allow_destroy():
    dev = "/dev/loop0"
    with pytest.raises(ConfigError, match=f"'arrays.demo.device': value '{dev}'.*also listed in allow_destroy"):
        validate(with_("arrays.demo", {"kind": "device", "device": dev}))


def test_kinds_and_their_targets(tmp_path):
    btrfs = {"type": "btrfs", "mkfs": ["-d", "raid0", "-m", "raid1"]}
    arrays = {"p": {"kind": "path", "path": str(tmp_path)}, "r": {"kind": "loop", "members": 4, "size": "1GiB"}}
    c = validate(with_("arrays", arrays) | {"filesystems": {"ext4": {"type": "ext4"}, "b": btrfs}})
    assert targets(c, "p") == ["path"] and targets(c, "r") == ["b"]
    assert all_targets(c) == ["b", "path"]
    assert c["arrays"]["p"] == {"kind": "path", "path": str(tmp_path), "all_hosts": False}


def test_dd_cannot_do_rand():
    with pytest.raises(ConfigError, match="'io.patterns'.*seq only with io.engine dd"):
        validate(with_("io.engine", "dd") | {"io": GOOD["io"] | {"engine": "dd", "patterns": ["seq", "rand"]}})


def test_a_queue_depth_is_a_cell_axis_spelled_in_the_path_only_above_1():
    c = validate(with_("io", GOOD["io"] | {"iodepth": [1, 32]}))
    found = list(cells(c))
    assert len(found) == 3 * 2 * 2 * 2
    assert {x.test for x in found if x.iodepth == 1} == {"seq-1MiB-buffered-1s", "seq-4MiB-buffered-1s"}
    assert {x.test for x in found if x.iodepth == 32} == {"seq-1MiB-buffered-1s-qd32", "seq-4MiB-buffered-1s-qd32"}


def test_a_queue_depth_above_1_needs_io_uring_and_not_dd(monkeypatch):
    with pytest.raises(ConfigError, match=r"'io.iodepth': value \[1, 8\].*\[1\] with io.engine dd"):
        validate(with_("io", GOOD["io"] | {"engine": "dd", "iodepth": [1, 8]}))
    import fsbench.campaign.config

    monkeypatch.setattr(fsbench.campaign.config, "_why_no_io_uring", lambda: "kernel.io_uring_disabled is 2")
    with pytest.raises(ConfigError, match=r"'io.iodepth'.*above 1 needs io_uring, and kernel.io_uring_disabled is 2"):
        validate(with_("io", GOOD["io"] | {"iodepth": [1, 8]}))
    assert validate(with_("io", GOOD["io"] | {"iodepth": [1]}))["io"]["iodepth"] == [1]  # depth 1 asks nothing


def test_shared_file_is_an_axis_and_needs_an_engine_that_interleaves():
    found = list(cells(validate(with_("io", GOOD["io"] | {"shared_file": [False, True]}))))
    assert {x.test for x in found if x.shared_file} == {"seq-1MiB-buffered-1s-shared", "seq-4MiB-buffered-1s-shared"}
    assert len(found) == 2 * len([x for x in found if x.shared_file])
    with pytest.raises(ConfigError, match=r"'io.shared_file': value \[true\].*\[false\] with io.engine dd"):
        validate(with_("io", GOOD["io"] | {"engine": "dd", "shared_file": [True]}))
    with pytest.raises(ConfigError, match=r"'io.shared_file': value \[false, true\].*only sequentially"):
        validate(with_("io", GOOD["io"] | {"engine": "fio", "patterns": ["seq", "rand"], "shared_file": [False, True]}))
    assert validate(with_("io", GOOD["io"] | {"engine": "fio", "shared_file": [True]}))["io"]["shared_file"] == [True]
    with pytest.raises(ConfigError, match=r"'io.shared_file\[0\]': value 'yes'"):
        validate(with_("io", GOOD["io"] | {"shared_file": ["yes"]}))


def test_direct_needs_aligned_block_sizes():
    with pytest.raises(ConfigError, match=r"'io.block_sizes\[0\]': value '1000B'.*multiple of 4096"):
        validate(with_("io", GOOD["io"] | {"size": 1000 * 4096, "block_sizes": [1000], "direct": [False, True]}))


def test_streams_need_room_on_the_image():
    with pytest.raises(ConfigError, match=r"'arrays.demo.size'.*io.size × streams \(2GiB\)"):
        validate(with_("io", GOOD["io"] | {"size": "512MiB", "streams": [1, 4]}))


@pytest.mark.parametrize(("path", "value", "expected"), CASES, ids=[f"{p}={v!r}" for p, v, _ in CASES])
def test_bad_value_is_named(path, value, expected):
    with pytest.raises(ConfigError) as err:
        validate(with_(path, value))
    message = str(err.value)
    assert expected in message
    assert "allowed" in message


def test_nothing_to_measure():
    with pytest.raises(ConfigError, match="'filesystems'.*at least one filesystem, or raw: true"):
        validate(with_("filesystems", {}) | {"raw": False})


def test_names_differing_only_by_dash_and_underscore():
    with pytest.raises(ConfigError, match="differs"):
        validate(with_("filesystems", {"a-b": {"type": "xfs"}, "a_b": {"type": "xfs"}}))


def test_not_a_mapping():
    with pytest.raises(ConfigError, match="a mapping"):
        validate(["x"])


@pytest.mark.parametrize("example", sorted((REPO / "config" / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_examples_are_valid_up_to_devices_this_machine_lacks(example):
    config = yaml.safe_load(example.read_text())
    try:
        validate(config)
    except ConfigError as e:  # e.g. the seed's /dev/sda1: the only thing allowed to be wrong here
        lacking = ("an existing block device; this one does not exist", "an existing file: a dd log")
        assert any(text in str(e) for text in lacking), str(e)
        assert any(a["kind"] in ("device", "mdadm") for a in config["arrays"].values())


def test_release_looks_only_at_this_hosts_folders(tmp_path):
    here = short_hostname()
    c = validate(
        GOOD
        | {"hosts": [here, "elsewhere"], "arrays": {"p": {"kind": "path", "path": str(tmp_path), "all_hosts": True}}}
    )
    assert [d.name for d in workdirs_here(c)] == [f"p.{here}", f"p.all-{here}", "p.all"]
    assert {d.parent for d in workdirs_here(c)} == {Path(c["scratch"]) / c["campaign"]}
    assert [d.name for d in workdirs_here(validate(GOOD))] == ["demo", f"demo.all-{here}", "demo.all"]


def test_hosts_wait_for_each_other_on_a_shared_path_or_when_told(tmp_path):
    arrays = {"demo": {"kind": "loop"}, "p": {"kind": "path", "path": str(tmp_path)}}
    c = validate(GOOD | {"hosts": ["n1", "n2"], "arrays": arrays})
    assert c["hosts_parallel"] is True
    assert not one_host_at_a_time(c, "demo") and one_host_at_a_time(c, "p")
    c = validate(GOOD | {"hosts": ["n1", "n2"], "arrays": arrays, "hosts_parallel": False})
    assert one_host_at_a_time(c, "demo") and one_host_at_a_time(c, "p")


def test_compare_to_must_name_an_earlier_campaign(tmp_path):
    with pytest.raises(ConfigError, match=r"'compare_to': value '.*nowhere' is not allowed; allowed: an earlier"):
        validate(GOOD | {"compare_to": str(tmp_path / "nowhere")})
    (tmp_path / "measurements.csv").write_text("campaign,op\n")
    assert validate(GOOD | {"compare_to": str(tmp_path)})["compare_to"] == str(tmp_path)
    assert validate(GOOD)["compare_to"] is None


def test_the_engines_the_schema_allows_are_the_ones_there_are():
    from fsbench.campaign.config import load_schema
    from fsbench.engines.table import ENGINES

    assert load_schema()["properties"]["io"]["properties"]["engine"]["enum"] == list(ENGINES)


def test_huge_page_buffers_are_the_python_engines_own():
    assert validate(with_("io", GOOD["io"]))["io"]["buffer"] == "page"
    assert validate(with_("io", GOOD["io"] | {"buffer": "hugepage"}))["io"]["buffer"] == "hugepage"
    with pytest.raises(ConfigError, match=r"'io.buffer': value 'hugepage'.*page with io.engine fio \(fio's buffers"):
        validate(with_("io", GOOD["io"] | {"engine": "fio", "buffer": "hugepage"}))
    with pytest.raises(ConfigError, match=r"'io.buffer': value 'huge'.*page \(the default"):
        validate(with_("io", GOOD["io"] | {"buffer": "huge"}))
