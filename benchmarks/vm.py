"""What the benchmarks hold still on this VM while they measure."""

import contextlib
from pathlib import Path

from fsbench.measurement import provenance  # (the caller put scripts/ on sys.path)

PAGE_REPORTING = Path(provenance.PAGE_REPORTING)


@contextlib.contextmanager
def memory_kept():
    """While it lasts, this VM hands no freed memory back to its host (free page reporting, where the kernel has it:
    only free blocks of at least 2^page_reporting_order pages are reported; 11 is above the largest). A page the
    host took back is made anew at its next use: measured, buffered 1 GiB reads after a cache drop, 10 in a row,
    ran at 1.6-7.8 GB/s with 0.6 GiB reported at some drops, and at 7.5-9.4 GB/s (one 3.4) with nothing reported.
    Yields what was done, for the doc."""
    if not PAGE_REPORTING.exists():
        yield "this kernel has no free page reporting"
        return
    before = PAGE_REPORTING.read_text().strip()
    if before == "11":  # held already (another run's, which puts it back): not ours to put back
        yield "free page reporting held while measuring (page_reporting_order 11 already)"
        return
    PAGE_REPORTING.write_text("11")
    try:
        yield f"free page reporting held while measuring (page_reporting_order {before} -> 11, put back after)"
    finally:
        PAGE_REPORTING.write_text(before)
