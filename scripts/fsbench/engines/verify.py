"""io.verify: data written so that a read can tell it is what was written, and what a read found where it was not.

Every STAMP piece (4 KiB, or the block if smaller) of a verified block begins with a header of four 64-bit words:
the block's byte offset (stamped on the write path, as every random write already is), MAGIC, the cell's mark
and the writing stream's signature (both stamped into the write pool once, before the start line: the write
path does no more than unverified). The rest is the pool's random bytes, drawn from the signature, so that a
reader that knows the signature knows every byte (still incompressible). A signature is drawn from the cell's
seed, a nonce of that write and the stream: an older write of the same cell (a lost write, a stale cache) has
another. The C loop (loops.c's check) compares each whole block read, after its timed call; what it found at the
lowest bad block is named here (`found`).
"""

import hashlib
import random
import struct

MAGIC = int.from_bytes(b"fsbVRFY1", "little")
HEADER = struct.Struct("<4q")  # offset, MAGIC, mark, signature (little-endian, as loops.c stamps on x86-64/arm64)
# The columns a verified read adds to its row (docs/contract.md): blocks (or files) that came back wrong, the
# byte where the lowest of them first differs, what was found there, and the check's own time.
COLUMNS = ("bad_blocks", "first_bad_offset", "first_bad_found", "verify_seconds")


def _word(*parts) -> int:
    """A signed 64-bit word from `parts` (C's int64_t holds it)."""
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little", signed=True)


def mark(campaign: str, test: str) -> int:
    """The cell's mark: which campaign and test (pattern, block size, ...) wrote a block."""
    return _word("mark", campaign, test)


def signatures(seed: int, nonce: int, streams: int) -> tuple[int, ...]:
    """Each stream's signature for one write (`nonce` new at every write)."""
    return tuple(_word("signature", seed, nonce, i) for i in range(streams))


def pool(signature: int, nbytes: int) -> bytes:
    """The random bytes a stream with `signature` writes from (the same for its reader, on any host)."""
    return random.Random(signature).randbytes(nbytes)


def stamp_pool(block: bytearray | memoryview, every: int, mark_: int, signature: int) -> None:
    """The header's constant words (MAGIC, mark, signature) into every piece of `block`; the offset is the write's."""
    words = HEADER.pack(0, MAGIC, mark_, signature)[8:]
    for j in range(0, len(block), every):
        block[j + 8 : j + 32] = words


def found(out, expected: tuple[int, ...], mark_: int, signature: int) -> str:
    """What the lowest bad block held where it first differs (that piece), in words: zeros, garbage, another
    cell's or an older write's block, another stream's or another offset's, or this block with bits flipped.
    `out` is loops.Out after a verified read; `expected` every signature of the write (another stream's is named
    as such)."""
    offset, magic, their_mark, their_signature = (out.found[i] for i in range(4))
    if out.bad_zero:
        return "zeros"
    if magic != MAGIC:
        return "garbage"
    if their_mark != mark_:
        return "another cell's block"
    if their_signature != signature:
        return "another stream's block" if their_signature in expected else "an older signature"
    if offset != out.bad_block:
        return f"the block of offset {offset}"
    return f"{out.bad_bits} bit(s) flipped"


def columns(streams: list[dict]) -> dict:
    """A verified figure's columns from its streams' checks: bad blocks summed, the lowest first bad offset (and
    what was found there), the check's time summed over the streams."""
    checked = [s["verify"] for s in streams if "verify" in s]
    if not checked:
        return {}
    bad = [c for c in checked if c["bad_blocks"]]
    first = min(bad, key=lambda c: c["first_bad_offset"], default=None)
    return {
        "bad_blocks": sum(c["bad_blocks"] for c in checked),
        "first_bad_offset": first["first_bad_offset"] if first else float("nan"),
        "first_bad_found": first["first_bad_found"] if first else "",
        "verify_seconds": sum(c["seconds"] for c in checked),
    }
