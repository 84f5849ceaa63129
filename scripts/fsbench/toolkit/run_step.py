"""How a step script reports: a few lines into its Snakemake log, one clear line on failure."""

import logging
import sys
import time
import traceback
from datetime import UTC, datetime

from fsbench.toolkit.system import Failure

# Failures whose message says it all (a ConfigError is a ValueError, a DeviceError and a ToolError are Failures);
# anything else is a bug and keeps its traceback.
EXPECTED = (Failure, OSError, ValueError)


def run_step(log_path: str, step, *args, what: str = "", **kwargs):
    """Run `step`, logging to `log_path`; on failure print `fsbench: <what>: <why>` and exit non-zero.

    `what` names the step and its cell ("mkfs of demo/ext4/seq-1MiB-buffered-1s rep 1"); the step itself
    logs what it ran and found, and its record (not the log) holds the details.
    """
    logging.basicConfig(filename=log_path, level=logging.INFO, format="%(asctime)s %(message)s", force=True)
    log = logging.getLogger("fsbench")
    what = what or getattr(step, "__name__", "step")
    log.info("%s", what)
    t0 = time.perf_counter()
    try:
        result = step(*args, **kwargs)
    except EXPECTED as e:
        log.error("failed: %s", e)
        print(f"fsbench: {what}: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception:
        log.error("failed:\n%s", traceback.format_exc())
        raise
    log.info("done in %.1f s", time.perf_counter() - t0)
    return result


def run_device_step(log_path: str, step, *args, **kwargs) -> dict:
    """run_step for a step on a device (prepare_array, precondition, mkfs, mount, write, read, metadata): its
    record gets the step's own span, step_started_at and step_ended_at (UTC), set-up included, so that whether
    two device steps overlapped can be read from their records."""
    started = datetime.now(UTC).isoformat(timespec="microseconds")
    record = run_step(log_path, step, *args, **kwargs)
    return record | {"step_started_at": started, "step_ended_at": datetime.now(UTC).isoformat(timespec="microseconds")}
