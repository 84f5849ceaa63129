"""make bench-peers in its smoke mode (SMOKE=1): IOR and mdtest built from ../shared/peers, every phase measured by
fsbench and by its peer on a RAM-backed ext4, the table printed, docs/bench-peers.md left alone."""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, needs_root

pytestmark = [needs_root, pytest.mark.e2e]
PHASES = ["write", "read", "md create", "md stat", "md read", "md delete"]


def test_every_phase_has_both_figures_and_a_ratio():
    if not (REPO.parent / "shared" / "peers" / "ior-5fcf0ba.tar.gz").exists():
        pytest.skip("no ../shared/peers/ior-5fcf0ba.tar.gz beside the repository to build IOR and mdtest from")
    doc = REPO / "docs" / "bench-peers.md"
    before = doc.read_bytes() if doc.exists() else None
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "peers.py")],
        capture_output=True,
        text=True,
        env=os.environ | {"SMOKE": "1"},
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0] in PHASES:
            rows[cells[0]] = cells
    assert list(rows) == PHASES, proc.stdout
    for phase, (_, fsb, peer, ratio, _, target, met) in rows.items():
        unit, goal = ("MB/s", "0.95–1.05") if phase in ("write", "read") else ("k files/s", "0.9–1.1")
        assert target == goal
        assert re.fullmatch(rf"[\d.]+ ?{unit}", fsb) and re.fullmatch(rf"[\d.]+ ?{unit}", peer), (phase, fsb, peer)
        assert float(fsb.split()[0].rstrip("k")) > 0 and float(peer.split()[0].rstrip("k")) > 0
        assert float(ratio) > 0 and met in ("met", "not met")
    assert "mdtest -F -P -u -L -n 200 -T -d DIR" in proc.stdout and "--posix.odirect -F -C -e" in proc.stdout
    assert "SMOKE=1: nothing written" in proc.stderr
    assert (doc.read_bytes() if doc.exists() else None) == before
