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
def private_scratch():
    """A fresh scratch folder; whatever is left under it is released, and that release must succeed."""
    path = SCRATCH_ROOT / uuid.uuid4().hex[:12]
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
