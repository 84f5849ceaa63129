"""The fio engine: job-file construction (no disk) and real fio runs on small files."""

import configparser
import logging
import os
import zlib

import pytest

from fsbench.engines import fio as fioengine
from fsbench.engines import table
from fsbench.engines.job import Job, Stream
from fsbench.toolkit.system import ToolError

from conftest import FIGURE_KEYS, STREAM_KEYS, file_job, logged_progress

MiB = 2**20


def sections(text: str) -> dict[str, dict[str, str | None]]:
    ini = configparser.ConfigParser(allow_no_value=True, interpolation=None, delimiters=("=",))
    ini.optionxform = str
    ini.read_string(text)
    return {name: dict(ini[name]) for name in ini.sections()}


def test_write_job_seq_zero_one_stream():
    s = sections(fioengine.job_file(file_job(["/data/f0"], size=64 * MiB, bs=4 * MiB, data="zero", seed=7), "write"))
    assert list(s) == ["global", "stream0"]
    g = s["global"]
    assert {k: g[k] for k in ("ioengine", "bs", "size", "direct", "rw", "end_fsync", "zero_buffers", "invalidate")} == {
        "ioengine": "psync",
        "bs": "4194304",
        "size": "67108864",
        "direct": "0",
        "rw": "write",
        "end_fsync": "1",
        "zero_buffers": "1",
        "invalidate": "0",
    }
    assert g["randseed"] == "7" and g["norandommap"] == "0" and g["random_generator"] == "tausworthe64"
    assert g["fallocate"] == "none" and "thread" in g and g["group_reporting"] == "0"
    assert "refill_buffers" not in g
    assert s["stream0"] == {"filename": "/data/f0"}


def test_read_job_rand_random_direct_three_streams():
    text = fioengine.job_file(file_job(["/a", "/b", "/c"], pattern="rand", direct=True), "read")
    s = sections(text)
    g = s["global"]
    assert g["rw"] == "randread" and g["direct"] == "1" and g["refill_buffers"] == "1"
    assert "end_fsync" not in g and "zero_buffers" not in g
    assert [s[f"stream{i}"] for i in range(3)] == [{"filename": "/a"}, {"filename": "/b"}, {"filename": "/c"}]
    assert sections(fioengine.job_file(file_job(["/a"], pattern="rand"), "write"))["global"]["rw"] == "randwrite"


def test_device_streams_get_their_offsets_and_colons_are_escaped():
    size = 64 * MiB
    job = Job(tuple(Stream("/dev/loop7", offset=i * size, device=True) for i in range(3)), size=size, block_size=MiB)
    s = sections(fioengine.job_file(job, "write"))
    assert [s[f"stream{i}"] for i in range(3)] == [
        {"filename": "/dev/loop7", "offset": str(i * size)} for i in range(3)
    ]
    assert "filename=/mnt/a\\:b/f\n" in fioengine.job_file(file_job(["/mnt/a:b/f"]), "read")
    with pytest.raises(ValueError, match="whole number"):
        fioengine.job_file(file_job(["/x"], size=3 * MiB, bs=2 * MiB), "write")
    with pytest.raises(ValueError, match="op must be"):
        fioengine.job_file(file_job(["/x"]), "trim")


@pytest.mark.parametrize("data", ["random", "zero"])
def test_write_then_read_one_stream(tmp_path, data):
    path = tmp_path / "with:colon"
    job = file_job([path], data=data)
    w = fioengine.write(job)
    assert w["bytes"] == 16 * MiB == os.path.getsize(path)
    assert 0 < w["seconds"] <= w["seconds_durable"]
    st = w["streams"][0]
    assert w["seconds"] == pytest.approx(st["fio_lat_ns_mean"] * st["fio_total_ios"] / 1e9)
    assert st["fio_total_ios"] == 16 and w["seconds_durable"] == max(st["fio_runtime_ms"] / 1000, w["seconds"])
    assert w["command"].startswith("fio --output-format=json+ ") and "end_fsync=1" in w["command"]
    blob = path.read_bytes()
    ratio = len(zlib.compress(blob, 1)) / len(blob)
    assert ratio > 0.99 if data == "random" else ratio < 0.01
    r = fioengine.read(job)
    assert r["bytes"] == 16 * MiB and 0 < r["seconds"] == r["seconds_durable"]
    assert "rw=read" in r["command"] and "end_fsync" not in r["command"]


