"""The engines by name, each a module behind one small interface: write(job) and read(job), one result shape."""

from typing import Protocol

from fsbench.engines import dd, fio, mixed, python
from fsbench.engines.job import Job


class Engine(Protocol):
    """What an engine module offers (fio's ioengine ops are the model): move a Job's bytes, timed, and return
    job.aggregate()'s shape: bytes, seconds, seconds_durable, started_at, ops, latency columns, command, streams."""

    def write(self, job: Job) -> dict: ...

    def read(self, job: Job) -> dict: ...


ENGINES: dict[str, Engine] = {"python": python, "dd": dd, "fio": fio}


def run_engine(name: str, op: str, job: Job) -> dict:
    """`op` (write or read) of `job` with engine `name` (config io.engine: its schema lists the same names)."""
    chosen = ENGINES[name]
    return {"write": chosen.write, "read": chosen.read}[op](job)


def run_mixed(name: str, job: Job, rwmix_read: int) -> dict:
    """A mix of reads and writes (patterns randrw, rw): {"read": figure, "write": figure}; python and fio only."""
    if name == "python":
        return mixed.run(job, rwmix_read)
    if name == "fio":
        return fio.mixed(job, rwmix_read)
    raise ValueError(f"engine {name}: mixed reads and writes need io.engine python or fio")
