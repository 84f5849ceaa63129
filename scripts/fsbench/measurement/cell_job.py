"""The cell as an engine job: which files (or device regions) each stream moves, with what pattern, size,
depth and time bound."""

import hashlib
import secrets
from dataclasses import replace
from pathlib import Path

from fsbench.campaign.cells import MIXED, CellSpec
from fsbench.engines import verify
from fsbench.engines.job import Job, Stream
from fsbench.storage.arrays import Target


def job_for(target: Target, cell: CellSpec, workdir, op: str, written: list[int] = ()) -> Job:
    """The cell as an engine job: the bare device split into one region per stream, or one file per stream;
    with shared_file, one file (or the device from its start) that every stream moves its own blocks of.
    Time-based (runtime): the write (or a mixed cell's mix) runs for it, and the read covers `written`, the
    bytes each stream's write moved."""
    size, n, shared = cell.size, cell.streams, bool(cell.shared_file)
    # An all-hosts cell's file is shared by every host's streams: this host's take the slots from slot_base.
    base = cell.slot_base or 0
    if cell.target == "raw":
        dev = target.array.devices[0]
        streams = tuple(Stream(dev, 0, True, i) if shared else Stream(dev, i * size, True) for i in range(n))
    else:
        where = Path(target.array.path) if cell.target == "path" else Path(workdir) / "mnt"
        name = f"fsbench-{cell.test}-rep{cell.rep}"
        shared_path = str(where / f"{name}-shared.dat")
        streams = tuple(
            Stream(shared_path, 0, False, base + i) if shared else Stream(str(where / f"{name}-{i}.dat"))
            for i in range(n)
        )
    direct = cell.direct or (op == "read" and cell.cache == "direct")
    seed = int(hashlib.sha256(f"{cell.test}/{cell.rep}".encode()).hexdigest()[:8], 16)
    # A mixed cell's write lays its files down in order; its read step runs the mix, at random for randrw.
    pattern = cell.pattern
    mixed = pattern in MIXED
    if mixed:
        pattern = "seq" if op == "write" or pattern == "rw" else "rand"
    # Which runs are time-based, decided here alone (what the time then ends: Job.ends): a time-based cell's measured
    # write, or its mix (the read step's); never a mix's layout nor a read, which covers what the write moved.
    timed = (cell.runtime or 0.0) if (op == "write") != mixed else 0.0
    counts = tuple(b // cell.block_size for b in written) if cell.runtime and not mixed else ()
    return Job(
        streams=streams,
        size=size,
        block_size=cell.block_size,
        pattern=pattern,
        direct=direct,
        data=cell.data,
        buffer=cell.buffer or "page",
        seed=seed,
        iodepth=cell.iodepth or 1,
        slots=(cell.slots or n) if shared else 1,
        runtime=timed,
        counts=counts,
    )


def verified(job: Job, cell: CellSpec, written: dict | None = None) -> tuple[Job, dict]:
    """io.verify: `job` with the signatures and mark its blocks carry, and them as a write record keeps them
    ({"mark", "signatures"}): a write's drawn anew (a nonce), a read's those of the record it reads (`written`)."""
    if not cell.verify:
        return job, {}
    if written is None:
        n = len(job.streams)
        written = {
            "mark": verify.mark(cell.campaign, cell.test),
            "signatures": verify.signatures(job.seed, secrets.randbits(62), n),
        }
    return replace(job, verify=tuple(written["signatures"]), mark=written["mark"]), {"verify": written}
