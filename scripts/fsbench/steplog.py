"""How a step script reports: details into its Snakemake log, one clear line on failure."""

import json
import logging
import sys
import traceback

from .config import ConfigError
from .devices import DeviceError
from .system import ToolError

# Failures whose message says it all; anything else is a bug and keeps its traceback.
EXPECTED = (ConfigError, DeviceError, ToolError, OSError, ValueError)


def run_step(log_path: str, step, *args, **kwargs):
    """Run `step`, logging to `log_path`; on failure print `fsbench: <why>` and exit non-zero."""
    logging.basicConfig(filename=log_path, level=logging.INFO, format="%(asctime)s %(message)s", force=True)
    log = logging.getLogger("fsbench")
    try:
        result = step(*args, **kwargs)
    except EXPECTED as e:
        log.error("failed: %s", e)
        print(f"fsbench: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception:
        log.error("failed:\n%s", traceback.format_exc())
        raise
    log.info("done: %s", json.dumps(result, default=str)[:4000])
    return result
