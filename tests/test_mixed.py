"""Mixed reads and writes (patterns randrw and rw): the op sequence holds exactly the asked read share, the python
engine and fio each give a read and a write figure of one run, and a campaign gives a mixed cell two rows (op read
and op write, same rep) from its read step, its write step only laying the files down."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.engines import fio as fioengine
from fsbench.engines import mixed
from fsbench.engines.job import Job, Stream
from fsbench.engines.python import write

from conftest import held, needs_root, ram_xfs_campaign, run_campaign

KiB = 1024


def test_the_op_sequence_holds_exactly_the_read_share_in_a_seeded_order():
    order = mixed.kinds(1000, 70, seed=3)
    assert sum(order) == 700 and order == mixed.kinds(1000, 70, seed=3) and order != mixed.kinds(1000, 70, 4)
    assert order[:700] != [True] * 700  # shuffled, not reads first
    assert sum(mixed.kinds(7, 50, 1)) == 4 and mixed.kinds(5, 0, 1) == [False] * 5 and all(mixed.kinds(5, 100, 1))


@pytest.mark.parametrize(("pattern", "depth"), [("rand", 1), ("seq", 1), ("rand", 8)])
def test_the_python_engine_mixes_one_run_into_a_read_and_a_write_figure(tmp_path, pattern, depth):
    streams = (Stream(str(tmp_path / "a")), Stream(str(tmp_path / "b")))
    write(Job(streams, 256 * 4 * KiB, 4 * KiB))
    before = [Path(s.path).read_bytes() for s in streams]
    found = mixed.run(Job(streams, 256 * 4 * KiB, 4 * KiB, pattern=pattern, seed=9, iodepth=depth), 70)
    r, w = found["read"], found["write"]
    assert r["ops"] == 2 * round(256 * 0.7) and r["ops"] + w["ops"] == 512
    assert r["bytes"] == r["ops"] * 4 * KiB and w["bytes"] == w["ops"] * 4 * KiB
    assert r["seconds"] == pytest.approx(w["seconds"]) and w["seconds"] <= w["seconds_durable"]
    call = "pread(2)" if depth == 1 else "io_uring IORING_OP_READ (8 in flight)"
    assert f"70% {call}" in r["command"] and r["command"] == w["command"]
    after = [Path(s.path).read_bytes() for s in streams]
    blocks = [(b, a, i) for b, a in zip(before, after, strict=True) for i in range(0, len(b), 4 * KiB)]
    changed = sum(b[i : i + 4 * KiB] != a[i : i + 4 * KiB] for b, a, i in blocks)
    assert changed == w["ops"]  # every write landed on a block of its own, stamped: none equals what was there


def test_fio_runs_the_mix_with_its_own_options_and_gives_both_figures(tmp_path):
    streams = (Stream(str(tmp_path / "a")),)
    job = Job(streams, 256 * 4 * KiB, 4 * KiB, pattern="rand", seed=2)
    text = fioengine.job_file(job, "mixed", 70)
    assert "rw=randrw\nrwmixread=70\n" in text and "end_fsync=1" in text
    with pytest.raises(ValueError, match="rwmix_read goes with op mixed"):
        fioengine.job_file(job, "read", 70)
    write(Job(streams, 256 * 4 * KiB, 4 * KiB))
    found = fioengine.mixed(job, 70)
    assert found["read"]["ops"] + found["write"]["ops"] == 256
    assert abs(found["read"]["ops"] / 256 - 0.7) < 0.1  # fio draws each operation's kind: near the share
    assert found["read"]["seconds"] == found["write"]["seconds"] > 0


def test_mixed_settings_are_validated_and_reach_only_the_mixed_cells():
    base = {
        "campaign": "m",
        "scratch": "/var/tmp/fsbench-mixed-test",
        "arrays": {"a": {"kind": "loop", "size": "1GiB"}},
        "filesystems": {"xfs": {"type": "xfs"}},
        "io": {"size": "64MiB", "block_sizes": ["64KiB"], "patterns": ["rand", "randrw", "rw"], "repeats": 1},
    }
    plan = Plan(validate(base))
    assert plan.tests == ["rand-64KiB-buffered-1s", "randrw-64KiB-buffered-1s", "rw-64KiB-buffered-1s"]
    assert plan.cell_spec("local", "a", "xfs", "randrw-64KiB-buffered-1s", 1)["rwmix_read"] == 70
    assert "rwmix_read" not in plan.cell_spec("local", "a", "xfs", "rand-64KiB-buffered-1s", 1)
    for io, message in [
        ({"engine": "dd"}, r"'io.patterns'.*seq only with io.engine dd"),
        ({"rwmix_read": 101}, r"'io.rwmix_read': value 101"),
    ]:
        with pytest.raises(ConfigError, match=message):
            validate(base | {"io": base["io"] | io})
    assert validate(base | {"io": base["io"] | {"engine": "fio", "iodepth": [1, 32]}})
    assert validate(base | {"io": base["io"] | {"iodepth": [1, 32]}})


# End to end ------------------------------------------------------------------------------------------------------

SIZE = 8 * 2**20


@needs_root
@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["python", "fio"])
def test_a_mixed_cell_gives_a_read_and_a_write_row_of_one_run(engine, ram_scratch, tmp_path):
    depths = [1, 32]
    config = ram_xfs_campaign(
        ram_scratch,
        f"mix-{engine}",
        engine=engine,
        size=SIZE,
        block_sizes=["4KiB", "64KiB"],
        patterns=["rand", "randrw"],
        iodepth=depths,
        cache="direct",
        rwmix_read=70,
    )
    run_campaign(tmp_path, config)
    assert not held(ram_scratch)
    df = pd.read_csv(tmp_path / f"results/mix-{engine}/measurements.csv")
    assert len(df) == 2 * 2 * len(depths) * 2  # block sizes × patterns × depths × (write, read)
    for row in df.itertuples():
        assert math.isclose(row.iops * row.block_size / 1e6, row.mb_s, rel_tol=0.01)
        lat = [row.lat_p50_us, row.lat_p99_us, row.lat_p999_us, row.lat_max_us]
        assert 0 < lat[0] and lat == sorted(lat)
    mixes = df[df["pattern"] == "randrw"]
    for _, cell in mixes.groupby(["block_size", "iodepth"]):
        assert sorted(cell["op"]) == ["read", "write"] and cell["rep"].nunique() == 1
        assert cell["ops"].sum() == SIZE // int(cell["block_size"].iloc[0])  # one run over every block once
        share = cell.loc[cell["op"] == "read", "ops"].iloc[0] / cell["ops"].sum()
        assert share == pytest.approx(0.7, abs=0.005 if engine == "python" else 0.08)
        assert cell["seconds"].nunique() == 1  # both rows take the mix's wall time
        read = cell[cell["op"] == "read"].iloc[0]
        record = json.loads((tmp_path / read["record"]).read_text())
        assert record["mix"]["rwmix_read"] == 70 and len(record["rows"]) == 2
        layout = json.loads((tmp_path / read["record"]).with_name("write.json").read_text())
        assert layout["layout"] is True and layout["rows"] == []
    summary = pd.read_csv(tmp_path / f"results/mix-{engine}/summary.csv")
    assert len(summary[summary["pattern"] == "randrw"]) == len(mixes)
