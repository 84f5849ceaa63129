"""By hand (docs/bench-peers.md, "Measured by hand"): how much of fsbench's lead over IOR and mdtest on IO500's
checked reads is the data check's own cost (issue 37).

On bench-peers' RAM-backed ext4 at its sizes, IO500's write phases once (fsbench's, and the peer's as io500 runs
them), then ROUNDS rounds of each checked read phase, each tool with its check and without, the two turns
alternating from round to round: fsbench's phase with Phase.verify on and off, IOR without -R, mdtest without -X.
Prints each tool's with/without ratio and fsbench/peer with checks and without (medians of the rounds, and ranges).

    sudo .venv/bin/python benchmarks/io500_checks.py [ROUNDS]   (6 by default; root: a loop device, a mount)
"""

import dataclasses
import importlib.util
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
ph = bench.ph500

CHECKED = {"ior-easy-read": "-R", "ior-hard-read": "-R", "mdtest-hard-read": "-X"}  # the peer's check flag


def main(rounds: int) -> None:
    io5, bin_dir = bench.SCALES["ext4-ram"].io5, bench.peers.build()
    got = {(p, who, check): [] for p in CHECKED for who in ("fsbench", "peer") for check in (True, False)}
    kinds = dict(ph.BY_NAME)
    with bench.ext4_ram() as (root, what):
        print(what, flush=True)
        with bench.io500_fsbench(root, io5) as phase, bench.io500_peer_folder(root / "peer-io500") as d:
            commands = bench.io500_peer_commands(d, io5)
            bench.io500_writes(bin_dir, d, io5, phase)
            for rnd in range(rounds):
                for p, flag in CHECKED.items():
                    for check in (True, False) if rnd % 2 == 0 else (False, True):
                        ph.BY_NAME[p] = dataclasses.replace(kinds[p], verify=check)  # the forked processes see it
                        try:
                            got[(p, "fsbench", check)].append(phase(p)["value"])
                        finally:
                            ph.BY_NAME[p] = kinds[p]
                        tool, args = commands[p]
                        args = [a for a in args if check or a != flag]
                        got[(p, "peer", check)].append(bench.peer_value(bin_dir, tool, args, p))
                print(f"round {rnd + 1} of {rounds}", flush=True)
    print("| phase | who | with its check | without | with/without |")
    print("| --- | --- | ---: | ---: | ---: |")
    for p in CHECKED:
        for who in ("fsbench", "peer"):
            on, off = got[(p, who, True)], got[(p, who, False)]
            ratio = statistics.median(a / b for a, b in zip(on, off, strict=True))
            print(f"| {p} | {who} | {statistics.median(on):.3f} | {statistics.median(off):.3f} | {ratio:.3f} |")
    print("\n| phase | fsbench/peer, both checking | range | neither checking | range |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for p in CHECKED:
        cells = [p]
        for check in (True, False):
            r = [a / b for a, b in zip(got[(p, "fsbench", check)], got[(p, "peer", check)], strict=True)]
            cells += [f"{statistics.median(r):.2f}", f"{min(r):.2f}–{max(r):.2f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
