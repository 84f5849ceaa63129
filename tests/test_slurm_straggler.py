"""Two Slurm nodes writing and reading at once (an all-hosts cell), one of them slowed from outside: the kernel's
blkio throttle holds every process of the second node's slurmd (and so its parts) at SLOW on the loop device
under the shared path. That host is flagged straggler; the record and summary.md give each host's first-done and
last-done, the tail and the stonewall rate."""

import json
import socket
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from fsbench.storage import devices

from conftest import BLKIO, SLURM_PROFILE, needs_root, needs_throttle, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, needs_throttle, pytest.mark.e2e]
HERE, OTHER = socket.gethostname(), "fsbench-n2"
SLOW = 16 * 10**6  # bytes/s


@contextmanager
def slowed(pid: int, dev: str):
    """Process `pid` and every process it starts from now on held at SLOW (reads and writes) on `dev`: a blkio
    cgroup of their own. Afterwards every process in it goes back to the root group and the group goes."""
    group = BLKIO / f"fsbench-slow-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        for kind in ("write", "read"):
            (group / f"blkio.throttle.{kind}_bps_device").write_text(f"{dev} {SLOW}\n")
        (group / "cgroup.procs").write_text(f"{pid}\n")
        yield
    finally:
        for left in (group / "cgroup.procs").read_text().split():
            try:
                (BLKIO / "cgroup.procs").write_text(f"{left}\n")
            except ProcessLookupError:
                pass  # gone meanwhile
        group.rmdir()


def test_a_throttled_host_is_a_straggler_with_first_and_last_done_and_the_stonewall(tmp_path_factory):
    base, workdir = tmp_path_factory.mktemp("slurm2"), tmp_path_factory.mktemp("straggler")
    with slurm_cluster(base, 2) as env, private_scratch() as scratch:
        dev = devices.attach_loop_images(scratch / "images", 1, 512 * 2**20)[0]
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
        shared = scratch / "shared"
        shared.mkdir()
        subprocess.run(["mount", dev, str(shared)], check=True)
        majmin = Path(f"/sys/class/block/{Path(dev).name}/dev").read_text().strip()
        config = {
            "campaign": "straggler",
            "scratch": str(scratch),
            "hosts": [HERE, OTHER],
            "arrays": {"p": {"kind": "path", "path": str(shared), "all_hosts": True}},
            "io": {"size": "48MiB", "block_sizes": ["1MiB"], "direct": [True], "repeats": 1, "cache": "fadvise"},
        }
        with slowed(int((base / f"slurmd-{OTHER}.pid").read_text().split()[0]), majmin):
            run_campaign(workdir, config, *SLURM_PROFILE, env=env)
    out = workdir / "results/straggler"
    df = pd.read_csv(out / "measurements.csv")
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        parts = df[df.host.str.endswith("@all") & (df.op == op)].set_index("host")
        assert "straggler" in parts.loc[f"{OTHER}@all", "flags"] and "straggler" not in str(
            parts.loc[f"{HERE}@all", "flags"]
        )
        assert parts.loc[f"{OTHER}@all", "mb_s"] < 1.5 * SLOW / 1e6 < parts.loc[f"{HERE}@all", "mb_s"]
        record = json.loads((workdir / whole.record).read_text())
        hosts = record["hosts"]
        mine, theirs = hosts["hosts"][HERE], hosts["hosts"][OTHER]
        assert mine["last_done_s"] < theirs["last_done_s"] and "straggler" in theirs and "straggler" not in mine
        assert hosts["first_done_s"] == pytest.approx(mine["last_done_s"])
        assert hosts["tail_s"] == pytest.approx(theirs["last_done_s"] - mine["last_done_s"])
        # When the fast host finished, the slow one had moved a little: the stonewall rate counts both by then.
        assert 48 * 2**20 <= hosts["stonewall_bytes"] < 2 * 48 * 2**20
        assert hosts["stonewall_mb_s"] == pytest.approx(hosts["stonewall_bytes"] / hosts["first_done_s"] / 1e6)
        assert len(record["parts_timeseries"]) == 2 and record["timeseries"]["bytes"]
    md = (out / "summary.md").read_text()
    assert "## All-hosts cells, per host" in md and "stonewall" in md and f"| {OTHER} |" in md
    table = pd.read_csv(out / "timeseries.csv")
    assert {"all", f"{HERE}@all", f"{OTHER}@all"} <= set(table.host)
