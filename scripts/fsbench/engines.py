"""The engines by name, each a module behind one small interface: write(job) and read(job), one result shape."""

from typing import Protocol

from . import ddengine, engine, fioengine
from .engine import Job


class Engine(Protocol):
    """What an engine module offers (fio's ioengine ops are the model): move a Job's bytes, timed, and return
    engine.aggregate()'s shape: bytes, seconds, seconds_durable, started_at, ops, latency columns, command, streams."""

    def write(self, job: Job) -> dict: ...

    def read(self, job: Job) -> dict: ...


ENGINES: dict[str, Engine] = {"python": engine, "dd": ddengine, "fio": fioengine}


def run_engine(name: str, op: str, job: Job) -> dict:
    """`op` (write or read) of `job` with engine `name` (config io.engine: its schema lists the same names)."""
    chosen = ENGINES[name]
    return {"write": chosen.write, "read": chosen.read}[op](job)
