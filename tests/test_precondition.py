"""Preconditioning (config precondition): the whole array written `passes` times by a step of its own, after
prepare_array and before any of the array's cells, with its record and time series."""

import json
import re
from datetime import datetime

import pytest

from fsbench.campaign.config import ConfigError, validate

from conftest import needs_root, run_campaign, small_campaign

MiB = 2**20


def test_precondition_is_validated():
    base = small_campaign("/var/tmp/fsbench-precondition-test", "p")
    assert validate(base)["precondition"] is None
    got = validate(base | {"precondition": {}})["precondition"]
    assert got == {"passes": 2, "pattern": "seq", "block_size": MiB}
    for bad, message in [
        ({"passes": 0}, r"'precondition.passes'"),
        ({"pattern": "zigzag"}, r"'precondition.pattern'"),
        ({"block_size": "1000"}, r"'precondition.block_size': value '1000B?' is not allowed; allowed: a multiple"),
    ]:
        with pytest.raises(ConfigError, match=message):
            validate(base | {"precondition": bad})


@needs_root
def test_preconditioning_runs_as_its_own_step_before_the_arrays_cells(scratch, tmp_path):
    config = small_campaign(scratch, "pre") | {"raw": True, "precondition": {"passes": 2, "block_size": "4MiB"}}
    plain = run_campaign(tmp_path / "plain", small_campaign(scratch, "plain"), "--dry-run")
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", plain.stdout, re.M))  # Snakemake's job stats table
    assert "mkfs" in jobs and "precondition" not in jobs  # not asked for: no step, the cells' inputs as they were
    dry = run_campaign(tmp_path / "pre", config, "--dry-run")
    assert dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, re.M))["precondition"] == "1"
    run_campaign(tmp_path / "pre", config)
    out = tmp_path / "pre/results/pre"
    record = json.loads(next((out / "runs").glob("*/demo/precondition.json")).read_text())
    assert record["step"] == "precondition" and [p["pass"] for p in record["passes"]] == [1, 2]
    assert record["bytes_per_device"] == 192 * MiB
    for p in record["passes"]:
        assert p["bytes"] == 192 * MiB and sum(p["timeseries"]["bytes"]) == 192 * MiB and p["mb_s"] > 0
    ended = datetime.fromisoformat(record["started_at"]).timestamp() + record["seconds"]
    firsts = [json.loads(f.read_text()) for f in (out / "runs").glob("*/demo/*/*/rep1/*.json")]
    starts = [datetime.fromisoformat(r["started_at"] if "started_at" in r else r["row"]["started_at"]) for r in firsts]
    assert firsts and all(s.timestamp() >= ended for s in starts)
    assert (out / "logs/precondition").is_dir()
