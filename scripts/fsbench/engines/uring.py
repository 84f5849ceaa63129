"""A minimal ctypes binding to Linux io_uring for reads and writes at a fixed queue depth.

No liburing: this talks to the kernel interface itself (include/uapi/linux/io_uring.h), which is small:

- ``io_uring_setup(entries, params)`` (syscall 425) returns a ring fd and fills ``io_uring_params`` with the
  byte offsets of the fields inside the two shared rings;
- the SQ ring and the CQ ring are mmap'ed from that fd (one mapping when the kernel has
  IORING_FEAT_SINGLE_MMAP, 5.4+), the array of 64-byte SQEs is a second mapping;
- the application writes SQEs and publishes the SQ tail, the kernel posts 16-byte CQEs and publishes the
  CQ tail, the application reads them and publishes the CQ head;
- ``io_uring_enter(fd, to_submit, min_complete, flags)`` (syscall 426) makes the kernel consume the new SQEs
  and, with IORING_ENTER_GETEVENTS, sleeps until ``min_complete`` CQEs are waiting.

Typical use, keeping ``depth`` reads in flight::

    with Ring(depth) as ring:
        for i in range(depth):
            ring.prep("read", fd, addr + i * bs, bs, offset_of(i), i)
        while running:
            ring.submit_and_wait(1)
            for slot, res in ring.completions():
                check(res, "read")
                ring.prep("read", fd, addr + slot * bs, bs, next_offset(), slot)

Memory ordering: SQEs are written before the SQ tail that publishes them, and CQEs are read before the CQ
head that releases them; on x86-64 (TSO) plain stores and loads in that program order are all it takes.
The SQ index array is filled once with the identity (slot i -> SQE i), as liburing does. Only one thread may
use a Ring at a time.

The python engine sets its ring up here and runs it from C (loops.c, through Ring.layout, then Ring.resync());
prep(), submit_and_wait() and completions() are the same protocol in Python, used to drain a ring on close()
and by the tests that pin the kernel interface down.
"""

import ctypes
import errno
import mmap
import os
import struct
import sys

__all__ = ["IO_URING_DISABLED_PATH", "Ring", "buffer_address", "check", "fast_ring", "why_unavailable"]

# Syscall numbers: io_uring came after the syscall-table unification, so 425/426 hold on every
# architecture that uses the generic table (x86-64, arm64, riscv, ...); alpha and mips number differently.
SYS_IO_URING_SETUP = 425
SYS_IO_URING_ENTER = 426

IO_URING_DISABLED_PATH = "/proc/sys/kernel/io_uring_disabled"

IORING_OFF_SQ_RING = 0
IORING_OFF_SQES = 0x10000000
# Optional Ring(flags=...). fio asks for SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN (6.1+): completions are
# then posted by the submitting task when it enters the kernel to wait, instead of interrupting it. They bind the
# Ring to its creating thread (others get EEXIST), so Ring() defaults to 0; fast_ring() asks for them.
IORING_SETUP_COOP_TASKRUN = 1 << 8
IORING_SETUP_SINGLE_ISSUER = 1 << 12
IORING_SETUP_DEFER_TASKRUN = 1 << 13
# What fast_ring() asks for, best first: each older kernel refuses the newer flags with EINVAL.
FAST_FLAGS = (
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN,  # 6.1+
    IORING_SETUP_COOP_TASKRUN,  # 5.19+
    0,
)
IORING_FEAT_SINGLE_MMAP = 1 << 0
IORING_ENTER_GETEVENTS = 1 << 0
IORING_OP_ASYNC_CANCEL = 14
IORING_OP_READ = 22
IORING_OP_WRITE = 23
IORING_ASYNC_CANCEL_ANY = 1 << 2

OPCODES = {"read": IORING_OP_READ, "write": IORING_OP_WRITE}

SQE_SIZE = 64
CQE_SIZE = 16
_U32 = 0xFFFFFFFF


