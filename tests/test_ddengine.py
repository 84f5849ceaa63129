"""The dd engine: command construction (no disk), dd's own output parsed, real runs on small files."""

import glob
import logging
import os
import subprocess
import zlib

import pytest

from fsbench.engines import dd as ddengine
from fsbench.engines import table
from fsbench.engines.job import Job, Stream
from fsbench.toolkit.system import ToolError

from conftest import FIGURE_KEYS, STREAM_KEYS, file_job, logged_progress

MiB = 2**20


def pools() -> set[str]:
    return set(glob.glob(os.path.join(ddengine.POOL_DIR, "fsbench-dd-pool-*")))


def test_write_argv_one_file_stream():
    job = file_job(["/data/f0"], size=64 * MiB, bs=4 * MiB)
    assert ddengine.write_argv(job, job.streams[0]) == ["dd", "if=/dev/zero", "of=/data/f0", "bs=4194304", "count=16"]
    pool = ddengine.write_argv(job, job.streams[0], "/dev/shm/pool")
    assert pool[1] == "if=/dev/shm/pool" and not any(a.startswith(("conv=", "oflag=", "seek=")) for a in pool)


def test_read_argv_direct_and_file_streams():
    job = file_job(["/a", "/b", "/c"], size=8 * MiB, bs=MiB, direct=True)
    argvs = [ddengine.read_argv(job, s) for s in job.streams]
    assert [a[1] for a in argvs] == ["if=/a", "if=/b", "if=/c"]
    assert all(a == ["dd", a[1], "of=/dev/null", "bs=1048576", "count=8", "iflag=direct"] for a in argvs)
    assert ddengine.write_argv(job, job.streams[2])[-1] == "oflag=direct"


def test_device_streams_seek_and_skip_to_their_offsets():
    size, bs = 64 * MiB, 4 * MiB
    streams = tuple(Stream("/dev/loop7", offset=i * size, device=True) for i in range(3))
    job = Job(streams=streams, size=size, block_size=bs, direct=True)
    writes = [ddengine.write_argv(job, s) for s in streams]
    reads = [ddengine.read_argv(job, s) for s in streams]
    assert writes[2] == [
        "dd",
        "if=/dev/zero",
        "of=/dev/loop7",
        "bs=4194304",
        "count=16",
        "seek=32",
        "oflag=direct",
        "conv=notrunc",
    ]
    assert [w[5] for w in writes] == ["seek=0", "seek=16", "seek=32"]
    assert [r[5] for r in reads] == ["skip=0", "skip=16", "skip=32"]
    assert "conv=notrunc" not in reads[1] and reads[1][-1] == "iflag=direct"


def test_rand_and_bad_sizes_are_refused_before_anything_runs(tmp_path):
    job = file_job([tmp_path / "f"], pattern="rand")
    for call in (
        lambda: ddengine.write_argv(job, job.streams[0]),
        lambda: ddengine.read(job),
        lambda: ddengine.write(job),
    ):
        with pytest.raises(ValueError, match="dd engine: unknown pattern 'rand'; allowed: seq"):
            call()
    # The table refuses it before dd is called, in the words config validation uses.
    with pytest.raises(ValueError, match="dd engine: dd cannot seek at random; use engine python or fio"):
        table.run("dd", "write", job)
    assert not (tmp_path / "f").exists()
    with pytest.raises(ValueError, match="whole number"):
        ddengine.write_argv(file_job(["/x"], size=3 * MiB, bs=2 * MiB), Stream("/x"))


