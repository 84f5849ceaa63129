"""The python engine and the cold-read machinery, on real files and a real loop device."""

import errno
import logging
import os
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from fsbench.engines import loops, mixed
from fsbench.engines import python as engine
from fsbench.engines.job import ChildBytes, Job, Stream, extent, offsets, progress
from fsbench.storage import cache, devices

from conftest import REPO, file_job, logged_progress, needs_root

MiB = 2**20


def files(tmp_path, n=1):
    return tuple(Stream(str(tmp_path / f"s{i}")) for i in range(n))


def test_write_then_read_moves_exact_bytes(tmp_path):
    job = Job(files(tmp_path), 8 * MiB, MiB)
    w = engine.write(job)
    assert w["bytes"] == 8 * MiB == os.path.getsize(job.streams[0].path)
    assert 0 < w["seconds"] <= w["seconds_durable"]
    assert "os.fsync" in w["command"] and "8 x 1048576" in w["command"]
    r = engine.read(Job(job.streams, 8 * MiB, 4 * MiB))
    assert r["bytes"] == 8 * MiB and r["seconds"] == r["seconds_durable"] > 0


def test_streams_each_write_their_own_file_and_the_rate_spans_all(tmp_path):
    job = Job(files(tmp_path, 3), 4 * MiB, MiB)
    w = engine.write(job)
    assert w["bytes"] == 12 * MiB and len(w["streams"]) == 3
    assert all(os.path.getsize(s.path) == 4 * MiB for s in job.streams)
    first = min(s["start"] for s in w["streams"])
    assert w["seconds"] == pytest.approx(max(s["end"] for s in w["streams"]) - first)
    contents = {open(s.path, "rb").read(MiB) for s in job.streams}
    assert len(contents) == 3  # no two streams write the same data
    r = engine.read(job)
    assert r["bytes"] == 12 * MiB and len(r["streams"]) == 3


