"""A block device of a test's own held at a rate (bytes/s, reads and writes each; 0: unlimited) that the test can
change while it runs: the tests' one throttle, whatever backs it.

- cgroup v1 blkio (where /sys/fs/cgroup/blkio is): a loop device over an image file, its rate the root group's
  blkio.throttle.{read,write}_bps_device for that device (the device is the test's own: nothing else meets it).
- otherwise FUSE (any kernel with /dev/fuse and libfuse3): a loop device over the one file of a small FUSE
  filesystem served by this module (`python slowdev.py STORE MOUNT RATEFILE`), which paces every read and write
  it is sent (direct_io: no page cache between the loop device and the pacing) and reads its rate from RATEFILE
  whenever that file changes.

A device that loses data (`faults`, FUSE only): the server drops the DROPPED bytes at one offset from every write
over them (the device says it wrote them; they keep what was there before) and flips the lowest bit of the byte at
another in every write over it, as a bad spot of a disk would (Faults).

(cgroup v2's io.max would need the test's processes in a cgroup of their own where the io controller is enabled;
this VM binds the io controller to v1, so that way could not be proven here and is not offered.)
"""

import errno
import json
import os
import stat
import subprocess
import sys
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path

BLKIO = Path("/sys/fs/cgroup/blkio")
LIMITS = [BLKIO / "blkio.throttle.write_bps_device", BLKIO / "blkio.throttle.read_bps_device"]
DISK = "disk"  # the FUSE filesystem's one file
DROPPED = 4096  # bytes a dropped write loses: one page


def fuse_unavailable() -> str | None:
    try:
        if os.stat("/dev/fuse").st_rdev != os.makedev(10, 229):  # the kernel's FUSE device (misc 229)
            return "/dev/fuse is not the FUSE device"
    except FileNotFoundError:
        return "no /dev/fuse"
    try:
        import mfusepy  # noqa: F401  (loads libfuse3)
    except (ImportError, OSError) as e:
        return f"no FUSE binding or libfuse (pip mfusepy, apt-get install fuse3): {e}"
    return None


def backend() -> str:
    """Which throttle backs a slow device here: FSBENCH_THROTTLE (blkio or fuse) if set, else blkio where its
    hierarchy is, else fuse."""
    chosen = os.environ.get("FSBENCH_THROTTLE", "")
    if chosen not in ("", "blkio", "fuse"):
        raise ValueError(f"FSBENCH_THROTTLE={chosen!r}: allowed blkio, fuse, or unset")
    return chosen or ("blkio" if all(p.exists() for p in LIMITS) else "fuse")


def unavailable() -> str | None:
    """Why no slow device can be made here, None when one can."""
    if backend() == "blkio":
        return None if all(p.exists() for p in LIMITS) else "no cgroup v1 blkio throttle (FSBENCH_THROTTLE=blkio)"
    if reason := fuse_unavailable():
        return f"neither the cgroup v1 blkio throttle ({BLKIO}) nor FUSE: {reason}"
    return None


def _majmin(dev: str) -> str:
    return Path(f"/sys/class/block/{Path(dev).name}/dev").read_text().strip()


def _attach(image: Path) -> str:
    return subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()


def _detach(dev: str) -> None:
    subprocess.run(["losetup", "-d", dev], capture_output=True)
    backing = Path(f"/sys/class/block/{Path(dev).name}/loop/backing_file")
    for _ in range(200):  # a detach while the device is still open happens when it is closed
        if not backing.exists():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{dev} is still attached to {backing.read_text().strip()}")


class SlowDevice:
    """`dev` (/dev/loopN) held at `rate`; set_rate changes it at once (the pacing's clock starts again)."""

    def __init__(self, dev: str, kind: str, backing: Path, rate_file: Path | None = None):
        self.dev, self.kind, self._backing, self._rate_file = dev, kind, backing, rate_file

    def resize(self, size: int) -> None:
        """The file under the device truncated (or extended, with zeros) to `size` bytes, and the device with it,
        as a disk that vanishes (0) or comes back."""
        os.truncate(self._backing, size)
        if self.kind == "fuse":
            os.stat(self._rate_file.parent / "mnt" / DISK)  # the kernel learns the new size from the server
        subprocess.run(["losetup", "--set-capacity", self.dev], check=True, capture_output=True)

    def set_rate(self, rate: int) -> None:
        if self.kind == "blkio":
            for limit in LIMITS:
                limit.write_text(f"{_majmin(self.dev)} {int(rate)}\n")  # 0 removes the limit
        else:
            tmp = self._rate_file.with_suffix(".tmp")
            tmp.write_text(f"{int(rate)}\n")
            tmp.replace(self._rate_file)  # the server sees a whole number or the old one


