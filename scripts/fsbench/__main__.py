"""Command line, `fsbench` (.venv/bin/fsbench, installed by make setup; or `python -m fsbench`):
`fsbench release CAMPAIGN.yaml` releases all a campaign holds on this host; `fsbench results CAMPAIGN.yaml` prints
where its results go; `fsbench compare OLD NEW` prints (and writes) the verdicts of NEW against OLD and what differs
in their provenance; `part` is one host's share of an all-hosts cell (started by fsbench.measurement.all_hosts, not
by people), `io500-part` one host's share of an IO500 phase (started by fsbench.io500.launch); `fsbench history …`
reads the results store (fsbench.history.cli)."""

import argparse
import json
import sys

import yaml

from fsbench.campaign.cells import CellSpec
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import forget_device_state
from fsbench.cluster.hosts import short_hostname, workdirs_here
from fsbench.storage.devices import release


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fsbench")
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="unmount, detach and delete what a campaign holds under its scratch")
    rel.add_argument("campaign", help="the campaign file")
    res = sub.add_parser("results", help="print the campaign's results folder")
    res.add_argument("campaign", help="the campaign file")
    cmp = sub.add_parser(
        "compare", help="verdicts of NEW against OLD for the cells both measured, and what differs in their provenance"
    )
    cmp.add_argument("old", help="the earlier run: a results folder or its measurements.csv")
    cmp.add_argument("new", help="the later run: a results folder or its measurements.csv")
    cmp.add_argument(
        "-o", "--output", help="write OUTPUT.md and OUTPUT.csv (default: compare.md and compare.csv in NEW's folder)"
    )
    part = sub.add_parser("part", help="one host's share of an all-hosts cell (run by fsbench itself)")
    for name in ("cell", "op", "start_line", "scratch", "record_dir"):
        part.add_argument(name)
    io500 = sub.add_parser("io500-part", help="one host's share of an IO500 phase (run by fsbench itself)")
    for name in ("spec", "phase", "start_line", "items", "record_dir"):
        io500.add_argument(name)
    from .history.cli import add_parser as add_history

    add_history(sub)
    args = parser.parse_args(argv)
    if args.command == "history":
        from .history.cli import run as run_history

        return run_history(args)
    if args.command == "part":
        return run_part(args)
    if args.command == "io500-part":
        return run_io500_part(args)
    if args.command == "compare":
        return run_compare(args)
    try:
        with open(args.campaign) as f:
            config = validate(yaml.safe_load(f))
    except (OSError, ConfigError) as e:
        print(f"fsbench: {e}", file=sys.stderr)
        return 2
    if args.command == "results":
        print(f"results/{config['campaign']}")
        return 0
    done = []
    for workdir in workdirs_here(config):
        done += release(workdir)
    if forget_device_state(f"results/{config['campaign']}"):  # unfinished cells restart from mkfs
        done.append(f"forgot the device state of unfinished cells in results/{config['campaign']}/state")
    print("\n".join(done) or "nothing to release")
    return 0


def run_compare(args) -> int:
    from fsbench.report.compare_runs import run

    try:
        text, md, csv = run(args.old, args.new, args.output)
    except (OSError, ValueError) as e:
        print(f"fsbench: {e}", file=sys.stderr)
        return 2
    print(text, end="")
    print(f"\nwritten: {md}, {csv}")
    return 0


def run_part(args) -> int:
    from fsbench.measurement.all_hosts import part
    from fsbench.toolkit.run_step import EXPECTED

    try:
        with open(args.cell) as f:
            part(CellSpec.from_params(json.load(f)), args.op, args.start_line, args.scratch, args.record_dir)
    except EXPECTED as e:
        print(f"fsbench: {short_hostname()}: {e}", file=sys.stderr)
        return 1
    return 0


def run_io500_part(args) -> int:
    from fsbench.io500.run import part_main
    from fsbench.toolkit.run_step import EXPECTED

    try:
        part_main(args.spec, args.phase, args.start_line, args.items, args.record_dir)
    except EXPECTED as e:
        print(f"fsbench: {short_hostname()}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
