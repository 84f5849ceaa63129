"""A start line for the parts of one measurement on several hosts: each part, once set up, tells the launcher it is
ready and waits; when every part is ready the launcher lets them all go at once. Not a fixed delay after launch: a
part slow to start (srun on a busy node, a cache drop that syncs long) holds the others back instead of starting
late, and the parts start within a network round trip of each other.

The launcher listens on a TCP port of its node; a part reaches it at the address srun gives its tasks
(SLURM_LAUNCH_NODE_IPADDR: the node srun ran on), or this host's loopback without Slurm. Where srun works, so
does this: srun's own tasks talk back to it the same way."""

import os
import select
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable

from fsbench.toolkit.system import ToolError

READY, GO = b"ready\n", b"go\n"


def run_parts(argv_of: Callable[[str], list[str]], parties: int, env: dict) -> subprocess.CompletedProcess:
    """Start the parts (`argv_of(port)`: the command, given the port they report to), let them go together once
    all `parties` are ready, and wait for them to end. A part that ends before the start line ends the wait."""
    with (
        socket.create_server(("", 0)) as line,
        tempfile.TemporaryFile("w+") as out,
        tempfile.TemporaryFile("w+") as err,
    ):
        argv = [str(a) for a in argv_of(str(line.getsockname()[1]))]
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env)
        except FileNotFoundError:
            raise ToolError(f"{argv[0]} is not installed (needed for: {' '.join(argv)})") from None
        ready = []
        try:
            while len(ready) < parties and proc.poll() is None:
                if select.select([line], [], [], 0.1)[0]:
                    conn, _ = line.accept()
                    if conn.recv(len(READY)) == READY:
                        ready.append(conn)
                    else:
                        conn.close()
            for conn in ready:  # all at once: nothing between one part's go and the next but a send
                conn.sendall(GO)
            proc.wait()
        finally:
            for conn in ready:
                conn.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, proc.returncode, out.read(), err.read())


def wait(port: str) -> float:
    """A part at the start line: report ready to the launcher, wait for every other part; returns when it went."""
    where = os.environ.get("SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1")
    with socket.create_connection((where, int(port)), timeout=60) as conn:
        conn.sendall(READY)
        conn.settimeout(None)  # as long as the slowest part takes to be ready
        said = conn.recv(len(GO))
    if said != GO:
        raise ToolError(f"the launcher at {where}:{port} ended before every part was ready")
    return time.time()
