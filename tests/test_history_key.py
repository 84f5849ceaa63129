"""Which rows are one series (the comparability key, from the cell the measuring step ran) and what only
describes a run (context)."""

import copy

import pandas as pd
import pytest

from fsbench.campaign.config import load_schema, validate
from fsbench.campaign.plan import Plan
from fsbench.history import changes, key

from conftest import row

BASE = {
    "campaign": "c",
    "scratch": "/var/tmp/fsbench-key",
    "arrays": {"demo": {"kind": "loop", "size": "64MiB"}},
    "filesystems": {"ext4": {"type": "ext4"}},
    "io": {"size": "4MiB", "block_sizes": ["1MiB"], "engine": "fio"},
}


def provenance(device="/dev/loop3", mount="rw,relatime", kernel="6.8.0", fio="fio-3.33", array="demo"):
    return {
        "host": {"kernel": kernel, "tools": {"fio": fio, "mkfs.ext4": "mke2fs 1.47.0 (5-Feb-2023)\nUsing EXT2FS"}},
        "machines": {
            "h": {
                "host": "h",
                "kernel": kernel,
                "distribution": "Debian 12",
                "cpu": "EPYC",
                "transparent_hugepage": "madvise",
            }
        },
        "arrays": {
            array: {
                "spec": {"kind": "loop", "members": 1, "size": 2**26, "level": None, "chunk": 524288},
                "devices": [{"device": device, "model": "loop", "size_bytes": 2**26, "loop_backing_file": "/x"}],
                "targets": {
                    "ext4": {
                        "fs_type": "ext4",
                        "mkfs_argv": ["mkfs.ext4", "-F", "-q", device],
                        "mount_options_read_back": mount,
                    }
                },
            }
        },
    }


def entry(config=None, prov=None, target="ext4", op="write", meta=False, **over):
    """The appended entry of one row measured by the first cell (or metadata cell) of `config` on `target`."""
    config = validate(copy.deepcopy(config or BASE))
    plan = Plan(config)
    test = [t for t in plan.tests if t.startswith("meta-") == meta][0]
    array = next(iter(config["arrays"]))
    cell = plan.cell_spec("local", array, target, test, 1)
    columns = {
        c: cell[c] for c in ("pattern", "block_size", "direct", "streams", "iodepth", "shared_file") if c in cell
    }
    if meta:
        columns = {c: cell[c] for c in ("files", "file_size", "dirs", "streams")} | {"op": "create"}
    r = row(target, op, array=array, campaign=config["campaign"], engine=cell["engine"]) | {"workload": "io"}
    r |= columns | ({"workload": "metadata"} if meta else {}) | over
    prov = prov or provenance(array=array)
    return key.entries(pd.DataFrame([r]), prov, config, config["history_context"], cell_of=lambda _: cell)[0]


def test_the_same_cell_on_another_loop_device_and_under_another_name_is_one_series():
    a = entry()
    b = entry(BASE | {"campaign": "d"}, provenance(device="/dev/loop7", kernel="6.9.1"))
    assert a["series"] == b["series"]
    renamed = copy.deepcopy(BASE)
    renamed["arrays"] = {"fast": renamed["arrays"]["demo"]}
    assert entry(renamed)["series"] == a["series"]  # names are not the key


def test_read_back_storage_and_the_host_are_the_key():
    a = entry()
    assert entry(prov=provenance(mount="rw,noatime"))["series"] != a["series"]
    other = provenance()
    other["arrays"]["demo"]["devices"][0]["model"] = "Samsung 990"
    assert entry(prov=other)["series"] != a["series"]
    assert entry(host="other")["series"] != a["series"]  # a loop image is its host's own


def test_a_path_array_is_shared_by_its_hosts():
    config = BASE | {"arrays": {"demo": {"kind": "path", "path": "/tmp"}}}
    prov = {"arrays": {"demo": {"spec": {"kind": "path", "path": "/tmp"}, "devices": [], "targets": {}}}}
    assert entry(config, prov, "path", host="n1")["series"] == entry(config, prov, "path", host="n2")["series"]


def set_at(config: dict, path: str, value) -> dict:
    config = copy.deepcopy(config)
    *parents, last = path.split(".")
    node = config
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return config


