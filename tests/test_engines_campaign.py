"""Each engine runs a real campaign on a loop device: same schema, its own command behind every figure,
rand / direct / streams cells as rows of their own, and every cache mode proven by cached_before."""

import math

import pandas as pd
import pytest

from conftest import needs_root, run_campaign

pytestmark = [needs_root, pytest.mark.e2e]

SIZE = 32 * 2**20
CASES = {
    "python": {"patterns": ["seq", "rand"], "cache": "remount", "mark": "python: "},
    "dd": {"patterns": ["seq"], "cache": "fadvise", "mark": "dd if="},
    "fio": {"patterns": ["seq", "rand"], "cache": "drop", "mark": "fio --output-format=json"},
}


@pytest.mark.parametrize("engine", list(CASES))
def test_engine_campaign(engine, scratch, tmp_path):
    case = CASES[engine]
    config = {
        "campaign": f"eng-{engine}",
        "scratch": str(scratch),
        "arrays": {"demo": {"kind": "loop", "size": "256MiB"}},
        "filesystems": {"ext4": {"type": "ext4"}},
        "io": {
            "engine": engine,
            "size": SIZE,
            "block_sizes": ["1MiB"],
            "patterns": case["patterns"],
            "direct": [False, True],
            "streams": [2],
            "repeats": 1,
            "cache": case["cache"],
        },
    }
    run_campaign(tmp_path, config)
    df = pd.read_csv(tmp_path / f"results/eng-{engine}/measurements.csv", keep_default_na=False, na_values=[""])
    cells = len(case["patterns"]) * 2  # patterns × direct
    assert len(df) == 2 * cells * 2  # targets × cells × ops
    assert set(df.pattern) == set(case["patterns"]) and set(df.direct) == {False, True}
    assert (df.streams == 2).all() and (df.bytes == 2 * SIZE).all()
    assert (df.engine == engine).all() and (df.cache == case["cache"]).all()
    assert df.command.str.contains(case["mark"], regex=False).all()
    for row in df.itertuples():
        assert math.isclose(row.mb_s, row.bytes / row.seconds / 1e6, rel_tol=1e-9)
    writes, reads = df[df.op == "write"], df[df.op == "read"]
    assert (writes.seconds_durable >= writes.seconds).all()
    assert reads.cached_before.between(0, 0.02).all()
    assert not reads["flags"].fillna("").str.contains("cached").any()
    assert df.groupby(["target", "pattern", "direct", "op"]).size().eq(1).all()
