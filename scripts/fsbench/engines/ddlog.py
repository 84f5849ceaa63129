"""dd logs as people paste them: the dd runs in a text, each with its command, figures and `real` line.

Headings ("Raw write", "EXT3 read"), the dd command line, dd's closing lines in any common format and
optionally the shell's `real` line. Each dd run becomes one run; status=progress lines are not runs.
Used for baselines (fsbench.analysis.baselines) and to read dd's own output (fsbench.engines.dd).
"""

import math
import re

from fsbench.toolkit import flags
from fsbench.toolkit.sizes import parse_size

# dd's closing line: GNU `N bytes (21 GB, 20 GiB) copied, 68.929 s, 312 MB/s`, older GNU and BusyBox
# `N bytes (21 GB) copied, 68.929 seconds, 312 MB/s`, BSD/macOS `N bytes transferred in 68.929 secs
# (311545 bytes/sec)`, FreeBSD 12+ `N bytes (21 GB, 20 GiB) transferred 68.929s, 312 MB/s`.
_COPIED = re.compile(
    r"^\s*(?P<bytes>\d+) bytes? (?:\([^)]*\) )?(?:copied,|transferred(?: in)?) "
    r"(?P<seconds>\d+(?:\.\d+)?(?:e[-+]?\d+)?) ?(?:s|secs?|seconds?)?,? \(?(?P<rate>[^()]*?)\)?\s*$",
    re.IGNORECASE,
)
_RECORDS = re.compile(r"^\s*(\d+)\+(\d+) records (in|out)\s*$")
_REAL = re.compile(r"^\s*real\s+(?:(\d+)h\s*)?(?:(\d+)m\s*)?(\d+(?:[.,]\d+)?)s?\s*$")  # bash `time` and `time -p`
_USER_SYS = re.compile(r"^\s*(?:user|sys)\s+\S+\s*$")
_DD = re.compile(r"(?:^|[\s;`(&|/])dd\s.*\b(?:if|of)=")
_PROMPT = re.compile(r"^\s*(?:\S*[@:]\S*)?[#$%]\s+[a-z./]")  # "# mke2fs …", "$ sync"; "# Raw write" is a heading
_OPERAND = re.compile(r"(?<![\w-])(if|of|bs|ibs|obs|count|iflag|oflag)=([^\s`;&|()'\"]+)")
_FS = re.compile(
    r"\b(ext[234]|xfs|btrfs|zfs|jfs|reiserfs|f2fs|nilfs2|ntfs|vfat|exfat|apfs|hfs|ufs|nfs|cifs"
    r"|lustre|gpfs|beegfs|cephfs|ocfs2|gfs2|tmpfs|bcachefs)\b",
    re.IGNORECASE,
)
_NOT_DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/full",
    "/dev/std",
    "/dev/fd/",
    "/dev/shm/",
)


def dd_size(value: str) -> int | None:
    """Bytes in a dd operand: 1M = 2^20 (as fsbench.toolkit.sizes), but 1MB = 10^6, and c=1, w=2, b=512."""
    if m := re.fullmatch(r"(\d+)([KMGTP])B", value, re.IGNORECASE):
        return int(m[1]) * 1000 ** ("KMGTP".index(m[2].upper()) + 1)
    if m := re.fullmatch(r"(\d+)([cwb])", value):
        return int(m[1]) * {"c": 1, "w": 2, "b": 512}[m[2]]
    try:
        return parse_size(value)
    except ValueError:
        return None


def _kind(line: str) -> str:
    s = line.strip()
    if not s:
        return "blank"
    for kind, pattern in (("copied", _COPIED), ("records", _RECORDS), ("real", _REAL), ("blank", _USER_SYS)):
        if pattern.match(s):
            return kind
    if _DD.search(s):
        return "dd"
    if _PROMPT.match(s):
        return "command"
    if s.startswith(("dd:", "```")) or not re.search(r"[^\W_]", s):
        return "blank"  # dd's warnings, code fences, "...": neither runs nor headings
    return "heading"


