"""Which rows are one series (the comparability key) and what only describes a run (context)."""

import copy

import pandas as pd

from fsbench.history import changes, series

from conftest import row


def provenance(device="/dev/loop3", mount="rw,relatime", kernel="6.8.0", fio="fio-3.33", array="demo"):
    return {
        "host": {"kernel": kernel, "tools": {"fio": fio, "mkfs.ext4": "mke2fs 1.47.0 (5-Feb-2023)\nUsing EXT2FS"}},
        "machines": {"h": {"host": "h", "kernel": kernel, "distribution": "Debian 12", "cpu": "EPYC"}},
        "arrays": {
            array: {
                "spec": {"kind": "loop", "members": 1, "size": 2**30, "level": None, "chunk": 524288},
                "devices": [{"device": device, "model": "loop", "size_bytes": 2**30, "loop_backing_file": "/x"}],
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


def entry(prov, target="ext4", extra=None, **over):
    r = row(target, "write", **over) | {"workload": "io", "iodepth": 1, "shared_file": False}
    return series.entries(pd.DataFrame([r]), prov, extra or {})[0]


def test_the_same_cell_on_another_loop_device_and_under_another_name_is_one_series():
    a = entry(provenance(), campaign="nvme-2026-10")
    b = entry(provenance(device="/dev/loop7", kernel="6.9.1"), campaign="nvme-2026-12")
    assert a["series"] == b["series"]
    renamed = entry(provenance(array="fast"), array="fast")
    assert renamed["series"] == a["series"]  # names are not the key


def test_storage_filesystem_options_test_and_engine_are_the_key():
    a = entry(provenance())
    assert entry(provenance(mount="rw,noatime"))["series"] != a["series"]
    bigger = provenance()
    bigger["arrays"]["demo"]["spec"]["size"] = 2**31
    assert entry(bigger)["series"] != a["series"]
    assert entry(provenance(), block_size=4 * 2**20)["series"] != a["series"]
    assert entry(provenance(), engine="fio")["series"] != a["series"]
    assert entry(provenance(), host="other")["series"] != a["series"]  # a loop image is its host's own


def test_a_path_array_is_shared_by_its_hosts():
    prov = provenance()
    prov["arrays"]["demo"] = {"spec": {"kind": "path", "path": "/lustre/me"}, "devices": [], "targets": {}}
    assert entry(prov, "path", host="n1")["series"] == entry(prov, "path", host="n2")["series"]


def test_context_holds_the_machine_tools_and_the_campaigns_own_fields():
    ctx = entry(provenance(), extra={"firmware": "2.1.4"})["context"]
    assert ctx["kernel"] == "6.8.0" and ctx["fio"] == "fio-3.33" and ctx["mkfs.ext4"] == "mke2fs 1.47.0 (5-Feb-2023)"
    assert ctx["firmware"] == "2.1.4" and ctx["campaign"] == "c" and ctx["date"] == "2024-01-01"
    later = copy.deepcopy(ctx) | {"kernel": "6.9.1", "firmware": "2.2.0", "campaign": "d"}
    assert changes.context_changed(ctx, later) == "firmware 2.1.4 → 2.2.0; kernel 6.8.0 → 6.9.1"


def test_a_column_with_empty_cells_does_not_change_the_key():
    """measurements.csv with metadata rows reads block_size as 1048576.0: still the same series."""
    a = entry(provenance())
    b = entry(provenance(), block_size=float(2**20))
    assert a["series"] == b["series"]
