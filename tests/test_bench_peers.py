"""make bench-peers in its smoke mode (SMOKE=1): IOR and mdtest built from ../shared/peers, every phase (block I/O,
metadata, and IO500's twelve through fsbench's io500 campaign) measured by fsbench and by its peer on a RAM-backed
ext4, the table printed, docs/bench-peers.md left alone."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, needs_root

pytestmark = [needs_root, pytest.mark.e2e]
PHASES = ["write", "read", "md create", "md stat", "md read", "md delete"]
IO500 = ["ior-easy-write", "mdtest-easy-write", "ior-hard-write"]
IO500 += ["mdtest-hard-write", "find", "ior-easy-read"]
IO500 += ["mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete", "mdtest-hard-read"]
IO500 += ["mdtest-hard-delete"]
PFIND = "pfind-aaba722.tar.gz"  # tools/peers.py builds find's peer from it where it is found


@pytest.mark.needs("peers")
def test_every_phase_has_both_figures_and_a_ratio():
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
        if len(cells) == 9 and cells[0] in PHASES + [f"io500 {p}" for p in IO500]:
            rows[cells[0]] = cells
    assert list(rows) == PHASES + [f"io500 {p}" for p in IO500], proc.stdout
    for phase, (_, fsb, peer, ratio, _, control, _, target, met) in rows.items():
        if phase.startswith("io500 "):  # fsbench's io500 campaign against IO500's own commands, IO500's units
            ior = phase.startswith("io500 ior-")
            unit, goal = ("GiB/s", "0.95–1.05") if ior else ("kIOPS", "0.9–1.1")
        else:
            unit, goal = ("MB/s", "0.95–1.05") if phase in ("write", "read") else ("k files/s", "0.9–1.1")
        assert target == goal
        assert re.fullmatch(rf"[\d.]+ ?{unit}", fsb) and re.fullmatch(rf"[\d.]+ ?{unit}", peer), (phase, fsb, peer)
        assert float(fsb.split()[0].rstrip("k")) > 0 and float(peer.split()[0].rstrip("k")) > 0
        assert float(ratio) > 0 and float(control) > 0
        ranged = r"not met; the peer against itself ranged as far \(\d\.\d\d–\d\.\d\d\)"
        assert met in ("met", "not met", "not met; nor is the peer against itself") or re.fullmatch(ranged, met)
    assert "mdtest -F -P -u -L -n 200 -T -d DIR" in proc.stdout
    # IOR's block write and read: two runs, the caches dropped between, as before fsbench's read
    assert "--posix.odirect -F -w -e -k" in proc.stdout and "--posix.odirect -F -r -C" in proc.stdout
    assert "Memory: " in proc.stdout  # whether this VM's free page reporting was held
    assert "-t 47008 -b 47008 -s 20" in proc.stdout and "-w 3901 -e 3901" in proc.stdout
    # io500's own syncs and data checks (src/phase_*.c): -Y after the mdtest writes, -R on the ior reads, -X
    assert "-d DIR/mdt_hard -C -Y`" in proc.stdout and "-d DIR/mdt_easy -C -Y`" in proc.stdout
    assert "-o DIR/ior-hard/file -r -R`" in proc.stdout and "-d DIR/mdt_hard -E -X`" in proc.stdout
    pfind = [REPO.parent / "shared" / "peers" / PFIND, Path("/var/tmp/fsbench-peers") / PFIND]
    if any(p.exists() for p in pfind):  # find's peer is IO500's pfind, run as IO500's phase_find runs it
        assert "pfind DIR -newer DIR-timestamp -size 3901c -name '*01*' -C -q 10000" in proc.stdout
    else:
        assert "| io500 find | io500 campaign, phase find | `find DIR -type f | wc -l` |" in proc.stdout
    assert "SMOKE=1: nothing written" in proc.stderr
    assert (doc.read_bytes() if doc.exists() else None) == before


def test_a_miss_says_whether_the_peer_moved_as_far_against_itself(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # its neighbour vm.py, as when run as a script
    spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    goal = (0.95, 1.05)
    assert bench.verdict([0.94, 0.96, 1.2], [0.5, 1.0, 1.0], goal) == "met"
    # GlusterFS's ior-easy-write, 11:28 UTC: fsbench/IOR 0.92, IOR against itself 0.59 once
    ranged = "not met; the peer against itself ranged as far (0.59–0.99)"
    assert bench.verdict([0.92, 0.93, 0.90], [0.59, 0.99, 0.98], goal) == ranged
    assert bench.verdict([0.80, 0.82, 0.81], [0.98, 1.00, 1.02], goal) == "not met"
    assert bench.verdict([0.80, 0.82, 0.81], [0.80, 0.90, 0.85], goal) == "not met; nor is the peer against itself"


def test_the_findings_come_from_the_table_and_an_unexplained_miss_fails_the_run(monkeypatch, tmp_path):
    """bench-peers' findings are this run's rows (each miss beside its ratio and verdict); the notes measured by hand
    are carried over from the doc under their dated heading, never written by the script; a miss the peer's own
    range does not explain is what makes it exit 1."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    goal = (0.95, 1.05)
    phases = [bench.Phase(name, "MB/s", goal, "", "") for name in ("write", "read", "md stat")]
    runs = {  # fsbench, peer, peer again per round
        "write": [{"fsbench": 1.0, "peer": 1.0, "peer again": 1.0}] * 3,
        "read": [{"fsbench": 0.9, "peer": 1.0, "peer again": v} for v in (0.85, 1.0, 1.0)],
        "md stat": [{"fsbench": 0.5, "peer": 1.0, "peer again": 1.0}] * 3,
    }
    results = {"ext4-ram": ("a loop device", runs, phases), "glusterfs": ("Not measured: no volume", {}, [])}
    text = "\n".join(bench.findings(results))
    assert "- ext4-ram: 1 of 3 rows within target." in text
    assert "  - read: fsbench/peer 0.90, not met; the peer against itself ranged as far (0.85–1.00)" in text
    assert "  - md stat: fsbench/peer 0.50, not met\n" in text and "- glusterfs: Not measured: no volume" in text
    assert [m[:2] for m in bench.unexplained(results)] == [("ext4-ram", "md stat")]
    doc = tmp_path / "bench-peers.md"
    stale = "# old\n\n## Findings (this run's table)\n\n- stale\n\n"
    doc.write_text(stale + "## Measured by hand on 2026-12-05\n\n- kept\n\n")
    assert bench.by_hand(doc) == ["## Measured by hand on 2026-12-05", "", "- kept"]