# Each config key changed in turn, from a campaign where it matters: a new series, or the same series with the
# change named in the context. (key, base changes, new value, "series" | "context", measured: io or metadata)
RUNTIME = {"io.runtime": 4}
META = {"metadata": {"files": 100, "file_size": "4KiB", "dirs": 2}}
CLIENTS_BASE = {"hosts": ["n1"], "arrays.p": {"kind": "path", "path": "/tmp", "all_hosts": True}}
CHANGES = [
    ("campaign", {}, "other-name", "name", "io"),
    ("scratch", {}, "/srv/scratch", "context", "io"),
    ("arrays.demo.size", {}, "128MiB", "series", "io"),
    ("arrays.demo.members", {"arrays.demo.members": 2, "arrays.demo.level": 0}, 3, "series", "io"),
    ("arrays.demo.level", {"arrays.demo.members": 2, "arrays.demo.level": 0}, 1, "series", "io"),
    ("arrays.demo.chunk", {}, "256KiB", "series", "io"),
    ("raw", {}, False, "context", "io"),
    ("filesystems.ext4.type", {"arrays.demo.size": "512MiB"}, "xfs", "series", "io"),
    ("filesystems.ext4.mkfs", {}, ["-b", "1024"], "series", "io"),
    ("filesystems.ext4.mount", {}, ["noatime"], "series", "io"),
    ("io.engine", {}, "python", "series", "io"),
    ("io.size", {}, "8MiB", "series", "io"),
    ("io.runtime", {}, 4, "series", "io"),
    ("io.runtime", RUNTIME, 6, "series", "io"),
    ("io.log_interval", {}, 0.5, "context", "io"),
    ("io.drop", {}, 0.5, "context", "io"),
    ("io.steady", RUNTIME, {"window": 2}, "context", "io"),
    ("io.block_sizes", {}, ["2MiB"], "series", "io"),
    ("io.patterns", {}, ["rand"], "series", "io"),
    ("io.rwmix_read", {"io.patterns": ["randrw"]}, 50, "series", "io"),
    ("io.rwmix_read", {}, 50, "context", "io"),  # a sequential cell does not use it
    ("io.direct", {}, [True], "series", "io"),
    ("io.streams", {}, [2], "series", "io"),
    ("io.iodepth", {}, [4], "series", "io"),
    ("io.shared_file", {"io.streams": [2]}, [True], "series", "io"),
    ("io.repeats", {}, 5, "context", "io"),
    ("io.cache", {}, "fadvise", "series", "io"),
    ("io.data", {}, "zero", "series", "io"),
    ("io.buffer", {"io.engine": "python"}, "hugepage", "series", "io"),
    ("io.verify", {"io.engine": "python"}, True, "series", "io"),
    # the metadata test's reads check their bytes too
    ("io.verify", META | {"io.engine": "python"}, True, "series", "metadata"),
    ("hosts", {}, ["n1"], "context", "io"),  # the host a row was measured on is the key (host="h" here)
    ("exclusive", {}, True, "context", "io"),
    ("hosts_parallel", {}, False, "context", "io"),
    ("methods", {}, "current", "context", "io"),  # which method a cell has is its record's (a series key)
    # a point of the axis is the all-hosts row's host (all2x1), which keys its series; a host's own rows name it
    ("clients", CLIENTS_BASE, {"hosts": [1], "processes": [1, 2]}, "context", "io"),
    ("precondition", {}, {"passes": 1}, "context", "io"),
    ("precondition.passes", {"precondition": {}}, 3, "context", "io"),
    ("precondition.pattern", {"precondition": {}}, "rand", "context", "io"),
    ("precondition.block_size", {"precondition": {}}, "4MiB", "context", "io"),
    ("allow_destroy", {}, ["/dev/null"], "context", "io"),
    ("metadata", {}, META["metadata"], "context", "io"),
    ("metadata.files", META, 200, "series", "metadata"),
    ("metadata.file_size", META, "8KiB", "series", "metadata"),
    ("metadata.dirs", META, 4, "series", "metadata"),
    ("metadata.fsync", META, "file", "series", "metadata"),
    ("metadata.cache", META, "warm", "series", "metadata"),
    ("io.read_from", {}, "other", "series", "io"),
    # an io cell's series is not io500's (each IO500 phase is a series of its own: tests/test_history_io500.py)
    ("io500", {"raw": False, "arrays.demo.size": "512MiB"}, {"mdtest-easy": {"n": 10}}, "context", "io"),
    ("compare_to", {}, "COMPARE", "context", "io"),
    ("baselines", {}, {"old": "COMPARE"}, "context", "io"),
    ("history_context", {}, {"firmware": "2.2"}, "context", "io"),
    ("history", {}, "elsewhere.sqlite", "store", "io"),
    ("history_timeout", {}, 30, "store", "io"),
    ("history_min_change", {}, 0.1, "store", "io"),
]


