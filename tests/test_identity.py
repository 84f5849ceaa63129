"""The read's identity check (fsbench.measurement.identity): the data read is what its write made, also in a
file whose other slots another host writes after this host's write ended (an all-hosts shared-file cell)."""

import os
from pathlib import Path

import pytest

from fsbench.engines.job import Job, Stream
from fsbench.measurement.identity import check_identity, identify
from fsbench.storage.devices import DeviceError

BS = 64 * 1024


def write_blocks(path, blocks):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for k in blocks:
            os.pwrite(fd, os.urandom(BS), k * BS)
        os.fsync(fd)
    finally:
        os.close(fd)


def test_another_hosts_later_writes_to_a_shared_file_do_not_fail_this_hosts_read(tmp_path):
    """Two hosts share a file (slot 0 of 2 moves blocks 0 and 2, slot 1 blocks 1 and 3), each host's identity
    taken when its own write ends: the other host may write the file's first block, or make the file longer,
    after that. Neither is a reason to refuse the read; this host's own data overwritten is."""
    first, second = (Stream(str(tmp_path / "a.dat"), 0, False, slot) for slot in (0, 1))
    write_blocks(first.path, [1, 3])  # slot 1's host is done before slot 0's has written the file's first block
    ident = identify(Job((second,), 2 * BS, BS, slots=2))[0]
    write_blocks(first.path, [0, 2])
    check_identity(second, ident)
    assert ident["size"] is None and (ident["head_offset"], ident["head_bytes"]) == (BS, 4096)

    grown = Stream(str(tmp_path / "b.dat"), 0, False, 0)
    write_blocks(grown.path, [0, 2])  # slot 0's host is done first: the file is 3 blocks long, then 4
    ident_grown = identify(Job((grown,), 2 * BS, BS, slots=2))[0]
    write_blocks(grown.path, [1, 3])
    check_identity(grown, ident_grown)

    write_blocks(first.path, [1])  # slot 1's own first block overwritten: not its write's data any more
    with pytest.raises(DeviceError, match="its first bytes are not the ones written"):
        check_identity(second, ident)


def test_a_file_of_its_own_is_checked_by_inode_size_and_first_bytes(tmp_path):
    path = str(tmp_path / "own.dat")
    write_blocks(path, [0, 1])
    stream = Stream(path)
    ident = identify(Job((stream,), 2 * BS, BS))[0]
    assert (ident["size"], ident["head_offset"], ident["head_bytes"]) == (2 * BS, 0, 4096)
    check_identity(stream, ident)
    write_blocks(path, [2])
    with pytest.raises(DeviceError, match="its inode or size changed"):
        check_identity(stream, ident)
    os.unlink(path)
    with pytest.raises(DeviceError, match="it is gone"):
        check_identity(stream, ident)


def test_a_record_made_before_the_head_moved_to_the_streams_block_is_still_read(tmp_path):
    """A finished write's record (no head_offset: the hash of the data's first 4 KiB) still lets its read run."""
    path = str(tmp_path / "old.dat")
    write_blocks(path, [0])
    stream = Stream(path)
    ident = identify(Job((stream,), BS, BS))[0]
    old = {k: v for k, v in ident.items() if k not in ("head_offset", "head_bytes")}
    check_identity(stream, old)


def test_a_host_is_ready_at_its_start_line_only_once_its_setup_is_done(scratch, tmp_path):
    """An all-hosts part waits at its start line (measure_write's and measure_read's `ready`) after what it does
    before its timed region, so that no host's setup (a sync of the whole machine, a cache drop) delays its start
    after the others': at the write's, the cell's old file is gone; at the read's, the data is out of the page
    cache and nothing of it has been read yet."""
    from fsbench.campaign.cells import CellSpec
    from fsbench.campaign.config import validate
    from fsbench.campaign.plan import Plan
    from fsbench.measurement.measure import measure_read, measure_write
    from fsbench.storage import arrays, cache

    data = scratch / "data"
    data.mkdir()
    config = validate(
        {
            "campaign": "ready",
            "scratch": str(scratch / "s"),
            "arrays": {"p": {"kind": "path", "path": str(data)}},
            "io": {"size": "4MiB", "block_sizes": ["1MiB"], "repeats": 1, "direct": [False], "cache": "fadvise"},
        }
    )
    plan = Plan(config)
    cell = CellSpec.from_params(plan.cell_spec("local", "p", "path", plan.tests[0], 1))
    workdir = tmp_path / "work"
    workdir.mkdir()
    state = arrays.data_folder(arrays.attach(config["arrays"]["p"], workdir, "p"), workdir, None, "arrays.p")
    target = arrays.Target(state)
    seen = {}

    def at_write_start():
        seen["files then"] = sorted(p.name for p in Path(state.path).iterdir())

    written = measure_write(target, cell, workdir, ready=at_write_start)
    path = written["identity"][0]["path"]
    assert seen["files then"] == [] and os.path.getsize(path) == 4 * 2**20

    def at_read_start():
        seen["cached then"] = cache.resident_fraction(path, 4 * 2**20, 0)

    assert cache.resident_fraction(path, 4 * 2**20, 0) > 0  # a buffered write leaves its pages in the cache
    read = measure_read(written, cell, workdir, ready=at_read_start)
    assert seen["cached then"] == 0 and read["row"]["bytes"] == 4 * 2**20
