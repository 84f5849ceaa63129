"""Shared fixtures: a private scratch folder per test that is always released, and a campaign runner."""

import os
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from fsbench import devices  # noqa: E402

SNAKEMAKE = REPO / ".venv" / "bin" / "snakemake"
SCRATCH_ROOT = Path("/var/tmp/fsbench-test")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="loop devices, mkfs and mount need root")


def held(scratch) -> list[str]:
    """Mounts and loop devices that still belong to `scratch`."""
    root = str(Path(scratch).resolve()) + "/"
    found = [m.mountpoint for m in devices.mounts() if (m.mountpoint + "/").startswith(root)]
    return found + [d for d, b in devices.loop_backing().items() if b.startswith(root)]


@contextmanager
def private_scratch(root: Path = SCRATCH_ROOT):
    """A fresh scratch folder; whatever is left under it is released, and that release must succeed."""
    path = root / uuid.uuid4().hex[:12]
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        devices.release(path)
        leaked = held(path)
        subprocess.run(["rm", "-rf", str(path)], check=False)
    assert not leaked, f"still attached or mounted after release: {leaked}"


@pytest.fixture
def scratch():
    with private_scratch() as path:
        yield path


def run_campaign(
    workdir: Path, config: dict, *args: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the workflow on `config` in `workdir`, as a user would with --configfile."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", "2", *args]
    proc = subprocess.run(
        [*argv, "--configfile", str(cfg)], capture_output=True, text=True, timeout=1200, env=os.environ | (env or {})
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


# The 2012 seed's dd log as baselines.csv holds it (7 runs of 20 GiB): for the statistics and plot tests.
MiB = 2**20
SEED_RUNS = [  # target, op, block size, seconds, real
    ("raw", "write", MiB, 68.929, 78.373),
    ("raw", "read", MiB, 51.2106, 51.335),
    ("ext3", "write", MiB, 156.81, 192.603),
    ("ext3", "read", MiB, 67.165, 67.334),
    ("ext3", "read", 4 * MiB, 63.088, 63.222),
    ("xfs", "write", MiB, 79.7094, 89.821),
    ("xfs", "read", MiB, 52.4275, 52.564),
]


# The engine tests (python, dd, fio): jobs on plain files, and the progress lines they log.
import re  # noqa: E402

from fsbench.engine import Job, Stream  # noqa: E402


def file_job(paths, size: int = 16 * MiB, bs: int = MiB, **kw) -> Job:
    """A job with one file stream per path."""
    return Job(streams=tuple(Stream(str(p)) for p in paths), size=size, block_size=bs, **kw)


def logged_progress(caplog, op: str, total: int, share: int) -> list[int]:
    """The bytes done in each progress line logged for `op`, checked: the python engine's format, in order,
    never above `total`, at least one taken mid-run, and (several streams of `share` bytes each) counting
    more than one stream."""
    line = re.compile(rf"{op}: (\d+) of {total} bytes \(\d+ %\), \d+ MB/s, about (\d+|inf) s left")
    done = [int(m[1]) for r in caplog.records if r.name == "fsbench" and (m := line.fullmatch(r.getMessage()))]
    assert len(done) >= 3, f"too few progress lines for {op}: {caplog.text}"
    assert done == sorted(done) and 0 <= done[0] and done[-1] <= total, done
    assert any(0 < n < total for n in done), f"no progress line taken while {op} ran: {done}"
    if total > share:
        assert max(done) > share, f"only one stream's bytes counted: {done}"
    return done


@contextmanager
def slurm_cluster(base: Path, nodes: int = 1):
    """A real Slurm of `nodes` nodes (tools/slurm_local.py), or a skip saying why there is none; afterwards
    every daemon and namespace it started is stopped, and the daemons' processes are gone."""
    sys.path.insert(0, str(REPO / "tools"))
    import slurm_local

    try:
        env = slurm_local.start(base, nodes)
    except slurm_local.Unavailable as e:
        pytest.skip(f"no {nodes}-node Slurm here: {e}")
    try:
        yield env
    finally:
        stopped = slurm_local.stop(base)
        namespaces = [f"netns {node}" for node in slurm_local.extra_nodes(nodes)]
        assert len(stopped) == nodes + 2 + len(namespaces) and set(namespaces) <= set(stopped), stopped
        for line in stopped:
            if not line.startswith("netns "):
                pid = int(line.split("(")[1].rstrip(")"))
                assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


# The kernel's block-I/O throttle (cgroup v1 blkio, root group): holds a loop device at a set rate, so that
# a test can make a device noisy, or keep a write under way for as long as it needs.
BLKIO = Path("/sys/fs/cgroup/blkio")
LIMITS = [BLKIO / "blkio.throttle.write_bps_device", BLKIO / "blkio.throttle.read_bps_device"]
needs_throttle = pytest.mark.skipif(
    not all(p.exists() for p in LIMITS), reason="needs the cgroup v1 blkio throttle (to hold a device's rate)"
)


def loop_devices_under(folder: Path) -> list[str]:
    """MAJ:MIN of every loop device whose backing file lies under `folder`."""
    found = []
    for dev in Path("/sys/block").glob("loop*"):
        backing = dev / "loop" / "backing_file"
        if backing.exists() and backing.read_text().strip().startswith(str(folder) + "/"):
            found.append((dev / "dev").read_text().strip())
    return found


def all_loop_devices() -> list[str]:
    """MAJ:MIN of every loop device the kernel has made so far (attached or free)."""
    return [(dev / "dev").read_text().strip() for dev in Path("/sys/block").glob("loop*")]


def throttle(dev: str, rate: int) -> None:
    for limit in LIMITS:
        limit.write_text(f"{dev} {rate}\n")  # 0 removes the limit