def test_parse_real_dd_output_and_refuse_short_copies(tmp_path):
    job = file_job(["/dev/null"], size=2 * MiB, bs=MiB)
    argv = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1048576", "count=2"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=ddengine._ENV, check=True)
    parsed = ddengine.parse(proc.stderr, job, argv)
    assert parsed["records_out"] == (2, 0) and parsed["dd_seconds"] > 0
    assert float(proc.stderr.split("copied, ")[1].split(" s,")[0]) == parsed["dd_seconds"]  # as printed
    # older GNU prints "seconds": still parsed (by ddlog.parse_dd_log)
    old = "2+0 records in\n2+0 records out\n2097152 bytes (2.1 MB) copied, 0.25 seconds, 8.4 MB/s\n"
    assert ddengine.parse(old, job, argv)["dd_seconds"] == 0.25
    # a short source: a partial record and too few bytes, named in the error
    short = tmp_path / "short"
    short.write_bytes(b"x" * (MiB + MiB // 2))
    argv = ["dd", f"if={short}", "of=/dev/null", "bs=1048576", "count=2"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=ddengine._ENV, check=True)
    with pytest.raises(ToolError, match="1 full and 1 partial records, expected 2 full"):
        ddengine.parse(proc.stderr, job, argv)
    with pytest.raises(ToolError, match="expected one closing"):
        ddengine.parse("dd: error writing '/x': No space left on device\n", job, argv)


@pytest.mark.parametrize("data", ["random", "zero"])
def test_write_then_read_one_stream(tmp_path, data):
    before = pools()
    job = file_job([tmp_path / "f"], data=data)
    w = ddengine.write(job)
    assert pools() == before  # the random pool is gone again
    assert w["bytes"] == 16 * MiB == os.path.getsize(tmp_path / "f")
    assert w["seconds"] == w["streams"][0]["dd_seconds"] > 0  # exactly what dd printed
    assert w["seconds_durable"] >= w["seconds"]
    assert w["command"].count("dd if=") == 1 and f"of={tmp_path / 'f'}" in w["command"] and "os.fsync" in w["command"]
    assert ("/dev/shm/fsbench-dd-pool-" in w["command"]) == (data == "random")
    blob = (tmp_path / "f").read_bytes()
    ratio = len(zlib.compress(blob, 1)) / len(blob)
    assert ratio > 0.99 if data == "random" else ratio < 0.01
    r = ddengine.read(job)
    assert r["bytes"] == 16 * MiB and r["seconds"] == r["seconds_durable"] == r["streams"][0]["dd_seconds"] > 0
    assert r["command"] == f"dd if={tmp_path / 'f'} of=/dev/null bs=1048576 count=16"


def test_two_streams_run_together_and_aggregate_over_wall_time(tmp_path):
    job = file_job([tmp_path / "a", tmp_path / "b"], data="random")
    w = ddengine.write(job)
    assert w["bytes"] == 32 * MiB
    assert os.path.getsize(tmp_path / "a") == os.path.getsize(tmp_path / "b") == 16 * MiB
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()  # both copied the one shared pool
    starts = [s["start"] for s in w["streams"]]
    assert max(starts) < min(s["end"] for s in w["streams"])  # both were running at once
    for s in w["streams"]:
        assert s["start"] < s["end"] <= s["end_durable"] and s["bytes"] == 16 * MiB and s["dd_seconds"] > 0
    assert w["seconds"] == pytest.approx(max(s["end"] for s in w["streams"]) - min(starts))
    assert 0 < w["seconds"] <= w["seconds_durable"]
    r = ddengine.read(job)
    assert r["bytes"] == 32 * MiB and 0 < r["seconds"] == r["seconds_durable"]
    assert len(r["command"].splitlines()) == 2


def test_direct_io_on_var_tmp(scratch):  # scratch: on /var/tmp, a disk filesystem (/tmp may be tmpfs)
    job = file_job([scratch / "f"], size=8 * MiB, data="zero", direct=True)
    w = ddengine.write(job)
    assert "oflag=direct" in w["command"] and w["bytes"] == 8 * MiB == os.path.getsize(job.streams[0].path)
    r = ddengine.read(job)
    assert "iflag=direct" in r["command"] and r["bytes"] == 8 * MiB


@pytest.mark.parametrize("n", [1, 2])
def test_progress_is_logged_while_dd_runs_and_the_results_keep_their_shape(scratch, caplog, n):
    # O_DIRECT in 4 KiB blocks is slow enough (seen: ~30 MB/s) for several 10 ms progress lines per run.
    job = file_job([scratch / f"s{i}" for i in range(n)], size=8 * MiB, bs=4096, data="zero", direct=True)
    with caplog.at_level(logging.INFO, logger="fsbench"):
        w = ddengine.write(job, every=0.01)
        r = ddengine.read(job, every=0.01)
    logged_progress(caplog, "write", n * 8 * MiB, 8 * MiB)
    logged_progress(caplog, "read", n * 8 * MiB, 8 * MiB)
    for result in (w, r):  # dd's closing lines were parsed as before: nothing of the progress got in
        assert set(result) == FIGURE_KEYS
        assert result["bytes"] == n * 8 * MiB and len(result["streams"]) == n
        for s in result["streams"]:
            assert set(s) == STREAM_KEYS | {"dd_seconds", "dd_rate", "records_out", "ops", "command"}
            assert s["records_out"] == (2048, 0) and s["ops"] == 2048 and s["dd_seconds"] > 0
    assert os.path.getsize(scratch / "s0") == 8 * MiB


def test_a_failing_dd_raises_with_its_message(tmp_path):
    job = file_job([tmp_path / "missing"], data="zero")
    with pytest.raises(ToolError, match="No such file or directory"):
        ddengine.read(job)


def test_random_pool_too_large_says_what_to_use_instead(tmp_path):
    job = file_job([tmp_path / "f"], size=2**50, bs=MiB)
    with pytest.raises(ToolError, match="io.data: zero"):
        ddengine.write(job)
    assert not (tmp_path / "f").exists()
