"""The python engine and the cold-read machinery, on real files and a real loop device."""

import os
import zlib

import pytest

from fsbench import devices, engine

from conftest import needs_root

MiB = 2**20


def test_write_then_read_moves_exact_bytes(tmp_path):
    path = str(tmp_path / "f")
    w = engine.write(path, 8 * MiB, MiB)
    assert w["bytes"] == 8 * MiB == os.path.getsize(path)
    assert 0 < w["seconds"] <= w["seconds_durable"]
    assert "os.fsync" in w["command"] and "8 x 1048576" in w["command"]
    r = engine.read(path, 8 * MiB, 4 * MiB)
    assert r["bytes"] == 8 * MiB and r["seconds"] == r["seconds_durable"] > 0


def test_random_data_does_not_compress_and_zero_does(tmp_path):
    for data, ratio_below in (("random", None), ("zero", 0.01)):
        path = tmp_path / data
        engine.write(str(path), 4 * MiB, 64 * 1024, data=data)
        blob = path.read_bytes()
        ratio = len(zlib.compress(blob, 1)) / len(blob)
        assert (ratio > 0.99) if ratio_below is None else (ratio < ratio_below)


def test_random_blocks_do_not_repeat_within_the_pool(tmp_path):
    path = tmp_path / "f"
    engine.write(str(path), 8 * MiB, 4096)
    blob = path.read_bytes()
    blocks = {blob[i : i + 4096] for i in range(0, len(blob), 4096)}
    assert len(blocks) == 2048


def test_read_stops_at_end_of_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * (3 * MiB))
    assert engine.read(str(path), 4 * MiB, MiB)["bytes"] == 3 * MiB


@needs_root
def test_drop_cache_makes_reads_cold_and_residency_is_measured(tmp_path):
    path = str(tmp_path / "f")
    engine.write(path, 16 * MiB, MiB)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert engine.resident_fraction(fd, 16 * MiB) > 0.9  # just written: in cache
        engine.drop_cache(path)
        assert engine.resident_fraction(fd, 16 * MiB) == 0.0
        os.pread(fd, 4 * MiB, 0)
        assert 0.2 <= engine.resident_fraction(fd, 16 * MiB) < 1.0
    finally:
        os.close(fd)
    assert engine.read(path, 16 * MiB, MiB)["cached_before"] > 0.2  # what the read saw, not what we hoped
    engine.drop_cache(path)
    assert engine.read(path, 16 * MiB, MiB)["cached_before"] == 0.0


@needs_root
def test_raw_device_write_and_cold_read(scratch):
    dev = devices.attach_loop_images(scratch / "images", 1, 64 * MiB)[0]
    w = engine.write(dev, 32 * MiB, MiB, device=True)
    assert w["bytes"] == 32 * MiB and w["file"]["size"] == 32 * MiB
    engine.drop_cache(dev)
    r = engine.read(dev, 32 * MiB, 4 * MiB)
    assert r["bytes"] == 32 * MiB and r["cached_before"] == 0.0


def test_write_to_a_full_filesystem_fails(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(OSError):
        engine.write("/dev/full", MiB, 4096, device=True)
