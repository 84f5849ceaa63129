"""The flags that doubt a figure: their names, which make it not valid, what each means, how a measured figure earns
the measurement's own (`doubts`), and the text measurements.csv and summary.csv keep them in: `;`-joined, a
summary's with "(k of m)" where only k of a cell's m repeats carry one (docs/contract.md "Valid figures").

A measurement is valid unless one of its flags is INVALIDATING: the figure is not of the storage it names. The
WARNING flags say something worth knowing while the figure still stands for what it names.
"""

import math

SHORT = "short"
CACHED = "cached"
CACHE_HIT = "cache-hit"
SHORT_TRANSFER = "short-transfer"
NOT_STEADY = "not-steady"
ABOVE_RAW = "above-raw"
DROP = "drop"
SIZE_BEFORE_RUNTIME = "size-before-runtime"
STRAGGLER = "straggler"
PARTIAL_RECORDS = "partial-records"  # a baseline's dd run that moved a partial record (fsbench.engines.ddlog)
CORRUPT = "corrupt"
CLIENT_CACHE = "client-cache"

# Flags that say the figure measured something other than the storage under test.
INVALIDATING = (
    SHORT,  # under a second: start-up, page cache and timer granularity dominate
    CACHED,  # a read that began with its file in the page cache is not a cold read
    CACHE_HIT,  # the devices moved less than half of what was read: a cache or compression answered
    SHORT_TRANSFER,  # fewer bytes moved than the test asks: a different test
    NOT_STEADY,  # a time-based run still changing at its end: the figure depends on when it stopped
    CORRUPT,  # a verified read (io.verify) got back other data than was written: a fast read of wrong data
    CLIENT_CACHE,  # a read of this host's own data through a client caching data itself (ceph-fuse's client_oc)
)
# Flags that say something worth knowing while the figure still stands for what it names.
WARNING = (
    ABOVE_RAW,  # a judgement against raw's repeats (which drift and may be invalid), and on mb_s, which for a
    # buffered write is the page cache by design; the durable rate compared is a separate figure
    DROP,  # the rate fell for a while: that is how this storage behaved (an SLC cache running out)
    SIZE_BEFORE_RUNTIME,  # a time-based write that finished io.size early: still a whole, sized figure
    STRAGGLER,  # one host of an all-hosts cell was slow: the cell's figure is what all hosts did
)

# What each flag says about a figure, as the summary explains it (docs/guide.md "How to read it").
MEANING = {
    SHORT: "the figure took under a second: start-up and caches dominate, use a larger io.size",
    CACHED: "the read began with more than 2% of its file in the page cache",
    ABOVE_RAW: "a filesystem faster than the bare device under it: a cache is in the way",
    SHORT_TRANSFER: "fewer bytes moved than asked",
    CACHE_HIT: "the devices moved less than half of what was read: a cache (or compression) served the read",
    SIZE_BEFORE_RUNTIME: "a time-based stream wrote all of io.size before io.runtime was up: a short figure",
    CORRUPT: "io.verify found blocks read back other than written (bad_blocks, first_bad_offset, first_bad_found)",
    CLIENT_CACHE: "a read of this host's own data through a filesystem client with a data cache of its own, which no "
    "cache drop empties (ceph-fuse with client_oc on): not proven cold",
}

# Figures shorter than this are dominated by start-up and caches (IO500 wants minutes).
SHORT_SECONDS = 1.0
# A read that begins with more than this fraction of its file cached is not a cold read.
CACHED_LIMIT = 0.02
# A read whose devices moved less than this share of its bytes was answered by a cache (or compression).
CACHE_HIT_SHARE = 0.5


def parse(value) -> list[str]:
    """'short;cached (1 of 3)' -> ['short', 'cached (1 of 3)']; empty, NaN (an empty CSV cell), None -> []."""
    if not isinstance(value, str):
        return []
    return [f.strip() for f in value.split(";") if f.strip()]


def name(entry: str) -> str:
    """A summary's 'cached (1 of 3)' -> 'cached'."""
    return entry.split(" (")[0]


def names(value) -> list[str]:
    """The flags' names in `value`, in order: 'short;cached (1 of 3)' -> ['short', 'cached']."""
    return [name(f) for f in parse(value)]


def join(flags) -> str:
    return ";".join(flags)


def add(value, more) -> str:
    """`value` with the flags in `more` appended, each once."""
    have = parse(value)
    return join(have + [f for f in dict.fromkeys(more) if f not in have])


def cache_hit(op: str, nbytes: int, device_bytes: float) -> bool:
    """A read whose devices moved less than CACHE_HIT_SHARE of its bytes."""
    return op == "read" and nbytes > 0 and not math.isnan(device_bytes) and device_bytes < CACHE_HIT_SHARE * nbytes


def doubts(row: dict, expected_bytes: int | None, streams: list[dict] = ()) -> str:
    """The doubts about one measured figure (a row of measurements.csv), joined (empty when there are none).
    `expected_bytes` None: as many as the time allowed (a time-based write); `streams` are its streams' results,
    which say what stopped them."""
    found = []
    if expected_bytes is not None and row["bytes"] != expected_bytes:
        found.append(SHORT_TRANSFER)
    if any(s.get("stopped_by") == "size" for s in streams):
        found.append(SIZE_BEFORE_RUNTIME)
    if min(row["seconds"], row["seconds_durable"]) < SHORT_SECONDS:
        found.append(SHORT)
    if row["op"] == "read" and row["cached_before"] > CACHED_LIMIT:
        found.append(CACHED)
    if cache_hit(row["op"], row["bytes"], row.get("device_bytes", math.nan)):
        found.append(CACHE_HIT)
    if row.get("bad_blocks", 0) > 0:  # NaN (not verified) is not
        found.append(CORRUPT)
    return join(found)
