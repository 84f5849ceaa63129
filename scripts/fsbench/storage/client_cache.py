"""A filesystem client's own data cache, which no kernel cache drop empties and mincore cannot see: ceph-fuse's
object cache (`client_oc`, on by default, `client_oc_size` 200 MiB). A read through such a client on the host
that wrote the data is not proven cold unless the client says its cache is off; a read of another host's data is
(that host's client wrote it, this one never held it).

What a read's record says of it is asked of the client itself, through its admin socket (the socket Ceph's
`ceph daemon <socket> config get client_oc` talks to): the ceph-fuse process serving the mount in this mount
namespace, and the listening socket among its open files."""

import json
import os
import socket
import struct
from pathlib import Path

from fsbench.toolkit.system import Failure, output

CEPH_FUSE = "fuse.ceph-fuse"  # what findmnt (and a path array's fs_type) calls a ceph-fuse mount


def state(fs_type: str | None, path: str) -> dict | None:
    """What the client of `path`'s filesystem keeps of data ({client, client_oc: True | False | None, …}, None
    with `why` when it could not be asked); None for a filesystem whose client has no cache of its own."""
    if fs_type != CEPH_FUSE:
        return None
    try:
        pid = ceph_fuse_pid(output(["findmnt", "-n", "-o", "TARGET", "-T", path]).strip())
        asok = admin_socket(pid)
        said = ask(asok, {"prefix": "config get", "var": "client_oc"})
    except (OSError, LookupError, ValueError, Failure) as e:
        return {"client": "ceph-fuse", "client_oc": None, "why": str(e)}
    return {"client": "ceph-fuse", "pid": pid, "admin_socket": asok, "client_oc": said["client_oc"] == "true"}


def unproven_cold(client: dict | None, own_data: bool) -> bool:
    """Whether a read after a cache drop may still be answered from the client's own cache: it reads data this
    host wrote (`own_data`) through a client whose cache is on, or whose state could not be asked."""
    return bool(client) and own_data and client["client_oc"] is not False


def _same_namespaces(pid: int) -> bool:
    """Whether process `pid` sees the mounts and sockets this one does (a test node's client runs in namespaces of
    its own). A process this user may not inspect is taken as a candidate: its cmdline said the mount point."""
    try:
        return all(os.readlink(f"/proc/{pid}/ns/{ns}") == os.readlink(f"/proc/self/ns/{ns}") for ns in ("mnt", "net"))
    except PermissionError:
        return True
    except FileNotFoundError:  # it ended meanwhile
        return False


def ceph_fuse_pid(mountpoint: str) -> int:
    """The ceph-fuse process whose command line names `mountpoint`, in this mount and network namespace."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() != "ceph-fuse":
                continue
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if any(a and os.path.realpath(a.decode(errors="replace")) == mountpoint for a in argv[1:]):
            if _same_namespaces(int(proc.name)):
                found.append(int(proc.name))
    if len(found) != 1:
        raise LookupError(f"{len(found)} ceph-fuse processes of this mount namespace name {mountpoint} (one expected)")
    return found[0]


def admin_socket(pid: int) -> str:
    """The admin socket (a listening Unix socket, `….asok`) among process `pid`'s open files."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():  # PermissionError: another user's client
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    for line in Path("/proc/self/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].endswith(".asok"):
            return fields[7]
    raise LookupError(f"ceph-fuse (pid {pid}) has no admin socket open (its `admin socket` setting is empty?)")


def ask(asok: str, command: dict, timeout: float = 10.0) -> dict:
    """One admin socket command, as `ceph daemon` sends it: the JSON and a NUL; the answer is its length (4 bytes,
    big-endian) and the JSON."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(asok)
        s.sendall(json.dumps(command).encode() + b"\0")
        (length,) = struct.unpack(">I", _exactly(s, 4))
        return json.loads(_exactly(s, length))


def _exactly(s: socket.socket, n: int) -> bytes:
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise ValueError(f"the admin socket closed after {len(got)} of {n} bytes")
        got += chunk
    return got