def test_a_run_of_some_storages_keeps_the_others_last_tables_dated(monkeypatch, tmp_path):
    """STORAGES=cephfs rewrites the doc: ext4-ram's and glusterfs's last tables stay as their own runs wrote them,
    with their dates (an undated section takes its doc's date); a storage never measured says so, no empty table."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = ["| phase | fsbench |", "| --- | ---: |", "| write | 1 MB/s |"]
    doc = tmp_path / "bench-peers.md"
    doc.write_text(
        "\n".join(
            ["# fsbench held against IOR and mdtest", "", "2026-12-06 18:38 UTC on vm, x86_64; load", ""]
            + ["## ext4-ram", "", "ext4 on /dev/loop0", "", *table, ""]
            + ["## glusterfs", "", "Measured 2026-12-05 13:42 UTC. GlusterFS volume", "", *table, ""]
            + ["## cephfs", "", "Not run this time (STORAGES=ext4-ram): no earlier table of it in this doc", ""]
            + ["| phase | fsbench |", "| --- | ---: |", "", "## Findings (this run's table)", "", "- old", ""]
        )
    )
    assert bench.carried(doc, "ext4-ram") == [
        "## ext4-ram",
        "",
        "Measured 2026-12-06 18:38 UTC. ext4 on /dev/loop0",
        "",
        *table,
        "",
    ]
    assert bench.carried(doc, "glusterfs")[2] == "Measured 2026-12-05 13:42 UTC. GlusterFS volume"
    assert bench.carried(doc, "glusterfs")[4:7] == table
    assert bench.carried(doc, "cephfs") == [] and bench.carried(tmp_path / "none.md", "ext4-ram") == []


def test_the_peer_s_files_lie_as_deep_as_fsbench_s_and_the_io500_application_s(monkeypatch, tmp_path):
    """Every call on a file resolves its path, and on CephFS a folder costs ~10 % of a stat (docs/bench-peers.md,
    session 19): the by-hand peer's data folder is as many folders below the storage's root as fsbench's io500
    folder and the io500 application's datadir."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    io5 = bench.io500_tunables("1MiB", 2, 2, 2)
    with bench.io500_fsbench(tmp_path, io5) as phase:
        phase("ior-easy-write")  # the first phase makes fsbench's io500 folder
        (fsbench,) = tmp_path.glob("**/fsbench-*-io500")
        with bench.io500_peer_folder(tmp_path / "peer-io500") as peer:
            assert (peer / "ior-easy").is_dir() and Path(f"{peer}-timestamp").exists()
            app = Path(re.search(r"^datadir = (.+)$", bench.app_ini(tmp_path / "peer", io5), re.M).group(1))
            depths = [len(d.relative_to(tmp_path).parts) for d in (fsbench, peer, app)]
            assert depths == [depths[0]] * 3, dict(zip(("fsbench", "peer", "app"), depths, strict=True))
    assert not (tmp_path / "peer-io500").exists()
