"""Shared file (N-1), end to end: with io.shared_file [false, true], every stream of a cell writes and reads
disjoint, interleaved blocks of one file (of the bare device from its start, for raw) instead of its own file
(region), with the python engine (pread/pwrite and io_uring) and with fio (sequential: its offset modifier).
Rows and summary keep the two apart; nothing is left behind."""

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import held, needs_root, ram_xfs_campaign, run_campaign

pytestmark = [needs_root, pytest.mark.e2e]

SIZE = 8 * 2**20  # per stream


@pytest.mark.parametrize("engine", ["python", "fio"])
def test_shared_and_per_stream_files_are_cells_of_their_own(engine, ram_scratch, tmp_path):
    patterns = ["seq", "rand"] if engine == "python" else ["seq"]  # fio interleaves only sequentially
    config = ram_xfs_campaign(
        ram_scratch,
        f"shared-{engine}",
        raw=True,
        engine=engine,
        size=SIZE,
        block_sizes=["64KiB"],
        patterns=patterns,
        streams=[3],
        iodepth=[1, 4] if engine == "python" else [1],
        shared_file=[False, True],
    )
    run_campaign(tmp_path, config)
    out = tmp_path / f"results/shared-{engine}"
    df = pd.read_csv(out / "measurements.csv")
    depths = len(config["io"]["iodepth"])
    assert len(df) == 2 * len(patterns) * depths * 2 * 2  # targets × patterns × depths × shared × ops
    assert set(df["shared_file"]) == {False, True}
    for row in df.itertuples():
        assert row.bytes == 3 * SIZE and row.ops == 3 * SIZE // 65536
        record = json.loads(Path(tmp_path / row.record).read_text())
        paths = {s["path"] for s in record["streams"]}
        test = record["cell"]["test"]
        if row.shared_file:
            assert test.endswith("-shared") and len(paths) == 1, (test, paths)
            if row.target == "xfs" and row.op == "write":
                assert [i["size"] for i in record["identity"]] == [3 * SIZE] * 3  # one file, all of it
        else:
            assert not test.endswith("-shared") and len(paths) == (1 if row.target == "raw" else 3)
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == len(df)  # shared and per-stream cells are not pooled
    assert "shared file" in (out / "summary.md").read_text()
    assert not held(ram_scratch)


def test_an_all_hosts_cell_shares_one_file_across_its_hosts(scratch, tmp_path):
    """An all-hosts cell on a path array, with this host as its one host (no Slurm needed): its parts write and
    read one file on the shared path, in the slots of their host; the shared folder is empty afterwards.
    (Two nodes through Slurm: tests/test_slurm_nodes.py.)"""
    from fsbench.cluster.hosts import short_hostname

    shared = scratch / "shared"
    shared.mkdir()
    config = {
        "campaign": "allshared",
        "scratch": str(scratch / "s"),
        "hosts": [short_hostname()],
        "arrays": {"p": {"kind": "path", "path": str(shared), "all_hosts": True}},
        "io": {"size": SIZE, "block_sizes": ["1MiB"], "streams": [2], "shared_file": [True], "repeats": 1},
    }
    run_campaign(tmp_path, config)
    df = pd.read_csv(tmp_path / "results/allshared/measurements.csv")
    whole = df[(df["host"] == "all")]
    assert sorted(whole["op"]) == ["read", "write"] and (whole["bytes"] == 2 * SIZE).all()
    for row in whole.itertuples():
        record = json.loads((tmp_path / row.record).read_text())
        paths = {s["path"] for s in record["streams"]}
        assert len(paths) == 1 and "/fsbench-allshared-p.all/" in next(iter(paths)), paths
        # The host's part ran the engine on the shared file, its streams in slots 0 and 1 of 2.
        part = json.loads(
            (tmp_path / row.record).parent.joinpath("hosts", f"{short_hostname()}-{row.op}.json").read_text()
        )
        assert "(shared: stream s moves blocks s, s+2, s+4, ... of it)" in part["command"]
        assert part["cell"]["slots"] == 2 and part["cell"]["slot_base"] == 0
    assert list(shared.iterdir()) == [] and not held(scratch)