@contextmanager
def slow_device(folder: Path, size: int, rate: int, faults: dict | None = None):
    """A SlowDevice of `size` bytes at `rate`, its files under `folder` (made here); detached, unmounted and
    stopped afterwards, also when the body fails. `faults` ({"drop": offset, "flip": offset}, either): a FUSE
    device that loses and damages the writes there (Faults)."""
    folder.mkdir(parents=True)
    if backend() == "blkio" and not faults:
        image = folder / "image"
        with image.open("wb") as f:
            f.truncate(size)
        dev = _attach(image)
        device = SlowDevice(dev, "blkio", image)
        try:
            device.set_rate(rate)
            yield device
        finally:
            device.set_rate(0)
            _detach(dev)
        return
    store, mount, rate_file = folder / "store", folder / "mnt", folder / "rate"
    store.mkdir()
    mount.mkdir()
    with (store / DISK).open("wb") as f:
        f.truncate(size)
    rate_file.write_text(f"{int(rate)}\n")
    (folder / "faults.json").write_text(json.dumps(faults or {}))
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, __file__, str(store), str(mount), str(rate_file), str(folder / "faults.json")],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    dev = None
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mount):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the FUSE server did not mount {mount}: {(folder / 'server.log').read_text()}")
            time.sleep(0.02)
        dev = _attach(mount / DISK)
        yield SlowDevice(dev, "fuse", store / DISK, rate_file)
    finally:
        try:
            if dev:
                _detach(dev)
        finally:
            subprocess.run(["umount", str(mount)], capture_output=True)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
                subprocess.run(["umount", "-l", str(mount)], capture_output=True)
            log.close()


# The FUSE server ------------------------------------------------------------------------------------------------


SLACK = 0.02  # seconds: a request may catch up this much time that serving earlier ones lost (blkio has slices too)


class Pacer:
    """Reads and writes each at the rate RATEFILE says: a request of n bytes ends n/rate seconds after the one
    before it of its kind was due to end, or SLACK before now if that is later (so this server's own time per
    request does not lower the rate). A new rate starts the clock again."""

    def __init__(self, rate_file: Path):
        self.rate_file, self.lock = rate_file, threading.Lock()
        self.seen, self.rate, self.next = None, 0, dict.fromkeys(("read", "write"), time.monotonic())

    def _current(self) -> int:
        with suppress(FileNotFoundError):
            mtime = self.rate_file.stat().st_mtime_ns
            if mtime != self.seen:
                self.seen, self.rate = mtime, int(self.rate_file.read_text())
                self.next = dict.fromkeys(self.next, time.monotonic())
        return self.rate

    def wait(self, kind: str, n: int) -> None:
        with self.lock:
            rate, now = self._current(), time.monotonic()
            if not rate:
                return
            self.next[kind] = max(now - SLACK, self.next[kind]) + n / rate
            until = self.next[kind]
        time.sleep(max(0.0, until - time.monotonic()))


class Faults:
    """What a broken device does to a write of `data` at `offset`: the DROPPED bytes at `drop` keep what the store
    held (the write is acknowledged, not stored), the byte at `flip` is stored with its lowest bit flipped."""

    def __init__(self, drop: int | None = None, flip: int | None = None):
        self.drop, self.flip = drop, flip

    def apply(self, fd: int, data: bytes, offset: int) -> bytes:
        end = offset + len(data)
        if self.flip is not None and offset <= self.flip < end:
            data = bytearray(data)
            data[self.flip - offset] ^= 1
        if self.drop is not None and (lo := max(offset, self.drop)) < (hi := min(end, self.drop + DROPPED)):
            data = bytearray(data)
            data[lo - offset : hi - offset] = os.pread(fd, hi - lo, lo).ljust(hi - lo, b"\0")
        return data


def serve(store: Path, mount: Path, rate_file: Path, faults_file: Path | None = None) -> None:
    import mfusepy

    pacer, image = Pacer(rate_file), store / DISK
    faults = Faults(**json.loads(faults_file.read_text())) if faults_file else Faults()
    fd = os.open(image, os.O_RDWR)

    class SlowFS(mfusepy.Operations):
        use_ns = True

        def getattr(self, path, fh=None):
            if path == "/":
                return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
            if path != "/" + DISK:
                raise mfusepy.FuseOSError(errno.ENOENT)
            st = os.fstat(fd)
            return {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": st.st_size}

        def readdir(self, path, fh):
            return [".", "..", DISK]

        def open(self, path, flags):
            return 0

        def read(self, path, size, offset, fh):
            pacer.wait("read", size)
            return os.pread(fd, size, offset)

        def write(self, path, data, offset, fh):
            pacer.wait("write", len(data))
            os.pwrite(fd, faults.apply(fd, data, offset), offset)
            return len(data)

        def truncate(self, path, length, fh=None):
            raise mfusepy.FuseOSError(errno.EPERM)  # a disk keeps its size

        def fsync(self, path, datasync, fh):
            return 0  # the store is a plain file: what reached it is as durable as the test needs

        def flush(self, path, fh):
            return 0

    # attr_timeout=0: a size changed under the server (SlowDevice.resize) is seen at the next stat
    mfusepy.FUSE(SlowFS(), str(mount), foreground=True, direct_io=True, attr_timeout=0, fsname="fsbench-slowdev")


if __name__ == "__main__":
    serve(*map(Path, sys.argv[1:5]))
