"""What each engine can do, as data (fio keeps the same as flags on its ops table): the campaign is checked against
it before any device is touched, and each engine refuses a job it cannot run with the same words.

`method` is the version of how an engine measures. Bump it on purpose when a change to the engine changes what
its figures mean or how they come about: it enters the Snakemake params of exactly the cells that engine measures
(only above 1, so that campaigns measured at version 1 keep the params they had), and those are measured again.
Any other change to fsbench's code re-measures nothing (profiles: rerun-triggers without "code").
"""

from dataclasses import dataclass, field

# What a test may need of an engine.
RAND = "rand"  # blocks in a random order
MIXED = "mixed"  # reads and writes in one run (patterns randrw, rw)
DEPTH = "iodepth"  # more than one I/O in flight per stream
RUNTIME = "runtime"  # stop at a time (io.runtime)
RUNTIME_RAND_WRITE = "runtime rand write"  # a random write stopped by the time, then read back exactly
SHARED = "shared_file"  # several streams interleaving blocks in one file
SHARED_RAND = "shared_file rand"  # ... in a random order
LATENCY = "latency"  # a time per operation
TIMESERIES = "timeseries"  # what completed when (bytes and operations per interval)


@dataclass(frozen=True)
class Engine:
    """An engine's limits: what it cannot do, and why not (in words a user reads in an error message)."""

    cannot: dict[str, str] = field(default_factory=dict)
    method: int = 1


ENGINES = {
    "python": Engine(),
    "fio": Engine(
        {
            RUNTIME_RAND_WRITE: "fio's random writes cut short by the time leave blocks only fio knows, "
            "so no read could cover exactly them",
            SHARED_RAND: "fio interleaves blocks in a shared file only sequentially",
        }
    ),
    "dd": Engine(
        {
            RAND: "dd cannot seek at random",
            MIXED: "dd cannot mix reads and writes",
            DEPTH: "dd has one request in flight",
            RUNTIME: "dd stops only at its count",
            RUNTIME_RAND_WRITE: "dd stops only at its count",
            SHARED: "dd writes one run of blocks, it cannot interleave",
            SHARED_RAND: "dd writes one run of blocks, it cannot interleave",
            LATENCY: "dd reports no per-call times",
            TIMESERIES: "dd reports nothing until it ends",
        }
    ),
}
# The metadata test (many small files) is a workload of its own, whatever io.engine is.
METADATA_METHOD = 1


def why_not(engine: str, need: str) -> str | None:
    """Why `engine` cannot do `need`; None when it can."""
    return ENGINES[engine].cannot.get(need)


def able(need: str) -> str:
    """The engines that can: 'python or fio'."""
    return " or ".join(name for name, e in ENGINES.items() if need not in e.cannot)


def needs(pattern: str, iodepth: int = 1, runtime=None, shared: bool = False, op: str = "write") -> list[str]:
    """What a test needs of an engine (op write: a time-based random write must be read back exactly)."""
    found = [RAND] if "rand" in pattern else []
    found += [MIXED] if pattern in ("randrw", "rw") else []
    found += [DEPTH] if iodepth > 1 else []
    found += [RUNTIME] if runtime else []
    found += [RUNTIME_RAND_WRITE] if runtime and pattern == "rand" and op == "write" else []
    found += [SHARED] if shared else []
    found += [SHARED_RAND] if shared and pattern != "seq" else []
    return found


def refuse(engine: str, wanted: list[str]) -> None:
    """ValueError naming the first of `wanted` that `engine` cannot do, and which engines can."""
    for need in wanted:
        if why := why_not(engine, need):
            raise ValueError(f"{engine} engine: {why}; use engine {able(need)}")


def method_params(engine: str) -> dict:
    """The method version as a Snakemake param: {} at version 1, so that a campaign's params stay as they were."""
    version = METADATA_METHOD if engine == "metadata" else ENGINES[engine].method
    return {"method": version} if version > 1 else {}
