"""Running external tools: argument lists only, never a shell, and errors that carry the tool's own words; and
binding a worker process to a CPU; leaving through the finally blocks on SIGTERM."""

import contextlib
import os
import signal
import subprocess
import sys


class Failure(RuntimeError):
    """A failure whose message says it all: a step prints it in one line, without a traceback (run_step)."""


class ToolError(Failure):
    """An external tool failed; the message names the command and what it printed."""


def run(
    argv: list[str], check: bool = True, timeout: float | None = 600, env: dict | None = None
) -> subprocess.CompletedProcess:
    argv = [str(a) for a in argv]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise ToolError(f"{argv[0]} is not installed (needed for: {' '.join(argv)}); run `make setup`") from None
    if check and proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
        raise ToolError(f"{' '.join(argv)} failed (exit {proc.returncode}): " + " | ".join(said[-5:]))
    return proc


def output(argv: list[str]) -> str:
    return run(argv).stdout.strip()


def version(argv: list[str]) -> str:
    """First line a tool prints about its version, or why there is none."""
    try:
        proc = run(argv, check=False, timeout=30)
    except ToolError as e:
        return str(e)
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else ""


def kernel_setting(path: str) -> str:
    """A kernel setting as read ("madvise" of "always [madvise] never", where it is a choice), "" where there is
    none."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return ""
    chosen = [word[1:-1] for word in text.split() if word.startswith("[") and word.endswith("]")]
    return chosen[0] if chosen else text


def pin_to_cpu(index: int, count: int) -> int | None:
    """Bind this process to one CPU of those it may run on: worker `index` of `count` on this host gets the
    index-th, as mpirun binds its ranks to cores (Open MPI's default for 2 ranks). Unbound, two workers of a
    cold stat phase wandered between the cores at each wait for a read, and ran it at ~0.55 of mdtest's rate
    (bound: ~1.0; docs/bench-peers.md). None, and nothing bound, where the workers outnumber the CPUs (as
    mpirun does not bind when oversubscribed)."""
    cpus = sorted(os.sched_getaffinity(0))
    if count > len(cpus):
        return None
    os.sched_setaffinity(0, {cpus[index]})
    return cpus[index]


@contextlib.contextmanager
def on_cpu(index: int, count: int):
    """pin_to_cpu for the calling thread while the block runs (yields the CPU, or None), then its CPUs as before:
    a long-lived process (bench-engines) must not hand one CPU on to what it runs next."""
    before = os.sched_getaffinity(0)
    cpu = pin_to_cpu(index, count)
    try:
        yield cpu
    finally:
        if cpu is not None:
            os.sched_setaffinity(0, before)


def exit_on_sigterm() -> None:
    """SIGTERM (a `kill`, a Slurm cancel) leaves the way Ctrl-C does, through every finally block, so a long process
    releases what it set up (loop devices, mounts, servers); by default it would die on the spot and leave them."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
