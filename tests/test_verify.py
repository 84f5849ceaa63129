"""io.verify at the engine: a verified read finds what was written, and names what it found where it was not
(zeros, another offset's block, an older write's, flipped bits), on real files; a reader in another process
checks what the writer wrote (read_from: other across hosts, at the engine)."""

import json
import multiprocessing
import os
import re
from dataclasses import replace

import pandas as pd
import pytest

from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.engines import mixed, table, verify
from fsbench.engines import python as engine
from fsbench.engines.job import Job, Stream
from fsbench.engines.metadata import MetaJob, make_trees, run_phase

from conftest import needs_root, run_campaign, slow_device

MiB = 2**20
MARK = verify.mark("test", "seq-64KiB")


def verified(tmp_path, n=1, nonce=1, **kw) -> Job:
    streams = tuple(Stream(str(tmp_path / f"s{i}")) for i in range(n))
    job = Job(streams, 4 * MiB, kw.pop("bs", 64 * 2**10), seed=7, **kw)
    return replace(job, verify=verify.signatures(7, nonce, n), mark=MARK)


def damage(path, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


@pytest.mark.parametrize("depth", [1, 8])
def test_a_clean_read_finds_nothing_and_times_its_check_apart(tmp_path, depth):
    job = verified(tmp_path, 2, iodepth=depth)
    engine.write(job)
    r = engine.read(job)
    assert r["bad_blocks"] == 0 and r["first_bad_found"] == "" and r["verify_seconds"] > 0
    assert "checked" in r["command"]
    assert all(s["verify"]["bad_blocks"] == 0 for s in r["streams"])


@pytest.mark.parametrize("depth", [1, 8])
def test_each_kind_of_bad_block_is_found_at_its_offset_and_named(tmp_path, depth):
    job = verified(tmp_path, iodepth=depth)
    path, bs = job.streams[0].path, job.block_size
    engine.write(job)
    clean = open(path, "rb").read()
    cases = {  # where, what is written there, what the read must say
        "flip": (5 * bs + 1000, bytes([clean[5 * bs + 1000] ^ 0x10]), "1 bit(s) flipped"),
        "zero": (9 * bs, bytes(bs), "zeros"),
        "moved": (12 * bs, clean[3 * bs : 4 * bs], f"the block of offset {3 * bs}"),
        "garbage": (20 * bs, os.urandom(bs), "garbage"),
    }
    for where, data, said in cases.values():
        open(path, "r+b").write(clean)  # back to clean
        damage(path, where, data)
        r = engine.read(job)
        assert (r["bad_blocks"], r["first_bad_offset"], r["first_bad_found"]) == (1, where, said)
    # an older write of the same cell (another nonce): every block is found, as an older signature
    engine.write(replace(job, verify=verify.signatures(7, 2, 1)))
    r = engine.read(job)
    assert (r["bad_blocks"], r["first_bad_offset"], r["first_bad_found"]) == (64, 0, "an older signature")


def test_two_bad_blocks_the_lowest_is_told_and_both_counted(tmp_path):
    job = verified(tmp_path, pattern="rand")
    path, bs = job.streams[0].path, job.block_size
    engine.write(job)
    damage(path, 40 * bs + 7, b"\xff")
    damage(path, 2 * bs, bytes(bs))
    r = engine.read(job)
    assert (r["bad_blocks"], r["first_bad_offset"], r["first_bad_found"]) == (2, 2 * bs, "zeros")


def test_a_verified_write_is_still_incompressible_and_every_piece_carries_its_header(tmp_path):
    import zlib

    job = verified(tmp_path)
    engine.write(job)
    data = open(job.streams[0].path, "rb").read()
    assert len(zlib.compress(data[: 2**17])) > 0.99 * 2**17
    for piece in range(0, len(data), 4096):
        off, magic, mark, sig = verify.HEADER.unpack_from(data, piece)
        assert (off, magic, mark, sig) == (piece // job.block_size * job.block_size, verify.MAGIC, MARK, job.verify[0])


def _write_elsewhere(job: Job) -> None:
    engine.write(job)


def test_a_reader_in_another_process_checks_what_the_writer_wrote(tmp_path):
    """read_from: other across hosts, at the engine: the writer is another process (spawned: nothing of this one's
    memory); the reader has only the write's signatures, as a host has only the other's write record."""
    job = verified(tmp_path, 2)
    writer = multiprocessing.get_context("spawn").Process(target=_write_elsewhere, args=(job,))
    writer.start()
    writer.join()
    assert writer.exitcode == 0
    # host i reads what host i+1 wrote: the streams, and their signatures, taken the other way round
    other = replace(job, streams=job.streams[::-1], verify=job.verify[::-1])
    assert engine.read(other)["bad_blocks"] == 0
    # a reader given its own stream's signatures (reading the other's data as if its own) is told so
    crossed = replace(job, streams=job.streams[::-1])
    r = engine.read(crossed)
    assert r["bad_blocks"] == 128 and r["first_bad_found"] == "another stream's block"


@pytest.mark.parametrize("name", ["dd", "fio"])
def test_engines_that_cannot_check_are_refused_naming_the_one_that_can(tmp_path, name):
    with pytest.raises(ValueError, match=f"^{name} engine: .*; use engine python$"):
        table.run(name, "read", verified(tmp_path))


def campaign(**io) -> dict:
    return {
        "campaign": "v",
        "scratch": "/var/tmp/fsbench-verify-test",
        "arrays": {"a": {"kind": "loop", "size": "1GiB"}},
        "filesystems": {"ext4": {"type": "ext4"}},
        "io": {"size": "64MiB", "block_sizes": ["64KiB"], "repeats": 2} | io,
        "metadata": {"files": 100},
    }


def test_verify_is_a_cell_key_only_where_true_so_unverified_cells_keep_their_params():
    before = Plan(validate(campaign()))
    off = Plan(validate(campaign(verify=False)))
    on = Plan(validate(campaign(verify=True)))
    for test in (before.tests[0], next(t for t in before.tests if t.startswith("meta"))):
        spec = before.cell_spec("local", "a", "ext4", test, "1")
        assert "verify" not in spec and off.cell_spec("local", "a", "ext4", test, "1") == spec
        assert on.cell_spec("local", "a", "ext4", test, "1") == spec | {"verify": True}


@pytest.mark.parametrize(
    ("io", "message"),
    [
        (
            {"engine": "dd"},
            r"'io.verify': value true .*false with io.engine dd \(dd cannot check .*use io.engine python\)",
        ),
        (
            {"engine": "fio"},
            r"'io.verify': value true .*false with io.engine fio \(fio checks .*use io.engine python\)",
        ),
        ({"data": "zero"}, r"'io.verify': value true .*false with io.data zero"),
        ({"block_sizes": ["16B"]}, r"'io.block_sizes\[0\]': value '16B' .*multiple of 32 bytes with io.verify"),
        ({"verify": "yes"}, r"'io.verify': value 'yes'"),
    ],
)
def test_a_verify_that_cannot_be_done_is_refused_in_one_line_naming_the_key(io, message):
    with pytest.raises(ConfigError, match=message) as e:
        validate(campaign(**({"verify": True} | io)))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("file_size", [0, 5, 4096])
def test_the_metadata_reads_check_their_files_bytes(tmp_path, file_size):
    job = MetaJob(str(tmp_path), streams=2, files=30, file_size=file_size, dirs=2, verify=verify.signatures(1, 2, 1)[0])
    make_trees(job)
    run_phase(job, "create")
    clean = run_phase(job, "read")
    assert clean["bad_blocks"] == 0 and "checked" in clean["command"]
    if file_size:
        for stream, i in ((1, 17), (1, 4), (0, 29)):
            with open(job.path(stream, i), "r+b") as f:
                f.seek(file_size - 1)
                last = f.read(1)[0]
                f.seek(file_size - 1)
                f.write(bytes([last ^ 1]))
        bad = run_phase(job, "read")
        assert bad["bad_blocks"] == 3
        assert bad["first_bad_found"] == f"file {job.path(0, 29)} not as made"  # the lowest stream's, as offsets
        assert [s["verify"]["first_bad_found"] for s in bad["streams"]][1] == f"file {job.path(1, 4)} not as made"


# The corrupting device (tests/slowdev.py's Faults): a raw campaign of two streams of 8 MiB, in 1 MiB blocks, on a
# device that loses the page at DROP (stream 0's region) and flips a bit at FLIP (stream 1's), held at a rate that
# keeps every write and read over a second (no `short` flag to hide behind).
DROP, FLIP = 3 * MiB + 64 * 2**10, 8 * MiB + 5 * MiB + 12345
RATE = 12 * 10**6


def lossy_campaign(dev: str, scratch) -> dict:
    return {
        "campaign": "lossy",
        "scratch": str(scratch),
        "arrays": {"disk": {"kind": "device", "device": dev}},
        "allow_destroy": [dev],
        "raw": True,
        "filesystems": {},
        "io": {"size": "8MiB", "block_sizes": ["1MiB"], "streams": [2], "verify": True, "repeats": 1},
    }


def read_row_and_record(workdir):
    df = pd.read_csv(workdir / "results/lossy/measurements.csv")
    read = df[df["op"] == "read"].iloc[0]
    return read, json.loads((workdir / read["record"]).read_text()), df


@needs_root
@pytest.mark.e2e
def test_a_campaign_finds_the_lost_and_the_flipped_write_at_their_offsets_from_cold_reads(ram_scratch, tmp_path):
    faults = {"drop": DROP, "flip": FLIP}
    with slow_device(ram_scratch / "lossy", 32 * MiB, RATE, faults) as lossy:
        run_campaign(tmp_path / "lossy", lossy_campaign(lossy.dev, ram_scratch / "c1"))
    read, record, df = read_row_and_record(tmp_path / "lossy")
    assert read["cached_before"] == 0  # a dropped write cannot have come back from the page cache
    assert (read["bad_blocks"], read["first_bad_offset"], read["first_bad_found"]) == (2, DROP, "zeros")
    assert "corrupt" in read["flags"] and not read["valid"] and "corrupt" in read["invalid_reasons"]
    found = [(s["verify"]["first_bad_offset"], s["verify"]["first_bad_found"]) for s in record["streams"]]
    assert found == [(DROP, "zeros"), (FLIP, "1 bit(s) flipped")]
    write = df[df["op"] == "write"].iloc[0]
    assert pd.isna(write["bad_blocks"]) and "corrupt" not in str(write["flags"])  # a write has nothing to check
    page = (tmp_path / "lossy/results/lossy/summary.html").read_text()
    # where the read's figure stands: its cell marked not valid, the flag beside the figure
    cell = r'<td class="invalid"><span class="invalid-mark">not valid(?:(?!</td>).)*>corrupt</span></td>'
    assert re.search(cell, page)

    with slow_device(ram_scratch / "clean", 32 * MiB, RATE) as clean:  # the same campaign on storage that keeps all
        run_campaign(tmp_path / "clean", lossy_campaign(clean.dev, ram_scratch / "c2"))
    read, record, _ = read_row_and_record(tmp_path / "clean")
    assert read["cached_before"] == 0 and read["bad_blocks"] == 0 and read["valid"], read["flags"]
    assert pd.isna(read["first_bad_offset"]) and read["verify_seconds"] > 0
    assert "corrupt" not in (tmp_path / "clean/results/lossy/summary.html").read_text()


@pytest.mark.parametrize("depth", [1, 4])
def test_a_mix_checks_its_reads_of_blocks_laid_down_or_written_by_the_mix_itself(tmp_path, depth):
    job = verified(tmp_path, 2, iodepth=depth)
    engine.write(job)  # the layout
    found = mixed.run(replace(job, pattern="rand"), 50)
    assert found["read"]["bad_blocks"] == 0 and found["read"]["verify_seconds"] > 0
    assert "bad_blocks" not in found["write"]
    damage(job.streams[1].path, 0, bytes(4096))
    found = mixed.run(replace(job, pattern="seq"), 100)  # every block read: the damaged one is found
    assert (found["read"]["bad_blocks"], found["read"]["first_bad_offset"]) == (1, 0)