def schema_keys() -> set[str]:
    """Every key a campaign file can set (arrays and filesystems: those of a loop array and an ext4 one)."""
    props = load_schema()["properties"]
    found = set(props)
    for nested in ("io", "precondition", "metadata"):
        found |= {f"{nested}.{k}" for k in props[nested].get("properties", {})}
    found |= {f"arrays.demo.{k}" for k in ("size", "members", "level", "chunk")}
    return found | {f"filesystems.ext4.{k}" for k in load_schema()["$defs"]["filesystem"]["properties"]}


def test_every_config_key_is_tried():
    assert schema_keys() - {name for name, *_ in CHANGES} <= {"arrays", "filesystems", "io"}


@pytest.mark.parametrize(("name", "base", "value", "expect", "kind"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_changed_config_key_starts_a_new_series_or_is_named_as_context(name, base, value, expect, kind, tmp_path):
    compare = tmp_path / "measurements.csv"
    compare.write_text("")
    value = str(compare) if value == "COMPARE" else value
    value = {"old": str(compare)} if value == {"old": "COMPARE"} else value
    before = BASE
    for k, v in base.items():
        before = set_at(before, k, v)
    after = set_at(before, name, value)
    a, b = entry(before, meta=kind == "metadata"), entry(after, meta=kind == "metadata")
    if expect == "series":
        assert a["series"] != b["series"], f"{name}: {value!r} kept the series"
        return
    assert a["series"] == b["series"], f"{name}: {value!r} started a new series: {a['key']} vs {b['key']}"
    named = changes.context_changed(a["context"], b["context"])
    if expect == "context":
        said = "firmware" if name == "history_context" else name.split(".")[-1]  # its entries, by their names
        assert named and said in named, f"{name} not named: {named!r}"
    else:  # a name (never named: every run has its own) or the store's own settings
        assert named == "", named


def test_context_holds_the_machine_tools_and_the_campaigns_own_fields():
    ctx = entry(BASE | {"history_context": {"firmware": "2.1.4"}})["context"]
    assert ctx["kernel"] == "6.8.0" and ctx["fio"] == "fio-3.33" and ctx["mkfs.ext4"] == "mke2fs 1.47.0 (5-Feb-2023)"
    assert ctx["firmware"] == "2.1.4" and ctx["campaign"] == "c" and ctx["date"] == "2024-01-01"
    assert ctx["scratch"] == "/var/tmp/fsbench-key"
    assert ctx["transparent_hugepage"] == "madvise" and ctx["page_reporting_order"] == ""  # a record without it
    later = copy.deepcopy(ctx) | {"kernel": "6.9.1", "firmware": "2.2.0", "campaign": "d"}
    assert changes.context_changed(ctx, later) == "firmware 2.1.4 → 2.2.0; kernel 6.8.0 → 6.9.1"


def test_a_column_with_empty_cells_does_not_change_the_key():
    """measurements.csv with metadata rows reads block_size as 1048576.0: still the same series."""
    assert entry()["series"] == entry(block_size=float(2**20))["series"]


def test_a_row_without_its_record_says_so():
    with pytest.raises(ValueError, match="no record"):
        key.read_cell({"target": "ext4", "op": "write", "rep": 1, "record": "results/gone/write.json"})


def test_a_metadata_series_is_labelled_without_a_block_size():
    """A metadata row has no block size, pattern or depth (NaN in its CSV row): its label names its files."""
    from fsbench.history import points

    line = {"host": "vm", "array": "ram", "target": "ext4", "op": "create", "workload": "metadata", "files": 200}
    line |= {"block_size": float("nan"), "pattern": float("nan"), "engine": "python"}
    assert points.label(line) == "vm/ram ext4 create 200 files · python"
    assert points.label(line | {"files": 200.0}) == "vm/ram ext4 create 200 files · python"
    line |= {"workload": "io", "op": "write", "block_size": 2**20, "pattern": "seq", "direct": True, "streams": 1}
    assert points.label(line | {"iodepth": 1}) == "vm/ram ext4 write seq 1MiB direct 1s qd1 · python"
    # In a store of metadata and I/O rows the integer columns come back as floats (NaN in the other kind's rows).
    mixed = line | {"iodepth": 1.0, "streams": 1.0}
    assert points.label(mixed) == "vm/ram ext4 write seq 1MiB direct 1s qd1 · python"