def _closed_runs(text: str) -> list[dict]:
    """The runs as printed: heading, command, records, bytes, seconds, rate and `real`, nothing derived."""
    runs, last = [], None
    heading, command, records, candidate = "", None, {}, None

    def close(m):
        nonlocal heading, command, records, candidate
        run = {
            "heading": heading,
            "command": command,
            "records_in": records.get("in"),
            "records_out": records.get("out"),
            "bytes": int(m["bytes"]),
            "seconds": float(m["seconds"]),
            "rate": m["rate"].strip(),
            "real": None,
        }
        runs.append(run)
        heading, command, records, candidate = "", None, {}, None
        return run

    text = text.replace("\r\n", "\n").replace("\xa0", " ")
    # status=progress rewrites one physical line with \r; those pieces are progress, never a run by themselves.
    for line, progress in ((seg, "\r" in phys) for phys in text.split("\n") for seg in phys.split("\r")):
        kind = _kind(line)
        if kind in ("heading", "dd", "command", "real") and candidate and not records:
            last = close(candidate)  # a run pasted without records lines ends at the next command/heading
        if kind == "real":
            if last is not None and last["real"] is None:
                h, m, s = _REAL.match(line).groups()
                last["real"] = int(h or 0) * 3600 + int(m or 0) * 60 + float(s.replace(",", "."))
            continue
        if kind == "blank":
            continue
        last = None
        if kind == "heading":
            heading, command, records, candidate = line.strip().strip("#*_= \t").strip(), None, {}, None
        elif kind == "dd":
            command, records, candidate = line.strip(), {}, None
        elif kind == "records":
            full, partial, which = _RECORDS.match(line).groups()
            records[which] = (int(full), int(partial))
        elif kind == "copied":
            if "out" in records:  # the closing line follows "N+M records out"; earlier ones were progress
                last = close(_COPIED.match(line))
            elif not progress:
                candidate = _COPIED.match(line)
    if candidate and not records:
        close(candidate)
    return runs


def _named_target(heading: str) -> str:
    if re.search(r"\braw\b", heading, re.IGNORECASE):
        return "raw"
    m = _FS.search(heading)
    return m[1].lower() if m else ""


def parse_dd_log(text: str) -> list[dict]:
    """Each dd run in pasted text, in order, with what it printed and what that means.

    Keys: heading, command, records_in/records_out ((full, partial) or None), bytes, seconds, rate (as
    printed), real (seconds of the shell's `real` line or None), bs, count, block_size, direct, op, target,
    fs_type, expected_bytes (count x bs, or None), seconds_durable (real, else seconds) and flags.
    """
    runs, last_named = _closed_runs(text), ""
    for run in runs:
        ops = dict(_OPERAND.findall(run["command"] or ""))
        bs = dd_size(ops.get("bs") or ops.get("ibs") or ops.get("obs") or "512") if run["command"] else None
        count = dd_size(ops["count"]) if "count" in ops else None
        heading = run["heading"].lower()
        if ops.get("of") == "/dev/null":
            op = "read"
        elif ops.get("if") in ("/dev/zero", "/dev/urandom", "/dev/random"):
            op = "write"
        else:
            op = next((w for w in ("write", "read") if re.search(rf"\b{w}", heading)), "")
        last_named = _named_target(heading) or last_named  # "Different block size:" keeps the last target
        device = any(
            p.startswith("/dev/") and not p.startswith(_NOT_DEVICES) for p in (ops.get("if"), ops.get("of")) if p
        )
        target = "raw" if device else last_named
        iflags, oflags = ops.get("iflag", "").split(","), ops.get("oflag", "").split(",")
        expected = count if "count_bytes" in iflags else count * bs if count and bs else None
        durable = run["real"] if run["real"] is not None else run["seconds"]
        row = {"bytes": run["bytes"], "seconds": run["seconds"], "seconds_durable": durable, "op": op}
        doubts = flags.parse(flags.doubts({**row, "cached_before": math.nan}, expected or run["bytes"]))
        if any(r and r[1] for r in (run["records_in"], run["records_out"])):
            doubts.append(flags.PARTIAL_RECORDS)
        run.update(
            bs=bs,
            count=count,
            block_size=bs,
            op=op,
            target=target,
            fs_type=target,
            expected_bytes=expected,
            seconds_durable=durable,
            direct="direct" in iflags + oflags,
            flags=flags.join(doubts),
        )
    return runs
