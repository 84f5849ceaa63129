import math
from pathlib import Path

import pandas as pd
import pytest

from fsbench.analysis.baselines import dd_log_rows, load_baseline
from fsbench.engines.ddlog import dd_size, parse_dd_log
from fsbench.measurement.rows import COLUMNS

DATA = Path(__file__).parent / "data"
GIB20 = 21474836480

# The seed (a byte-for-byte copy of /work/shared/seed/000_e99a343f74741ae8.txt): target, op, bs, seconds, real.
SEED = [
    ("raw", "write", 1 << 20, 68.929, 78.373),
    ("raw", "read", 1 << 20, 51.2106, 51.335),
    ("ext3", "write", 1 << 20, 156.81, 192.603),
    ("ext3", "read", 1 << 20, 67.165, 67.334),
    ("ext3", "read", 4 << 20, 63.088, 63.222),
    ("xfs", "write", 1 << 20, 79.7094, 89.821),
    ("xfs", "read", 1 << 20, 52.4275, 52.564),
]


def run_of(closing: str) -> dict:
    (run,) = parse_dd_log(
        f"Raw write\n# dd if=/dev/zero of=/dev/sdb bs=1M count=1\n1+0 records in\n1+0 records out\n{closing}\n"
    )
    return run


def test_seed_gives_its_seven_runs_exactly():
    df = load_baseline("3ware-2012", DATA / "seed_3ware_2012.txt")
    assert list(df.columns) == COLUMNS
    assert len(df) == 7
    assert list(zip(df.target, df.op, df.block_size, df.seconds, df.seconds_durable, strict=True)) == SEED
    assert (df.bytes == GIB20).all()
    assert (df.fs_type == df.target).all()
    assert set(df.campaign) == set(df.array) == {"3ware-2012"}
    assert set(df.engine) == {"dd-log"} and set(df.pattern) == {"seq"} and set(df.host) == {""}
    assert (df.streams == 1).all() and (df.rep == 1).all() and not df.direct.any()
    assert df.cached_before.isna().all()
    assert df.mb_s.round(6).tolist() == [round(GIB20 / s / 1e6, 6) for *_, s, _ in SEED]
    assert df.mb_s_durable[0] == pytest.approx(GIB20 / 78.373 / 1e6)
    assert df["flags"].tolist() == ["", "", "", "", "short-transfer", "", ""]


def test_seed_runs_keep_what_dd_printed():
    runs = parse_dd_log((DATA / "seed_3ware_2012.txt").read_text())
    assert [r["heading"] for r in runs] == [
        "Raw write",
        "Raw read",
        "EXT3 write",
        "EXT3 read",
        "Different block size:",
        "XFS write",
        "XFS read",
    ]
    assert runs[0]["command"] == "# sync; time `dd if=/dev/zero of=/dev/sda1 bs=1M count=20480 && sync`"
    assert runs[0]["rate"] == "312 MB/s" and runs[0]["records_out"] == (20480, 0)
    short = runs[4]  # bs=4M count=20480 would be 80 GiB; dd stopped at the end of the 20 GiB file
    assert (short["bs"], short["count"], short["records_in"]) == (4 << 20, 20480, (5120, 0))
    assert short["expected_bytes"] == 85899345920 and short["bytes"] == GIB20
    assert short["flags"] == "short-transfer"


@pytest.mark.parametrize(
    "closing, nbytes, seconds, printed",
    [
        ("21474836480 bytes (21 GB, 20 GiB) copied, 68.929 s, 312 MB/s", GIB20, 68.929, "312 MB/s"),
        ("21474836480 bytes (21 GB) copied, 68.929 seconds, 312 MB/s", GIB20, 68.929, "312 MB/s"),
        ("21474836480 bytes transferred in 68.929 secs (311545 bytes/sec)", GIB20, 68.929, "311545 bytes/sec"),
        ("21474836480 bytes (21 GB, 20 GiB) transferred 68.929s, 312 MB/s", GIB20, 68.929, "312 MB/s"),  # FreeBSD 12+
        ("21474836480 bytes (20.0GB) copied, 68.929131 seconds, 297.1MB/s", GIB20, 68.929131, "297.1MB/s"),  # BusyBox
        ("1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.00312 s, 336 MB/s", 1 << 20, 0.00312, "336 MB/s"),
        ("512000 bytes (512 kB, 500 KiB) copied, 0.0042 s, 122 kB/s", 512000, 0.0042, "122 kB/s"),
        ("4294967296 bytes (4.3 GB, 4.0 GiB) copied, 1.5 s, 2.9 GB/s", 1 << 32, 1.5, "2.9 GB/s"),
        ("1048576 bytes (1.0 MB) copied, 0.5 seconds, 2.0 MiB/s", 1 << 20, 0.5, "2.0 MiB/s"),
        ("4294967296 bytes copied, 2.0 s, 2.0 GiB/s", 1 << 32, 2.0, "2.0 GiB/s"),
        ("1 byte copied, 4.5e-05 s, 22.2 kB/s", 1, 4.5e-05, "22.2 kB/s"),
        ("1 byte (1 B) copied, 0.000123 seconds, 8.1 kB/s", 1, 0.000123, "8.1 kB/s"),
    ],
)
def test_each_closing_line_format(closing, nbytes, seconds, printed):
    run = run_of(closing)
    assert (run["bytes"], run["seconds"], run["rate"]) == (nbytes, seconds, printed)
    assert (run["target"], run["op"]) == ("raw", "write")