def test_two_streams_rand_touch_every_block_once(tmp_path):
    bs = 64 * 1024
    job = file_job([tmp_path / "a", tmp_path / "b"], bs=bs, pattern="rand", seed=3)
    w = fioengine.write(job)
    assert w["bytes"] == 32 * MiB and len(w["streams"]) == 2
    for s in w["streams"]:
        assert s["bytes"] == 16 * MiB and s["fio_total_ios"] == 16 * MiB // bs
        assert s["start"] < s["end"] <= s["end_durable"]
    assert w["streams"][0]["start"] == w["streams"][1]["start"]  # timed from the one fio launch
    assert (
        w["seconds"]
        == max(s["seconds"] for s in w["streams"])
        == pytest.approx(max(s["end"] for s in w["streams"]) - w["streams"][0]["start"], abs=1e-6)
    )
    for name in ("a", "b"):
        blob = (tmp_path / name).read_bytes()
        assert len(blob) == 16 * MiB
        assert all(any(blob[i : i + bs]) for i in range(0, len(blob), bs))  # no hole: every block was written
    r = fioengine.read(job)
    assert r["bytes"] == 32 * MiB and 0 < r["seconds"] == r["seconds_durable"]


def test_direct_io_on_var_tmp(scratch):  # scratch: on /var/tmp, a disk filesystem (/tmp may be tmpfs)
    job = file_job([scratch / "f"], size=8 * MiB, direct=True)
    w = fioengine.write(job)
    assert "direct=1" in w["command"] and w["bytes"] == 8 * MiB == os.path.getsize(job.streams[0].path)
    assert fioengine.read(job)["bytes"] == 8 * MiB


@pytest.mark.parametrize("n, pattern", [(1, "seq"), (2, "rand")])
def test_progress_is_logged_while_fio_runs_and_the_results_keep_their_shape(scratch, caplog, n, pattern):
    # O_DIRECT in 4 KiB blocks is slow enough (seen: ~30 MB/s) for several 10 ms progress lines per run.
    job = file_job([scratch / f"s{i}" for i in range(n)], size=8 * MiB, bs=4096, pattern=pattern, direct=True)
    with caplog.at_level(logging.INFO, logger="fsbench"):
        w = fioengine.write(job, every=0.01)
        r = fioengine.read(job, every=0.01)
    logged_progress(caplog, "write", n * 8 * MiB, 8 * MiB)  # n = 2: both jobs' threads are counted
    logged_progress(caplog, "read", n * 8 * MiB, 8 * MiB)
    for result in (w, r):  # fio's JSON was read as before: nothing of the progress got in
        assert set(result) == FIGURE_KEYS
        assert result["bytes"] == n * 8 * MiB and len(result["streams"]) == n
        for s in result["streams"]:
            assert set(s) == STREAM_KEYS | {
                "seconds",
                "seconds_durable",
                "fio_runtime_ms",
                "fio_lat_ns_mean",
                "fio_total_ios",
                "fio_wall_seconds",
                "ops",
                "latency",
            }
            assert s["fio_total_ios"] == s["ops"] == s["latency"]["count"] == 2048 and s["seconds"] > 0
        # fio's own latency bins, merged: percentiles in order, the mean fio reported
        assert result["lat_p50_us"] <= result["lat_p99_us"] <= result["lat_p999_us"] <= result["lat_max_us"]
        mean_ns = sum(s["fio_lat_ns_mean"] for s in result["streams"]) / n
        assert result["lat_mean_us"] * 1e3 == pytest.approx(mean_ns, rel=0.05)  # clat vs lat: slat is ~0 (psync)


def test_read_of_a_missing_or_short_file_is_refused(tmp_path):
    with pytest.raises(ToolError, match="does not exist"):
        fioengine.read(file_job([tmp_path / "missing"]))
    (tmp_path / "short").write_bytes(b"x" * MiB)
    with pytest.raises(ToolError, match="holds 1048576 bytes"):
        fioengine.read(file_job([tmp_path / "short"]))
    assert os.path.getsize(tmp_path / "short") == MiB  # fio did not lay it out


def test_fio_failure_carries_fios_message(tmp_path):
    (tmp_path / "plain").write_bytes(b"x")
    with pytest.raises(ToolError, match="Not a directory"):
        fioengine.write(file_job([tmp_path / "plain" / "f"], size=MiB))


def test_streams_sharing_a_file_write_and_read_interleaved_blocks_with_fio(tmp_path):
    path = str(tmp_path / "shared")
    job = Job(tuple(Stream(path, 0, False, i) for i in range(3)), 8 * 4096, 4096, slots=3)
    ini = sections(fioengine.job_file(job, "write"))
    # After each block the other two streams' are skipped; each stream's region starts at its first block.
    assert ini["global"]["rw"] == "write:8192"
    assert [(ini[f"stream{i}"]["offset"], ini[f"stream{i}"]["size"]) for i in range(3)] == [
        ("0", str(24 * 4096)),
        ("4096", str(23 * 4096)),
        ("8192", str(22 * 4096)),
    ]
    assert {ini[f"stream{i}"]["io_size"] for i in range(3)} == {str(8 * 4096)}
    w = fioengine.write(job)
    blob = open(path, "rb").read()
    assert w["bytes"] == len(blob) == 24 * 4096 and blob.count(bytes(4096)) == 0
    assert fioengine.read(job)["bytes"] == 24 * 4096
    with pytest.raises(ValueError, match="only sequentially"):
        table.run("fio", "write", Job(job.streams, 8 * 4096, 4096, pattern="rand", slots=3))
