"""Telemetry of a measurement: the device counters see what reached the device, and a read that the device did
not serve is flagged cache-hit."""

import math
import os

import pytest

from fsbench.engines import python as engine
from fsbench.engines.job import Job, Stream
from fsbench.storage import cache, devices, telemetry
from fsbench.toolkit import flags

from conftest import needs_root

MiB = 2**20


@needs_root
def test_device_counters_see_direct_io_and_not_a_cached_read(scratch):
    dev = devices.attach_loop_images(scratch / "images", 1, 16 * MiB)[0]
    job = Job((Stream(dev, 0, True),), 4 * MiB, MiB, direct=True)
    with telemetry.measured("write", [dev]) as wrote:
        engine.write(job)
    with telemetry.measured("read", [dev]) as read:
        engine.read(job)
    assert wrote["device_bytes"] == 4 * MiB and read["device_bytes"] == 4 * MiB
    cols = telemetry.columns("write", 4 * MiB, wrote)
    assert cols["write_amplification"] == 1.0 and cols["cpu_s_per_gb"] > 0
    buffered = Job((Stream(dev, 0, True),), 4 * MiB, MiB)
    fd = os.open(dev, os.O_RDONLY)  # held open: the device's page cache stays after the first read
    try:
        # Something outside this test (here: the VM itself, seen once in a full run) may empty the page cache
        # between the two reads: the measured read counts only when the whole device region stayed cached.
        for _ in range(3):
            engine.read(buffered)
            before = cache.resident_fraction(dev, 4 * MiB)
            with telemetry.measured("read", [dev]) as again:
                engine.read(buffered)
            if before == cache.resident_fraction(dev, 4 * MiB) == 1.0:
                break
        else:
            pytest.fail("the page cache was emptied from outside during each of 3 tries")
    finally:
        os.close(fd)
    assert again["device_bytes"] < 4 * MiB / 2 and flags.cache_hit("read", 4 * MiB, again["device_bytes"])
    devices.release(scratch)


def test_no_counters_for_a_path_array_and_the_flag_only_for_reads():
    with telemetry.measured("read", []) as found:
        pass
    assert math.isnan(found["device_bytes"]) and math.isnan(telemetry.columns("read", MiB, found)["device_bytes"])
    assert telemetry.device_sectors(["/dev/no-such-device"]) is None
    row = {"op": "read", "bytes": 100, "seconds": 2, "seconds_durable": 2, "cached_before": 0.0, "device_bytes": 10}
    assert flags.doubts(row, 100) == "cache-hit"
    assert flags.doubts(row | {"device_bytes": 100}, 100) == ""
    assert flags.doubts(row | {"op": "write", "device_bytes": 0}, 100) == ""
    assert flags.doubts(row | {"device_bytes": math.nan}, 100) == ""


@pytest.mark.parametrize("op,index", [("read", 0), ("write", 1)])
def test_columns_follow_the_op(op, index):
    found = {"cpu_seconds": 0.5, "device_bytes": 3e9}
    cols = telemetry.columns(op, 2 * 10**9, found)
    assert cols["cpu_s_per_gb"] == 0.25 and cols["device_bytes"] == 3e9
    assert (cols["write_amplification"] == 1.5) if op == "write" else math.isnan(cols["write_amplification"])