@pytest.mark.parametrize(
    "real, seconds",
    [("real    1m18.373s", 78.373), ("real 0m51.335s", 51.335), ("real 78.37", 78.37), ("real\t0m0,540s", 0.54)],
)
def test_real_line_styles(real, seconds):
    (row,) = dd_log_rows(
        "b", f"dd if=/dev/zero of=/mnt/x bs=1M count=1\n1048576 bytes copied, 0.2 s, 5 MB/s\n\n{real}\n"
    )
    assert row["seconds"] == 0.2 and row["seconds_durable"] == seconds
    assert row["mb_s_durable"] == pytest.approx((1 << 20) / seconds / 1e6)


def test_status_progress_log_is_one_run():
    text = (DATA / "gnu_progress.log").read_bytes().decode()
    assert text.count("\r") == 4  # progress updates share one physical line
    (run,) = parse_dd_log(text)
    assert (run["bytes"], run["seconds"], run["rate"]) == (1 << 31, 4.01438, "535 MB/s")
    assert (run["heading"], run["target"], run["op"], run["block_size"]) == ("XFS write", "xfs", "write", 1 << 20)
    assert run["direct"] is True and run["flags"] == ""
    assert len(load_baseline("p", DATA / "gnu_progress.log")) == 1


def test_markdown_headings_and_crlf():
    text = "## Results\r\n\r\n# Raw read\r\n```\r\n$ sudo dd if=/dev/nvme0n1 of=/dev/null bs=1M count=1\r\n"
    text += "1+0 records in\r\n1+0 records out\r\n1048576 bytes (1.0 MB, 1.0 MiB) copied, 2.5 s, 0.4 MB/s\r\n```\r\n"
    (run,) = parse_dd_log(text)
    assert (run["heading"], run["target"], run["op"], run["seconds"]) == ("Raw read", "raw", "read", 2.5)


def test_progress_pasted_from_a_terminal_is_not_a_run():
    # What a terminal shows: only the last progress update, on its own line, before the records lines.
    text = (
        "$ dd if=/dev/sdb of=/dev/null bs=4M status=progress\n"
        "1069547520 bytes (1.1 GB, 1020 MiB) copied, 2 s, 535 MB/s\n"
        "256+0 records in\n256+0 records out\n"
        "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2.00614 s, 535 MB/s\n"
    )
    (run,) = parse_dd_log(text)
    assert (run["bytes"], run["seconds"], run["target"], run["op"]) == (1 << 30, 2.00614, "raw", "read")


def test_two_runs_without_headings():
    rows = dd_log_rows("laptop", (DATA / "two_runs.log").read_text())
    assert [(r["op"], r["block_size"], r["bytes"]) for r in rows] == [("write", 10**6, 10**8), ("read", 65536, 10**8)]
    assert [(r["seconds"], r["seconds_durable"]) for r in rows] == [(0.84213, 0.91), (0.312, 0.32)]
    assert [r["target"] for r in rows] == ["", ""]  # nothing names a filesystem and /tmp is no device
    assert rows[0]["flags"] == "short"  # under a second; 100 x 1MB (decimal) is exactly what moved
    assert rows[1]["flags"] == "short;partial-records"  # 1525+1: the file is not a whole number of 64 KiB
    assert all(list(r) == COLUMNS for r in rows)


def test_bsd_log_and_inherited_target():
    rows = dd_log_rows("mac", (DATA / "bsd.log").read_text())
    assert [(r["target"], r["op"], r["block_size"], r["seconds"], r["seconds_durable"]) for r in rows] == [
        ("apfs", "write", 1 << 20, 1.953125, 2.104),
        ("apfs", "read", 1 << 20, 0.53687, 0.54),
    ]
    assert rows[0]["mb_s"] == pytest.approx(549.755813)