def test_each_stream_runs_on_a_cpu_of_its_own_and_the_caller_keeps_its_cpus(tmp_path):
    """Where there are as many CPUs as streams, stream i is bound to the i-th (as mpirun binds IOR's ranks), and
    the caller's affinity is as before afterwards; with more streams than CPUs none is bound."""
    cpus = sorted(os.sched_getaffinity(0))
    for n in (1, len(cpus), len(cpus) + 1):
        w = engine.write(Job(files(tmp_path, n), MiB, MiB // 4))
        bound = [s["cpu"] for s in w["streams"]]
        assert bound == (cpus[:n] if n <= len(cpus) else [None] * n), (n, bound)
        assert sorted(os.sched_getaffinity(0)) == cpus


def test_every_call_is_timed_and_the_streams_latencies_merge(tmp_path):
    job = file_job([tmp_path / "a", tmp_path / "b"], size=4 * MiB, bs=64 * 1024, pattern="rand")
    for result in (engine.write(job), engine.read(job)):
        assert result["ops"] == 2 * 64 and all(s["ops"] == s["latency"]["count"] == 64 for s in result["streams"])
        lat = [result[k] for k in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us")]
        assert 0 < lat[0] and lat == sorted(lat)
        # each stream's calls took no longer than the stream did: the mean of all calls fits the longest stream
        call_seconds = result["lat_mean_us"] * result["ops"] / 2 / 1e6
        assert 0 < call_seconds <= result["seconds"] * 1.01


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("pattern", ["seq", "rand"])
def test_a_queue_depth_keeps_that_many_calls_in_flight_and_moves_every_block_once(tmp_path, pattern, direct):
    """io_uring at depth 8: every block written exactly once with its own data (none left a hole, no two alike),
    read back in full, each call timed; a device region stays inside its stream's bounds."""
    bs = 64 * 1024
    job = Job(
        (Stream(str(tmp_path / "a")), Stream(str(tmp_path / "b"))),
        4 * MiB,
        bs,
        pattern=pattern,
        direct=direct,
        iodepth=8,
    )
    w, r = engine.write(job), engine.read(job)
    assert w["bytes"] == r["bytes"] == 8 * MiB and w["ops"] == r["ops"] == 2 * 64
    assert "io_uring IORING_OP_WRITE, 8 in flight" in w["command"] and all(s["iodepth"] == 8 for s in r["streams"])
    for name in ("a", "b"):
        blob = (tmp_path / name).read_bytes()
        blocks = [blob[k : k + bs] for k in range(0, len(blob), bs)]
        assert len(blob) == 4 * MiB and bytes(bs) not in blocks and len(set(blocks)) == len(blocks)
    for result in (w, r):
        lat = [result[k] for k in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us")]
        assert 0 < lat[0] and lat == sorted(lat)


def test_a_call_in_flight_that_fails_raises_the_kernels_error_and_a_read_stops_at_the_end(tmp_path):
    path = tmp_path / "short"
    path.write_bytes(b"x" * MiB)
    job = Job((Stream(str(path), 0, True),), 4 * MiB, 64 * 1024, iodepth=4)  # 1 MiB there, 4 MiB asked
    result = engine.read(job)
    assert result["bytes"] == MiB and result["ops"] == 16  # the calls past the end moved nothing
    target = "/var/tmp/fsbench-direct-test.dat"  # O_DIRECT needs a real filesystem (tmp_path may be tmpfs)
    try:
        unaligned = Job((Stream(target),), 1000 * 64, 1000, direct=True, iodepth=4)
        with pytest.raises(OSError) as e:
            engine.write(unaligned)
        assert e.value.errno == errno.EINVAL and target in str(e.value)
    finally:
        os.unlink(target)


def test_rand_touches_every_block_once(tmp_path):
    job = Job(files(tmp_path), 64 * 4096, 4096, pattern="rand", seed=7)
    order = offsets(job, 0)
    assert sorted(order) == [k * 4096 for k in range(64)] and order != sorted(order)
    assert order == offsets(job, 0)  # the same seed gives the same order
    engine.write(job)
    blob = open(job.streams[0].path, "rb").read()
    assert len(blob) == 64 * 4096 and blob.count(bytes(4096)) == 0  # no block left as a hole
    assert engine.read(job)["bytes"] == 64 * 4096


def test_device_streams_use_their_own_regions(tmp_path):
    path = tmp_path / "dev"
    path.write_bytes(bytes(4 * MiB))
    job = Job((Stream(str(path), 0, True), Stream(str(path), 2 * MiB, True)), 2 * MiB, MiB)
    engine.write(job)
    blob = path.read_bytes()
    assert len(blob) == 4 * MiB and blob[:MiB] != blob[2 * MiB : 3 * MiB]
    assert bytes(MiB) not in (blob[:MiB], blob[3 * MiB :])


def test_direct_io_on_a_real_filesystem(tmp_path):
    job = Job((Stream("/var/tmp/fsbench-direct-test.dat"),), 4 * MiB, 64 * 1024, direct=True)
    try:
        assert engine.write(job)["bytes"] == 4 * MiB
        assert engine.read(job)["bytes"] == 4 * MiB
        assert "O_DIRECT" in engine.read(job)["command"]
    finally:
        os.unlink(job.streams[0].path)


def test_random_data_does_not_compress_and_zero_does(tmp_path):
    for data, compressible in (("random", False), ("zero", True)):
        job = Job((Stream(str(tmp_path / data)),), 4 * MiB, 64 * 1024, data=data)
        engine.write(job)
        blob = open(job.streams[0].path, "rb").read()
        ratio = len(zlib.compress(blob, 1)) / len(blob)
        assert (ratio < 0.01) if compressible else (ratio > 0.99)


def test_random_blocks_do_not_repeat_within_the_pool(tmp_path):
    job = Job(files(tmp_path), 8 * MiB, 4096)
    engine.write(job)
    blob = open(job.streams[0].path, "rb").read()
    assert len({blob[i : i + 4096] for i in range(0, len(blob), 4096)}) == 2048


@pytest.mark.parametrize("depth", [1, 8])
@pytest.mark.parametrize("bs", [4096, 64 * 1024, MiB])
def test_no_two_4k_pieces_written_are_alike_and_no_128k_chunk_compresses(tmp_path, bs, depth):
    """The pool repeats (every 256 KiB), but each 4 KiB of a written block starts with the write's offset: a
    deduplicating device finds no two pieces alike, a compressor working in 128 KiB chunks finds no repeat."""
    size = 8 * MiB
    job = Job((Stream(str(tmp_path / "a")), Stream(str(tmp_path / "b"))), size, bs, pattern="rand", iodepth=depth)
    engine.write(job)
    pieces = []
    for stream in job.streams:
        blob = open(stream.path, "rb").read()
        assert len(blob) == size
        pieces += [blob[i : i + 4096] for i in range(0, size, 4096)]
        for chunk in range(0, size, 128 * 1024):
            part = blob[chunk : chunk + 128 * 1024]
            assert len(zlib.compress(part, 6)) > 0.99 * len(part)
    assert len(set(pieces)) == len(pieces) == 2 * size // 4096


def test_one_clock_read_per_call_the_latencies_add_up_to_the_streams_time(tmp_path):
    """Each latency ends where the next begins, so their sum is the stream's time up to its last call; the
    inlined bucket arithmetic files them as latency.bucket() does (the largest value in the top bucket)."""
    from fsbench.toolkit.latency import bucket

    for depth in (1, 4):
        job = Job(files(tmp_path, 2), 4 * MiB, 16 * 1024, pattern="rand", iodepth=depth)
        for result in (engine.write(job), engine.read(job)):
            for s in result["streams"]:
                lat = s["latency"]
                buckets = {int(i): n for i, n in lat["buckets"].items()}
                assert lat["count"] == s["ops"] == 256 == sum(buckets.values())
                assert max(buckets) == bucket(lat["max_ns"])
                if depth == 1:
                    assert 0 < lat["total_ns"] <= (s["end"] - s["start"]) * 1e9 * 1.001


def test_read_stops_at_end_of_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * (3 * MiB))
    assert engine.read(Job((Stream(str(path)),), 4 * MiB, MiB))["bytes"] == 3 * MiB


@needs_root
def test_drop_cache_makes_reads_cold_and_residency_is_measured(tmp_path):
    job = Job(files(tmp_path), 16 * MiB, MiB)
    path = job.streams[0].path
    engine.write(job)
    assert cache.resident_fraction(path, 16 * MiB) > 0.9  # just written: in cache
    cache.drop_cache([path])
    assert cache.resident_fraction(path, 16 * MiB) == 0.0
    with open(path, "rb") as f:
        f.read(4 * MiB)
    assert 0.2 <= cache.resident_fraction(path, 16 * MiB) < 1.0
    assert cache.resident_fraction(path, 4 * MiB, 12 * MiB) < 0.5  # the tail was not read
    cache.fadvise_cache([path])
    assert cache.resident_fraction(path, 16 * MiB) <= 0.1  # fadvise is only a hint (seen: 1/16 left)


@needs_root
def test_raw_device_write_and_cold_read(scratch):
    dev = devices.attach_loop_images(scratch / "images", 1, 64 * MiB)[0]
    job = Job((Stream(dev, 0, True), Stream(dev, 32 * MiB, True)), 32 * MiB, MiB)
    assert engine.write(job)["bytes"] == 64 * MiB
    cache.drop_cache([dev])
    assert cache.resident_fraction(dev, 32 * MiB, 32 * MiB) == 0.0
    assert engine.read(job)["bytes"] == 64 * MiB


@pytest.mark.needs("dev_full")
def test_write_to_a_full_device_fails():
    with pytest.raises(OSError) as e:
        engine.write(Job((Stream("/dev/full", 0, True),), MiB, 4096))
    assert e.value.errno == errno.ENOSPC and "write at byte 0 of /dev/full: No space left on device" in str(e.value)


@pytest.mark.parametrize("step", [1, 31, 32, 33, 1000, 123_457, 10**9 + 7])
def test_the_c_loop_files_each_latency_as_latency_bucket_does(tmp_path, monkeypatch, step):
    """With a clock that advances `step` ns a read, every call at depth 1 takes exactly `step`: each lands in
    latency.bucket(step), for writes, reads and both halves of a mix."""
    from fsbench.toolkit.latency import bucket

    monkeypatch.setattr(loops, "CLOCK_STEP_NS", step)
    job = Job(files(tmp_path, 1), 64 * 4096, 4096, pattern="rand")
    results = [engine.write(job), engine.read(job), *mixed.run(job, 50).values()]
    for result in results:
        lat = result["streams"][0]["latency"]
        assert lat["buckets"] == {str(bucket(step)): lat["count"]} and lat["count"] == result["ops"] > 0
        assert lat["total_ns"] == step * lat["count"] and lat["max_ns"] == step


def test_progress_is_logged_at_a_steady_pace(caplog):
    done = [0, 0]
    with caplog.at_level(logging.INFO, logger="fsbench"):
        with progress("write", 400, done, every=0.05):
            done[0], done[1] = 100, 100
            time.sleep(0.3)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) >= 3
    assert lines[0].startswith("write: 200 of 400 bytes (50 %),") and "MB/s, about" in lines[0]


def test_progress_takes_a_count_function_and_never_says_more_than_the_total(caplog):
    with caplog.at_level(logging.INFO, logger="fsbench"):
        with progress("read", 400, lambda: 500, every=0.02):
            time.sleep(0.1)
    assert caplog.records and all(r.getMessage().startswith("read: 400 of 400 bytes (100 %),") for r in caplog.records)


def test_progress_is_logged_while_python_streams_run(scratch, caplog):
    job = file_job([scratch / "a", scratch / "b"], size=8 * MiB, bs=4096, direct=True)
    with caplog.at_level(logging.INFO, logger="fsbench"):
        engine.write(job, every=0.01)
        engine.read(job, every=0.01)
    logged_progress(caplog, "write", 16 * MiB, 8 * MiB)
    logged_progress(caplog, "read", 16 * MiB, 8 * MiB)


# A child that, for each number it is sent, writes that many bytes to /dev/null, then one "." to say so.
CHILD = "import os, sys\nwhile n := sys.stdin.readline():\n    os.write(1, bytes(int(n)))\n    os.write(2, b'.')\n"


def test_child_bytes_reads_what_children_moved_from_proc():
    kids = [
        subprocess.Popen(
            [sys.executable, "-I", "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]

    def move(kid, n):
        kid.stdin.write(b"%d\n" % n)
        kid.stdin.flush()
        assert kid.stderr.read(1) == b"."

    def finish(kid, kill=False):
        if kill:
            kid.kill()
        kid.stdin.close()
        kid.wait()
        kid.stderr.close()

    with ChildBytes("write") as moved:
        for kid in kids:
            moved.watch(kid, 2 * MiB)
        assert moved() <= 3  # nothing but, at most, a "." each
        move(kids[0], MiB)
        move(kids[1], MiB)
        move(kids[2], 3 * MiB)  # more than its share: counted up to the share
        assert 4 * MiB < moved() <= 4 * MiB + 3
        finish(kids[0])  # exited cleanly and waited for: its whole share
        finish(kids[1], kill=True)  # killed: what it had been seen to move
        assert 5 * MiB < moved() <= 5 * MiB + 3
        finish(kids[2])
        assert 5 * MiB < moved() <= 5 * MiB + 3
        assert ChildBytes("read").field == b"rchar:"


def shared(tmp_path, n=4, **kw) -> Job:
    path = str(tmp_path / "shared")
    return Job(tuple(Stream(path, 0, False, i) for i in range(n)), 16 * 4096, 4096, slots=n, **kw)


@pytest.mark.parametrize("iodepth", [1, 8])
@pytest.mark.parametrize("pattern", ["seq", "rand"])
def test_streams_sharing_a_file_move_disjoint_interleaved_blocks_of_it(tmp_path, pattern, iodepth):
    job = shared(tmp_path, pattern=pattern, iodepth=iodepth, seed=3)
    mine = [offsets(job, i) for i in range(4)]
    # Stream s has blocks s, s+4, s+8, ...: together every block of the file once.
    assert all(sorted(o) == [(4 * k + i) * 4096 for k in range(16)] for i, o in enumerate(mine))
    assert sorted(sum(mine, [])) == [k * 4096 for k in range(64)]
    w = engine.write(job)
    blob = open(job.streams[0].path, "rb").read()
    # No stream truncated another's blocks, none left a hole, and streams wrote different data.
    assert w["bytes"] == len(blob) == 64 * 4096 and blob.count(bytes(4096)) == 0
    assert len({blob[i * 4096 : (i + 1) * 4096] for i in range(4)}) == 4
    assert "shared: stream s moves blocks s, s+4, s+8" in w["command"] and w["command"].count("shared") == 2
    r = engine.read(job)
    assert r["bytes"] == 64 * 4096 and r["ops"] == 64 and len(r["streams"]) == 4


@pytest.mark.parametrize("pattern", ["seq", "rand"])
@pytest.mark.parametrize(("slots", "slot"), [(1, 0), (3, 2)])
@pytest.mark.parametrize("counts", [(), (5,)])
def test_extent_is_where_the_last_block_of_the_order_ends(pattern, slots, slot, counts):
    job = Job((Stream("/x", 8192, False, slot),), 16 * 4096, 4096, pattern=pattern, slots=slots, counts=counts)
    assert extent(job, 0) == max(offsets(job, 0)) + 4096


def test_the_c_loop_builds_without_warnings_and_outside_the_source_tree(tmp_path, monkeypatch):
    """-Werror here (not in a user's build: a newer compiler's new warning must not stop a measurement); without
    make setup's library, the first measurement builds into the cache folder, never beside the source."""
    assert loops.build(into=tmp_path / "strict", extra=("-Werror",)).exists()
    monkeypatch.setattr(loops, "BUILD", tmp_path / "no-setup")
    monkeypatch.setenv("FSBENCH_CACHE", str(tmp_path / "cache"))
    lib = loops.build()
    assert lib.parent == tmp_path / "cache" and not (tmp_path / "no-setup").exists()
    assert loops.build() == lib  # built once


def test_streams_loading_the_c_loop_at_once_build_it_once(tmp_path, monkeypatch):
    """A part's streams are threads, each loading the library before its start line: without make setup's library,
    one builds it and the others wait for it (two builds of one process wrote one temporary file: one failed)."""
    monkeypatch.setattr(loops, "BUILD", tmp_path / "no-setup")
    monkeypatch.setattr(loops, "_lib", None)
    monkeypatch.setenv("FSBENCH_CACHE", str(tmp_path / "cache"))
    line = threading.Barrier(4)

    def at_once(_):
        line.wait()
        return loops.load()

    with ThreadPoolExecutor(4) as pool:
        libs = list(pool.map(at_once, range(4)))
    assert len({id(lib) for lib in libs}) == 1
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [loops.build().name]  # no temporary file left


def test_a_stream_that_cannot_open_its_file_fails_the_run_at_once(tmp_path):
    """Stream 1's folder does not exist: its open fails while stream 0 waits at the start line for it. The write
    fails at once with stream 1's error, and no thread is left waiting (it used to wait for stream 0 first, which
    waited for stream 1 for ever). In a process of its own: a hang is a timeout here, not a stuck test run."""
    code = (
        "import sys\n"
        "from fsbench.engines import python as engine\n"
        "from fsbench.engines.job import Job, Stream\n"
        "engine.write(Job(streams=tuple(Stream(p) for p in sys.argv[1:]), size=2**20, block_size=2**16))\n"
    )
    argv = [sys.executable, "-c", code, str(tmp_path / "s0"), str(tmp_path / "gone" / "s1")]
    env = os.environ | {"PYTHONPATH": str(REPO / "scripts")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and "FileNotFoundError" in done.stderr and "gone/s1" in done.stderr, done.stderr
    assert "BrokenBarrierError" not in done.stderr.splitlines()[-1]


def test_a_write_the_kernel_takes_short_is_finished_at_every_depth():
    """Linux moves at most 2 GiB - 4 KiB in one write: a 2 GiB block is written short, then finished, through
    pwrite (depth 1) and io_uring (depth 2) alike."""
    block = 2**31
    path = f"/dev/shm/fsbench-short-write-{os.getpid()}"
    try:
        for depth in (1, 2):
            done = engine.write(Job((Stream(path),), block, block, iodepth=depth))
            assert done["bytes"] == block == os.path.getsize(path)
            os.unlink(path)
    finally:
        if os.path.exists(path):
            os.unlink(path)


@needs_root
@pytest.mark.needs("thp")
@pytest.mark.parametrize("bs", [MiB, 4 * MiB])
def test_with_hugepage_buffers_each_direct_call_reaches_the_device_in_as_few_requests_as_its_queue_allows(
    ram_scratch, bs
):
    """io.buffer hugepage: the buffers lie in huge pages, so a call's bytes are physically contiguous: the block
    layer splits it only where the queue's limits make it. From scattered 4 KiB pages a 1 MiB call needs 256
    segments and a loop device takes 128 per request: two requests, as fio's and IOR's (the default, page)."""
    dev = devices.attach_loop_images(ram_scratch / "images", 1, 32 * MiB)[0]
    queue = f"/sys/block/{os.path.basename(dev)}/queue"

    def limit(name: str) -> int:
        return int(open(f"{queue}/{name}").read())

    largest = min(limit("max_sectors_kb") * 1024, limit("max_segments") * limit("max_segment_size"))
    per_call = -(-bs // largest)

    def done(field: int) -> int:
        return int(open(f"/sys/block/{os.path.basename(dev)}/stat").read().split()[field])

    job = Job((Stream(dev, 0, True),), 32 * MiB, bs, direct=True, buffer="hugepage")
    writes, reads = done(4), done(0)
    engine.write(job)
    calls = 32 * MiB // bs
    assert done(4) - writes in (calls * per_call, calls * per_call + 1)  # the flush may count as one
    engine.read(job)
    assert done(0) - reads == calls * per_call


def _huge_kib(address: int) -> int:
    """AnonHugePages (KiB) of this process's mapping that holds `address` (/proc/self/smaps)."""
    inside = False
    for line in open("/proc/self/smaps"):
        head = line.split()[0]
        if "-" in head and ":" not in head:
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start <= address < end
        elif inside and head == "AnonHugePages:":
            return int(line.split()[1])
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.needs("thp")
def test_the_buffers_are_in_4_kib_pages_unless_hugepage_is_asked_for():
    """io.buffer page (the default): 4 KiB pages whatever the machine's THP setting says, as fio's and IOR's
    malloc'd buffers are under `madvise`; hugepage: the mapping is backed by huge pages."""
    from fsbench.engines.python import _buffers

    for buffer, huge in (("page", False), ("hugepage", True)):
        job = Job((Stream("/nowhere"),), 16 * MiB, 4 * MiB, buffer=buffer)
        buf, read_at, write_at = _buffers(job, 1, 2)
        try:
            assert (_huge_kib(read_at) > 0) is huge, buffer
            assert (_huge_kib(write_at) > 0) is huge, buffer
        finally:
            buf.close()
