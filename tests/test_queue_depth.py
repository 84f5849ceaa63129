"""IOPS and latency at a queue depth, end to end: a campaign of random 4 KiB and 64 KiB direct I/O at depths 1
and 32 on a RAM-backed loop device, with the python engine (io_uring above depth 1) and with fio (io_uring),
gives consistent rows: ops per block, iops x block size = MB/s, percentiles in order, the depth in the path, the
command and the row; and the IOPS and latency plots.

Which depth is faster is a speed claim: `make bench-engines` measures it, side by side, never a test here.
"""

import json
import math

import pandas as pd
import pytest

from conftest import needs_root, ram_xfs_campaign, run_campaign

pytestmark = [needs_root, pytest.mark.e2e]

SIZE = 16 * 2**20
LATENCY = ["lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us"]


@pytest.mark.parametrize("engine", ["python", "fio"])
def test_depths_give_consistent_iops_and_latency(engine, ram_scratch, tmp_path):
    config = ram_xfs_campaign(
        ram_scratch,
        f"qd-{engine}",
        engine=engine,
        size=SIZE,
        block_sizes=["4KiB", "64KiB"],
        patterns=["rand"],
        iodepth=[1, 32],
        cache="direct",
    )
    run_campaign(tmp_path, config)
    out = tmp_path / f"results/qd-{engine}"
    df = pd.read_csv(out / "measurements.csv")
    assert len(df) == 2 * 2 * 2  # block sizes × depths × ops
    assert sorted(set(df.iodepth)) == [1, 32] and (df.engine == engine).all()
    for row in df.itertuples():
        assert row.bytes == SIZE and row.ops == SIZE // row.block_size
        assert math.isclose(row.iops * row.block_size / 1e6, row.mb_s, rel_tol=0.01)
        lat = [getattr(row, c) for c in LATENCY]
        assert 0 < lat[0] and lat == sorted(lat), (row.target, row.op, row.iodepth, lat)
        assert row.lat_mean_us <= row.lat_max_us
        deep = row.iodepth == 32
        record = json.loads((tmp_path / row.record).read_text())
        assert record["cell"]["iodepth"] == row.iodepth and record["cell"]["test"].endswith("-qd32") == deep
        if engine == "fio":
            assert ("ioengine=io_uring" in row.command and "iodepth=32" in row.command) == deep
            assert ("ioengine=psync" in row.command) != deep
        else:
            assert ("io_uring IORING_OP_" in row.command and "32 in flight" in row.command) == deep
            assert all(s["ops"] == SIZE // row.block_size for s in record["streams"])
    summary = pd.read_csv(out / "summary.csv")
    assert {"iodepth"} <= set(summary.columns)
    for name in ("iops", "latency", "latency_percentiles"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 10_000