def test_heading_without_target_inherits_and_rep_counts_repeats():
    run = "# dd if=/mnt/pp of=/dev/null bs=1M count=1\n1+0 records in\n1+0 records out\n"
    run += "1048576 bytes copied, 2 s, 1 MB/s\n"
    rows = dd_log_rows("b", f"EXT4 read\n{run}\nAgain:\n{run}\nRaw\n{run}")
    assert [(r["target"], r["op"], r["rep"]) for r in rows] == [
        ("ext4", "read", 1),
        ("ext4", "read", 2),
        ("raw", "read", 1),
    ]


def test_closing_lines_without_records_or_command():
    text = "XFS write\n2147483648 bytes transferred in 4.0 secs (536870912 bytes/sec)\n"
    text += "XFS read\n2147483648 bytes transferred in 2.0 secs (1073741824 bytes/sec)\n"
    rows = dd_log_rows("b", text)
    assert [(r["target"], r["op"], r["seconds"]) for r in rows] == [("xfs", "write", 4.0), ("xfs", "read", 2.0)]
    assert math.isnan(rows[0]["block_size"])


@pytest.mark.parametrize(
    "value, nbytes",
    [
        ("1M", 1 << 20),
        ("4M", 4 << 20),
        ("1MB", 10**6),
        ("1kB", 1000),
        ("64k", 65536),
        ("1K", 1024),
        ("2G", 2 << 30),
        ("1GB", 10**9),
        ("1MiB", 1 << 20),
        ("512", 512),
        ("1b", 512),
        ("8c", 8),
        ("1w", 2),
        ("nonsense", None),
    ],
)
def test_dd_sizes(value, nbytes):
    assert dd_size(value) == nbytes


def test_direct_and_count_bytes():
    text = "dd if=/dev/zero of=/mnt/f bs=1M count=3000000 iflag=count_bytes oflag=direct,sync\n"
    text += "3000000 bytes copied, 3 s, 1 MB/s"
    (run,) = parse_dd_log(text)
    assert run["direct"] is True and run["expected_bytes"] == 3000000 and run["flags"] == ""
    (run,) = parse_dd_log("dd if=/mnt/f of=/dev/null iflag=directory\n9 bytes copied, 3 s, 1 MB/s")
    assert run["direct"] is False and run["block_size"] == 512  # dd's default block size


@pytest.mark.parametrize("name", ["no_runs.txt", "missing.log"])
def test_bad_files_name_the_baseline(name):
    with pytest.raises(ValueError, match=rf"'old-box'.*{name}|{name}.*'old-box'"):
        load_baseline("old-box", DATA / name)


def test_directory_or_binary_is_refused(tmp_path):
    with pytest.raises(ValueError, match="'dir'"):
        load_baseline("dir", tmp_path)
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match="'blob'.*blob.bin"):
        load_baseline("blob", tmp_path / "blob.bin")


def test_empty_measurements_csv_is_refused(tmp_path):
    (tmp_path / "m.csv").write_text(",".join(COLUMNS) + "\n")
    with pytest.raises(ValueError, match="'last-run'.*m.csv"):
        load_baseline("last-run", tmp_path / "m.csv")


def test_measurements_csv_round_trip(tmp_path):
    seed = load_baseline("3ware-2012", DATA / "seed_3ware_2012.txt")
    seed["extra"] = "kept"
    seed.to_csv(tmp_path / "measurements.csv", index=False)
    back = load_baseline("last-run", tmp_path / "measurements.csv")
    assert list(back.columns) == COLUMNS + ["extra"]
    assert set(back.campaign) == {"last-run"} and set(back.array) == {"3ware-2012"}
    expected = seed.assign(campaign="last-run")
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)
    assert back["flags"].tolist()[:5] == ["", "", "", "", "short-transfer"] and set(back.cache) == {""}


def test_measurements_csv_with_fewer_columns(tmp_path):
    (tmp_path / "m.csv").write_text("target,op,bytes,seconds\nxfs,write,1000000,2.0\n")
    df = load_baseline("old", tmp_path / "m.csv")
    assert list(df.columns) == COLUMNS and len(df) == 1
    row = df.iloc[0]
    assert (row.campaign, row.target, row.op, row.bytes, row.seconds, row["flags"]) == (
        "old",
        "xfs",
        "write",
        1000000,
        2.0,
        "",
    )
    assert math.isnan(row.mb_s) and math.isnan(row.block_size)
