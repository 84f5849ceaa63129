"""fsbench.engines.uring: reads and writes through the io_uring binding, errors as negative results, ring release."""

import errno
import mmap
import os
import random
import shutil
import signal
import tempfile
import threading

import pytest

from fsbench.engines import uring
from fsbench.engines.uring import Ring, buffer_address, check, why_unavailable

from conftest import missing

BS = 4096

pytestmark = pytest.mark.needs("io_uring")


def ring_fds() -> set[int]:
    """This process's fds that are io_uring instances."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:[io_uring]":
                found.add(int(name))
        except FileNotFoundError:
            pass  # the fd listdir itself used
    return found


def reap(ring: Ring, n: int) -> list[tuple[int, int]]:
    """Exactly the next n completions (waiting for them as needed)."""
    done: list[tuple[int, int]] = []
    while len(done) < n:
        ring.submit_and_wait(1)
        done += ring.completions()
    assert len(done) == n
    return done


def run_at_depth(ring: Ring, op: str, fd: int, buf: mmap.mmap, blocks: list[int], depth: int) -> dict[int, int]:
    """Move blocks[i] between file block blocks[i] and buffer block i, keeping `depth` I/Os in flight.

    user_data is the index into blocks; returns {index: res}.
    """
    base = buffer_address(buf)
    results: dict[int, int] = {}
    nxt = in_flight = 0
    while len(results) < len(blocks):
        while in_flight < depth and nxt < len(blocks):
            ring.prep(op, fd, base + nxt * BS, BS, blocks[nxt] * BS, nxt)
            nxt += 1
            in_flight += 1
        ring.submit_and_wait(1)
        for user_data, res in ring.completions():
            assert user_data not in results
            results[user_data] = res
            in_flight -= 1
    assert in_flight == 0 and ring.completions() == []
    return results


@pytest.fixture
def direct_dir():
    """A directory whose filesystem takes O_DIRECT (not tmpfs): under /var/tmp, removed afterwards."""
    path = tempfile.mkdtemp(prefix="fsbench-uring-", dir="/var/tmp")
    try:
        probe = os.path.join(path, "probe")
        try:
            os.close(os.open(probe, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600))
        except OSError as e:
            missing("io_uring", f"O_DIRECT refused under /var/tmp: {e.strerror}")
        yield path
    finally:
        shutil.rmtree(path)


DEFER = uring.IORING_SETUP_SINGLE_ISSUER | uring.IORING_SETUP_DEFER_TASKRUN


def ring_or_skip(depth: int, flags: int) -> Ring:
    try:
        return Ring(depth, flags)
    except OSError as e:
        if e.errno == errno.EINVAL and flags:
            missing("io_uring", f"kernel refuses setup flags {flags:#x} (before 6.1)")
        raise


@pytest.mark.parametrize("flags", [0, DEFER], ids=["flags-0", "single-issuer-defer-taskrun"])
@pytest.mark.parametrize("depth", [1, 32])
def test_write_then_read_back_random_offsets(tmp_path, depth, flags):
    nblocks = 64
    rnd = random.Random(depth)
    data = rnd.randbytes(nblocks * BS)
    path = tmp_path / "data"
    path.write_bytes(bytes(nblocks * BS))
    fd = os.open(path, os.O_RDWR)
    src, dst = mmap.mmap(-1, nblocks * BS), mmap.mmap(-1, nblocks * BS)
    try:
        with ring_or_skip(depth, flags) as ring:
            assert ring.sq_entries == depth
            order = rnd.sample(range(nblocks), nblocks)  # buffer block i -> file block order[i]
            for i, block in enumerate(order):
                src[i * BS : (i + 1) * BS] = data[block * BS : (block + 1) * BS]
            assert run_at_depth(ring, "write", fd, src, order, depth) == dict.fromkeys(range(nblocks), BS)
            assert path.read_bytes() == data

            order = rnd.sample(range(nblocks), nblocks)
            assert run_at_depth(ring, "read", fd, dst, order, depth) == dict.fromkeys(range(nblocks), BS)
            for i, block in enumerate(order):
                assert dst[i * BS : (i + 1) * BS] == data[block * BS : (block + 1) * BS]
    finally:
        os.close(fd)
        src.close()
        dst.close()


def test_o_direct_read_back(direct_dir):
    nblocks = 32
    data = random.Random(7).randbytes(nblocks * BS)
    path = os.path.join(direct_dir, "data")
    with open(path, "wb") as f:
        f.write(data)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, nblocks * BS)  # page-aligned, as O_DIRECT needs
    try:
        with Ring(8) as ring:
            order = random.Random(8).sample(range(nblocks), nblocks)
            assert run_at_depth(ring, "read", fd, buf, order, 8) == dict.fromkeys(range(nblocks), BS)
        for i, block in enumerate(order):
            assert buf[i * BS : (i + 1) * BS] == data[block * BS : (block + 1) * BS]
    finally:
        os.close(fd)
        buf.close()


def test_completions_carry_user_data(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abcdefgh")
    fd = os.open(path, os.O_RDONLY)
    buf = mmap.mmap(-1, BS)
    tags = [0, 1, 2**32, 2**63 + 5, 2**64 - 1]
    try:
        with Ring(8) as ring:
            base = buffer_address(buf)
            for i, tag in enumerate(tags):
                ring.prep("read", fd, base + i, 1, i, tag)
            assert ring.submit_and_wait(len(tags)) == len(tags)
            done = ring.completions()
            assert sorted(done) == sorted((tag, 1) for tag in tags)
            assert ring.completions() == []
        assert buf[: len(tags)] == b"abcde"
    finally:
        os.close(fd)
        buf.close()


def test_a_completely_full_cq_is_read_whole(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    buf = mmap.mmap(-1, BS)
    try:
        with Ring(2) as ring:
            base = buffer_address(buf)
            for rounds in range(3):  # the third round fills the CQ from a wrapped position
                for i in range(ring.cq_entries // 2):
                    ring.prep("read", fd, base + i, 1, i, 10 * rounds + i)
                ring.submit_and_wait(ring.cq_entries if rounds == 2 else ring.cq_entries // 2)
                if rounds == 0:
                    assert len(ring.completions()) == ring.cq_entries // 2
            done = ring.completions()  # cq_entries CQEs: head and tail on the same slot
            assert sorted(done) == sorted((10 * r + i, 1) for r in (1, 2) for i in range(ring.cq_entries // 2))
            assert ring.completions() == []
    finally:
        os.close(fd)
        buf.close()


def test_read_past_eof_is_short_then_zero(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10000)
    fd = os.open(path, os.O_RDONLY)
    buf = mmap.mmap(-1, 2 * BS)
    try:
        with Ring(2) as ring:
            base = buffer_address(buf)
            ring.prep("read", fd, base, BS, 8192, 1)  # 1808 bytes left
            ring.prep("read", fd, base + BS, BS, 20000, 2)  # wholly past the end
            assert dict(reap(ring, 2)) == {1: 10000 - 8192, 2: 0}
    finally:
        os.close(fd)
        buf.close()


def test_bad_fd_comes_back_as_ebadf():
    buf = mmap.mmap(-1, BS)
    try:
        with Ring(1) as ring:
            ring.prep("read", 1_000_000, buffer_address(buf), BS, 0, 9)
            [(user_data, res)] = reap(ring, 1)
        assert (user_data, res) == (9, -errno.EBADF)
        with pytest.raises(OSError) as caught:
            check(res, "read of fd 1000000")
        assert caught.value.errno == errno.EBADF
        assert "read of fd 1000000" in str(caught.value)
    finally:
        buf.close()


def test_misaligned_o_direct_buffer_is_einval(direct_dir):
    path = os.path.join(direct_dir, "data")
    with open(path, "wb") as f:
        f.write(bytes(2 * BS))
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 2 * BS)
    try:
        with Ring(1) as ring:
            ring.prep("read", fd, buffer_address(buf) + 1, BS, 0, 3)
            [(user_data, res)] = reap(ring, 1)
        assert (user_data, res) == (3, -errno.EINVAL)
        with pytest.raises(OSError) as caught:
            check(res, "O_DIRECT read")
        assert caught.value.errno == errno.EINVAL
    finally:
        os.close(fd)
        buf.close()


def test_check_passes_results_through():
    assert check(0, "x") == 0
    assert check(4096, "x") == 4096


def test_buffer_address_of_mmap_and_slices():
    mm = mmap.mmap(-1, 2 * BS)
    base = buffer_address(mm)
    assert base % mmap.PAGESIZE == 0
    view = memoryview(mm)
    assert buffer_address(view[BS:]) == base + BS
    assert buffer_address(view[5:9]) == base + 5
    with pytest.raises(ValueError):
        buffer_address(memoryview(b"read-only"))
    view.release()
    mm.close()  # no export is left behind by buffer_address


def test_prep_refuses_a_full_queue_and_unknown_ops():
    buf = mmap.mmap(-1, BS)
    with Ring(2) as ring:
        with pytest.raises(ValueError):
            ring.prep("fsync", 0, buffer_address(buf), 1, 0, 0)
        for i in range(2):
            ring.prep("read", 1_000_000, buffer_address(buf), 1, 0, i)
        with pytest.raises(RuntimeError, match="full"):
            ring.prep("read", 1_000_000, buffer_address(buf), 1, 0, 2)
        assert sorted(reap(ring, 2)) == [(0, -errno.EBADF), (1, -errno.EBADF)]
        ring.prep("read", 1_000_000, buffer_address(buf), 1, 0, 3)  # room again
    buf.close()


def test_wait_survives_signals():
    """EINTR in io_uring_enter is retried: the handler makes the pending pipe read complete."""
    r, w = os.pipe()
    buf = mmap.mmap(-1, BS)
    old = signal.signal(signal.SIGALRM, lambda *_: os.write(w, b"!"))
    try:
        with Ring(1) as ring:
            ring.prep("read", r, buffer_address(buf), 16, -1, 5)
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            ring.submit_and_wait(1)
            assert ring.completions() == [(5, 1)]
        assert buf[:1] == b"!"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        os.close(r)
        os.close(w)
        buf.close()


def test_ring_is_released_after_an_exception():
    before = ring_fds()
    with pytest.raises(KeyError), Ring(4) as ring:
        assert ring_fds() > before
        raise KeyError("boom")
    assert ring.fd == -1
    assert ring_fds() == before
    ring.close()  # idempotent


def test_close_cancels_io_still_in_flight():
    """A read that would never complete (empty pipe) does not keep close() waiting, nor the fd open."""
    before = ring_fds()
    r, w = os.pipe()
    buf = mmap.mmap(-1, BS)
    try:
        with Ring(4) as ring:
            ring.prep("read", r, buffer_address(buf), 16, -1, 1)
            ring.prep("read", r, buffer_address(buf), 16, -1, 2)
            ring.submit_and_wait(0)
        assert ring_fds() == before
    finally:
        os.close(r)
        os.close(w)
        buf.close()


def test_single_issuer_ring_refuses_other_threads():
    buf = mmap.mmap(-1, BS)
    with ring_or_skip(1, DEFER) as ring:
        ring.prep("read", 1_000_000, buffer_address(buf), 1, 0, 0)
        caught = []

        def other():
            try:
                ring.submit_and_wait(1)
            except OSError as e:
                caught.append(e)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert caught and caught[0].errno == errno.EEXIST
        assert reap(ring, 1) == [(0, -errno.EBADF)]  # still usable by its own thread
    buf.close()


def test_default_ring_works_from_any_thread(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"hello")
    fd = os.open(path, os.O_RDONLY)
    buf = mmap.mmap(-1, BS)
    with Ring(1) as ring:
        assert ring.flags == 0
        ring.prep("read", fd, buffer_address(buf), 5, 0, 1)
        thread = threading.Thread(target=ring.submit_and_wait, args=(1,))
        thread.start()
        thread.join()
        assert ring.completions() == [(1, 5)]
    os.close(fd)
    assert buf[:5] == b"hello"
    buf.close()


def test_why_unavailable_here_and_when_disabled(tmp_path):
    assert why_unavailable() is None  # this kernel: kernel.io_uring_disabled = 0
    sysctl = tmp_path / "io_uring_disabled"
    sysctl.write_text("2\n")
    reason = why_unavailable(str(sysctl))
    assert reason is not None and "2" in reason and "disabled" in reason and "\n" not in reason
    sysctl.write_text("0\n")
    assert why_unavailable(str(sysctl)) is None
    assert why_unavailable(str(tmp_path / "absent")) is None  # kernels before 6.6 have no such sysctl


def test_why_unavailable_follows_the_module_constant(tmp_path, monkeypatch):
    sysctl = tmp_path / "io_uring_disabled"
    sysctl.write_text("2\n")
    monkeypatch.setattr(uring, "IO_URING_DISABLED_PATH", str(sysctl))
    assert why_unavailable() is not None


def test_fast_ring_asks_for_fios_flags_and_falls_back_where_the_kernel_refuses(monkeypatch):
    with uring.fast_ring(4) as ring:
        assert ring.flags in uring.FAST_FLAGS
    refused = []

    class Old(Ring):  # a kernel before 6.1: the newest flags are refused with EINVAL
        __slots__ = ()

        def __init__(self, entries, flags=0):
            if flags & uring.IORING_SETUP_DEFER_TASKRUN:
                refused.append(flags)
                raise OSError(errno.EINVAL, "io_uring_setup: Invalid argument")
            super().__init__(entries, flags)

    monkeypatch.setattr(uring, "Ring", Old)
    with uring.fast_ring(4) as ring:
        assert refused == [uring.FAST_FLAGS[0]] and ring.flags == uring.FAST_FLAGS[1]
