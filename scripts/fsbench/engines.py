"""The engines by name: each module has write(job) and read(job) returning the same kind of result."""

from . import ddengine, engine, fioengine

ENGINES = {"python": engine, "dd": ddengine, "fio": fioengine}


def run_engine(name: str, op: str, job: engine.Job) -> dict:
    return getattr(ENGINES[name], op)(job)
