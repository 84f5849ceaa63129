"""Records: one small JSON file per step and measurement, written atomically.

measurements.csv is only ever rebuilt from these files, so a crash while
aggregating loses nothing and a half-written record never exists.
"""

import json
import os
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path


def iso_utc(epoch: float) -> str:
    """A moment (epoch seconds) as records and measurements.csv keep it: ISO in UTC, to the microsecond."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="microseconds")


def write_json(path, data) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_json(path) -> dict:
    return json.loads(Path(path).read_text())


class Record:
    """A step's result as its record holds it (JSON: tuples become lists, and back)."""

    def as_record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict):
        return cls(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k in cls.__dataclass_fields__}
        )
