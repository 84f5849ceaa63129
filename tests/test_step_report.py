"""fsbench.toolkit.run_step: a device step's record gets the step's own span."""

import time
from datetime import datetime

from fsbench.toolkit.run_step import run_device_step


def test_a_device_steps_record_gets_its_own_span(tmp_path):
    def step(seconds):
        time.sleep(seconds)
        return {"step": "mkfs", "seconds": 0.0}

    before = datetime.now().astimezone()
    record = run_device_step(str(tmp_path / "log"), step, 0.2, what="mkfs of a cell")
    after = datetime.now().astimezone()
    start, end = (datetime.fromisoformat(record[k]) for k in ("step_started_at", "step_ended_at"))
    assert before <= start and end <= after and (end - start).total_seconds() >= 0.2
    assert record["step"] == "mkfs" and "mkfs of a cell" in (tmp_path / "log").read_text()