class _SQRingOffsets(ctypes.Structure):
    _fields_ = [
        ("head", ctypes.c_uint32),
        ("tail", ctypes.c_uint32),
        ("ring_mask", ctypes.c_uint32),
        ("ring_entries", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("dropped", ctypes.c_uint32),
        ("array", ctypes.c_uint32),
        ("resv1", ctypes.c_uint32),
        ("user_addr", ctypes.c_uint64),
    ]


class _CQRingOffsets(ctypes.Structure):
    _fields_ = [
        ("head", ctypes.c_uint32),
        ("tail", ctypes.c_uint32),
        ("ring_mask", ctypes.c_uint32),
        ("ring_entries", ctypes.c_uint32),
        ("overflow", ctypes.c_uint32),
        ("cqes", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("resv1", ctypes.c_uint32),
        ("user_addr", ctypes.c_uint64),
    ]


class _Params(ctypes.Structure):
    _fields_ = [
        ("sq_entries", ctypes.c_uint32),
        ("cq_entries", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("sq_thread_cpu", ctypes.c_uint32),
        ("sq_thread_idle", ctypes.c_uint32),
        ("features", ctypes.c_uint32),
        ("wq_fd", ctypes.c_uint32),
        ("resv", ctypes.c_uint32 * 3),
        ("sq_off", _SQRingOffsets),
        ("cq_off", _CQRingOffsets),
    ]


assert ctypes.sizeof(_SQRingOffsets) == 40
assert ctypes.sizeof(_CQRingOffsets) == 40
assert ctypes.sizeof(_Params) == 120
assert _Params.sq_off.offset == 40 and _Params.cq_off.offset == 80

# struct io_uring_sqe, first 40 bytes: opcode u8, flags u8, ioprio u16, fd s32, off u64, addr u64, len u32,
# rw_flags u32, user_data u64. flags, ioprio and rw_flags are written as pad bytes (zero), which halves the
# arguments struct must convert; the last 24 bytes (buf_index, personality, splice_fd_in, addr3, pad) are
# zeroed once at setup and never written again. `off` is signed so that -1 ("current position") packs.
_SQE = struct.Struct("<BxxxiqQI4xQ")
assert _SQE.size == 40
_pack_sqe = _SQE.pack_into
# The same 40 bytes with the op-specific flags word (here cancel_flags) written too.
_SQE_WITH_FLAGS = struct.Struct("<BxxxiqQIIQ")
# struct io_uring_cqe: user_data u64, res s32, flags u32 (skipped).
_CQE = struct.Struct("<Qi4x")
assert _CQE.size == CQE_SIZE

_libc = ctypes.CDLL(None, use_errno=True)
# No argtypes on purpose: ctypes then passes Python ints as C ints (libffi sign-extends them to the full
# register on x86-64) and None as a NULL pointer, which is all these calls need, and it is the cheapest call.
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_get_errno = ctypes.get_errno


def check(res: int, what: str) -> int:
    """Return `res` (a CQE result) when it is >= 0; raise OSError(-res) naming `what` when it is -errno."""
    if res < 0:
        raise OSError(-res, f"{what}: {os.strerror(-res)}")
    return res


def buffer_address(buf: mmap.mmap | memoryview) -> int:
    """The address of the first byte of a writable buffer: an mmap, or a memoryview (slice) of one.

    The caller keeps the buffer mapped and alive until every I/O that uses the address has completed;
    the address is only computed here, no reference is held (so the mmap can still be closed later).
    Page-align it (mmap gives that) for O_DIRECT.
    """
    view = memoryview(buf)
    try:
        if view.readonly:
            raise ValueError("buffer_address needs a writable buffer (the kernel may write into it)")
        if not view.c_contiguous:
            raise ValueError("buffer_address needs a contiguous buffer")
        if view.nbytes == 0:
            raise ValueError("buffer_address needs a non-empty buffer")
        anchor = ctypes.c_char.from_buffer(view)
        try:
            return ctypes.addressof(anchor)
        finally:
            del anchor
    finally:
        view.release()


def _setup(entries: int, params: _Params) -> int:
    fd = _syscall(SYS_IO_URING_SETUP, entries, ctypes.byref(params))
    if fd < 0:
        err = _get_errno()
        raise OSError(err, f"io_uring_setup({entries}): {os.strerror(err)}")
    return fd


def why_unavailable(sysctl_path: str | None = None) -> str | None:
    """None when a Ring can be created here; otherwise a one-line reason why not.

    Reads the kernel.io_uring_disabled sysctl at `sysctl_path` (default IO_URING_DISABLED_PATH; 2: off for
    everyone, 1: only CAP_SYS_ADMIN or kernel.io_uring_group), then creates and closes a 2-entry ring to
    catch what the sysctl does not say (ENOSYS: kernel without io_uring; EPERM: a seccomp filter, e.g. a
    container's default profile, or the sysctl at 1 for an unprivileged process).
    """
    if not sys.platform.startswith("linux"):
        return f"io_uring is Linux only (this is {sys.platform})"
    sysctl_path = sysctl_path or IO_URING_DISABLED_PATH
    disabled = None
    try:
        with open(sysctl_path) as f:
            disabled = f.read().strip()
    except FileNotFoundError:
        pass  # kernels before 6.6 have no such sysctl
    except OSError as e:
        return f"cannot read {sysctl_path}: {e.strerror}"
    if disabled == "2":
        return f"io_uring is disabled for all processes ({sysctl_path} = 2)"
    params = _Params()
    try:
        fd = _setup(2, params)
    except OSError as e:
        if e.errno == errno.ENOSYS:
            return "io_uring_setup fails with ENOSYS: this kernel has no io_uring (CONFIG_IO_URING=n)"
        if e.errno == errno.EPERM:
            if disabled == "1":
                return (
                    f"io_uring_setup fails with EPERM: {sysctl_path} = 1 and this process is neither "
                    "in kernel.io_uring_group nor CAP_SYS_ADMIN"
                )
            return "io_uring_setup fails with EPERM: blocked, e.g. by a seccomp filter (container profile)"
        return f"io_uring_setup fails with {errno.errorcode.get(e.errno, e.errno)}: {e.strerror}"
    os.close(fd)
    if not params.features & IORING_FEAT_SINGLE_MMAP:
        return "this kernel's io_uring lacks IORING_FEAT_SINGLE_MMAP (kernel older than 5.4)"
    return None


def fast_ring(entries: int) -> "Ring":
    """A Ring with the setup flags fio asks for where the kernel has them (FAST_FLAGS, best first).

    Measured here (docs/bench-engines.md) they take 4 KiB random reads at depth 32 from 0.58 to ~0.78 of fio:
    completions are run when the ring's task waits for them, not by interrupting it. The Ring then belongs to
    the calling thread (SINGLE_ISSUER). An older kernel refuses the flags it lacks with EINVAL: fall back.
    """
    for flags in FAST_FLAGS:
        try:
            return Ring(entries, flags)
        except OSError as e:
            if e.errno != errno.EINVAL or not flags:
                raise
    raise AssertionError("unreachable: FAST_FLAGS ends with 0")


class Ring:
    """One io_uring instance: queue reads/writes with prep(), then submit_and_wait(), then completions().

    `entries` is the SQ size (rounded up to a power of two by the kernel); the CQ gets twice that, so
    keeping at most `entries` I/Os in flight can never overflow it. `flags` are IORING_SETUP_* bits (0: a
    plain interrupt-driven ring). With IORING_SETUP_DEFER_TASKRUN new completions become visible only
    inside submit_and_wait() (call submit_and_wait(0) to poll); with IORING_SETUP_SINGLE_ISSUER only the
    creating thread may submit. Use it as a context manager or call close().
    """

    __slots__ = (
        "fd",
        "flags",
        "sq_entries",
        "cq_entries",
        "_ring",
        "_sqes",
        "_u32",
        "_cqes",
        "_sq_mask",
        "_cq_mask",
        "_i_sq_tail",
        "_i_cq_head",
        "_i_cq_tail",
        "_i_sq_array",
        "_i_sq_head",
        "layout",
        "_sq_head",
        "_sq_tail",
        "_cq_head",
    )

    def __init__(self, entries: int, flags: int = 0):
        self.fd = -1
        self.layout = {}
        self._ring = self._sqes = self._u32 = self._cqes = None
        params = _Params(flags=flags)
        self.fd = _setup(entries, params)
        self.flags = flags
        try:
            if not params.features & IORING_FEAT_SINGLE_MMAP:
                raise OSError(errno.ENOTSUP, "io_uring without IORING_FEAT_SINGLE_MMAP (kernel < 5.4)")
            sq, cq = params.sq_off, params.cq_off
            self.sq_entries, self.cq_entries = params.sq_entries, params.cq_entries
            size = max(sq.array + params.sq_entries * 4, cq.cqes + params.cq_entries * CQE_SIZE)
            prot, share = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_POPULATE
            self._ring = mmap.mmap(self.fd, size, flags=share, prot=prot, offset=IORING_OFF_SQ_RING)
            self._sqes = mmap.mmap(
                self.fd, params.sq_entries * SQE_SIZE, flags=share, prot=prot, offset=IORING_OFF_SQES
            )
            self._sqes[:] = bytes(len(self._sqes))  # the kernel zeroes it too; prep() relies on it
            u32 = self._u32 = memoryview(self._ring).cast("I")
            self._cqes = memoryview(self._ring)[cq.cqes : cq.cqes + params.cq_entries * CQE_SIZE]
            self._sq_mask, self._cq_mask = u32[sq.ring_mask // 4], u32[cq.ring_mask // 4]
            self._i_sq_tail, self._i_cq_head, self._i_cq_tail = sq.tail // 4, cq.head // 4, cq.tail // 4
            self._i_sq_array = sq.array // 4
            for i in range(params.sq_entries):
                u32[sq.array // 4 + i] = i
            self._sq_head = self._sq_tail = u32[sq.tail // 4]
            self._cq_head = u32[cq.head // 4]
            self._i_sq_head = sq.head // 4
            # Where each part is, for a loop that runs the ring from C (loops.c): then resync() after it.
            ring = buffer_address(self._ring)
            self.layout = {
                "ring_fd": self.fd,
                "sq_head": ring + sq.head,
                "sq_tail": ring + sq.tail,
                "sq_mask": ring + sq.ring_mask,
                "sq_array": ring + sq.array,
                "sqes": buffer_address(self._sqes),
                "cq_head": ring + cq.head,
                "cq_tail": ring + cq.tail,
                "cq_mask": ring + cq.ring_mask,
                "cqes": ring + cq.cqes,
            }
        except BaseException:
            self._release()
            raise

    def prep(self, op: str, fd: int, addr: int, length: int, offset: int, user_data: int) -> None:
        """Queue one "read" or "write" of `length` bytes at file `offset` to/from memory at `addr`.

        Nothing reaches the kernel until submit_and_wait(). `user_data` (0..2**64-1) comes back with the
        completion. Raises RuntimeError when the SQ already holds sq_entries unsubmitted SQEs.
        """
        tail = self._sq_tail
        if tail - self._sq_head >= self.sq_entries:
            raise RuntimeError(f"io_uring submission queue is full ({self.sq_entries} queued): submit first")
        try:
            opcode = OPCODES[op]
        except KeyError:
            raise ValueError(f"op must be 'read' or 'write', not {op!r}") from None
        _pack_sqe(self._sqes, (tail & self._sq_mask) << 6, opcode, fd, offset, addr, length, user_data)
        self._sq_tail = tail + 1  # published to the kernel by submit_and_wait()

    def resync(self) -> None:
        """Take up the ring's state after another user (the C loop, through `layout`) moved its heads and tails:
        what the kernel has consumed and posted, and what was published to it."""
        self._sq_head = self._u32[self._i_sq_head]
        self._sq_tail = self._u32[self._i_sq_tail]
        self._cq_head = self._u32[self._i_cq_head]

    def submit_and_wait(self, wait_nr: int = 0) -> int:
        """Submit every queued SQE and wait until at least `wait_nr` completions are available.

        Returns how many SQEs were submitted. Retries on EINTR (also when the kernel submitted but its
        wait was interrupted); other failures of io_uring_enter raise OSError. Per-I/O errors are not
        raised here: they come back as negative results from completions(). Waiting for more than are
        in flight or unread waits forever.
        """
        tail = self._sq_tail
        to_submit = tail - self._sq_head
        if to_submit:
            self._u32[self._i_sq_tail] = tail & _U32  # publish after the SQEs were written
        ret = _syscall(SYS_IO_URING_ENTER, self.fd, to_submit, wait_nr, IORING_ENTER_GETEVENTS, None, 0)
        # Fast path: all submitted and enough completions there (a call that submitted returns the count
        # even when a signal cut its wait short, hence the look at the CQ).
        if ret == to_submit and (not wait_nr or ((self._u32[self._i_cq_tail] - self._cq_head) & _U32) >= wait_nr):
            self._sq_head = tail
            return ret
        return self._submit_rest(ret, to_submit, wait_nr)

    def _submit_rest(self, ret: int, to_submit: int, wait_nr: int) -> int:
        """submit_and_wait() after an error, a partial submission or an interrupted wait."""
        submitted = 0
        while True:
            if ret < 0:
                err = _get_errno()
                if err != errno.EINTR:
                    if err == errno.EEXIST and self.flags & IORING_SETUP_SINGLE_ISSUER:
                        raise OSError(err, "io_uring_enter: this Ring belongs to the thread that created it")
                    raise OSError(err, f"io_uring_enter: {os.strerror(err)}")
            elif ret:
                submitted += ret
                to_submit -= ret
                self._sq_head += ret
            elif to_submit:
                raise RuntimeError(f"io_uring_enter consumed none of {to_submit} queued SQEs")
            if not to_submit and ((self._u32[self._i_cq_tail] - self._cq_head) & _U32) >= wait_nr:
                return submitted
            ret = _syscall(SYS_IO_URING_ENTER, self.fd, to_submit, wait_nr, IORING_ENTER_GETEVENTS, None, 0)

    def completions(self) -> list[tuple[int, int]]:
        """(user_data, res) of every available CQE, oldest first; frees their CQ slots.

        `res` is what the syscall would have returned: bytes transferred (short or 0 at EOF), or -errno.
        """
        head = self._cq_head
        tail = self._u32[self._i_cq_tail]
        if head == tail:
            return []
        mask = self._cq_mask
        start, end = head & mask, tail & mask
        cqes = self._cqes
        if start < end:
            done = list(_CQE.iter_unpack(cqes[start << 4 : end << 4]))
        else:  # wrapped (or exactly full)
            done = list(_CQE.iter_unpack(cqes[start << 4 :]))
            done += _CQE.iter_unpack(cqes[: end << 4])
        self._cq_head = tail
        self._u32[self._i_cq_head] = tail  # release the slots only after they were read
        return done

    def _drain(self) -> None:
        """Drop unsubmitted SQEs and unread CQEs, cancel what can be cancelled, wait for the rest.

        So that after close() the kernel no longer writes into (or reads from) the caller's buffers.
        """
        self._sq_tail = self._sq_head
        self._u32[self._i_sq_tail] = self._sq_tail & _U32
        self.completions()
        in_flight = (self._sq_head - self._cq_head) & _U32  # each submitted read/write posts exactly one CQE
        if not in_flight:
            return
        # One ASYNC_CANCEL for every request (file reads/writes usually can't be stopped, so they finish).
        index = self._sq_tail & self._sq_mask
        cancel = (IORING_OP_ASYNC_CANCEL, -1, 0, 0, 0, IORING_ASYNC_CANCEL_ANY, 0)
        _SQE_WITH_FLAGS.pack_into(self._sqes, index << 6, *cancel)
        self._u32[self._i_sq_array + index] = index  # the C loop may have pointed this entry at another SQE
        self._sq_tail += 1
        self.submit_and_wait(in_flight + 1)

    def close(self) -> None:
        """Wait for (or cancel) I/O still in flight, unmap the rings and close the ring fd. Idempotent.

        Unsubmitted SQEs and unread completions are discarded. The wait makes it safe to free the I/O
        buffers right after close(); if it fails (e.g. called from another thread with SINGLE_ISSUER),
        the ring is closed anyway and the kernel cancels what is left.
        """
        if self._u32 is not None:
            try:
                self._drain()
            except OSError:
                pass
        self._release()

    def _release(self) -> None:
        for view in (self._cqes, self._u32):
            if view is not None:
                view.release()
        self._cqes = self._u32 = None
        for mm in (self._sqes, self._ring):
            if mm is not None:
                mm.close()
        self._sqes = self._ring = None
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __enter__(self) -> "Ring":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "fd", -1) >= 0:
            self.close()
