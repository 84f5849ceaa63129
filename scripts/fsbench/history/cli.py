"""`python -m fsbench history runs | series | changes | report | mark`: the results store, read by people and CI."""

import sys

import yaml

from ..campaign.config import ConfigError, validate

# The commands (fsbench.history.commands: the store, pandas, matplotlib) are imported only when a history
# command runs: `python -m fsbench part`, on every host of an all-hosts cell, should not pay for them.
DEFAULT_STORE = "results/history.sqlite"
DEFAULT_TIMEOUT = 10  # seconds (history_timeout's default, config/schema.yaml)
DEFAULT_MIN_CHANGE = 0.05  # history_min_change's default


def add_parser(sub) -> None:
    hist = sub.add_parser("history", help="the results store: runs, series, change points, trend page, marks")
    verbs = hist.add_subparsers(dest="verb", required=True)

    def verb(name, help):
        p = verbs.add_parser(name, help=help)
        p.add_argument("--store", help=f"a path (SQLite) or URL (postgresql://…); default: {DEFAULT_STORE}")
        p.add_argument("--configfile", help="take the store, timeout and min-change from this campaign's history keys")
        p.add_argument("--timeout", type=float, help="seconds a PostgreSQL server has to answer; default: 10")
        p.add_argument("--min-change", type=float, help="the smallest change reported, as a fraction; default: 0.05")
        return p

    verb("runs", "list the runs in the store")
    s = verb("series", "list the series, or print one (by its id) run by run")
    s.add_argument("series", nargs="?", help="a series id, as `history series` and changes.csv give it")
    s.add_argument("--csv", help="write the table to this file")
    c = verb("changes", "the change points of every series")
    c.add_argument("--csv", help="write changes.csv here")
    c.add_argument("--fail-on", choices=["regression"], help="exit 1 when a change point has this verdict (for CI)")
    r = verb("report", "write the trend page (HTML, and its plots beside it)")
    r.add_argument("-o", "--output", default="results/history.html", help="default: results/history.html")
    m = verb("mark", "RUN starts a new baseline: the change up to it is intended, not reported")
    m.add_argument("run", help="a run as `history runs` names it, or a campaign name (its first run)")
    m.add_argument("reason", help='why, e.g. "new firmware"')


def _store(args) -> str:
    """The store the command reads; sets args.timeout and args.min_change when not given."""
    where, timeout, min_change = args.store, DEFAULT_TIMEOUT, DEFAULT_MIN_CHANGE
    if args.configfile:
        with open(args.configfile) as f:
            config = validate(yaml.safe_load(f))
        timeout, min_change = config["history_timeout"], config["history_min_change"]
        if where is None and config["history"] is False:
            raise ValueError(f"{args.configfile} has history: false; name a store with --store")
        where = where or config["history"]
    if args.timeout is None:
        args.timeout = timeout
    elif args.timeout <= 0:
        raise ValueError(f"--timeout {args.timeout}: seconds above 0")
    if args.min_change is None:
        args.min_change = min_change
    elif not 0 < args.min_change <= 10:
        raise ValueError(f"--min-change {args.min_change}: a fraction above 0 and at most 10 (0.05: 5 %)")
    return where or DEFAULT_STORE


def run(args) -> int:
    import sqlalchemy as sa

    from .commands import VERBS

    try:
        where = _store(args)
        return VERBS[args.verb](args, where)
    except (OSError, ValueError, ConfigError, sa.exc.SQLAlchemyError) as e:
        print(f"fsbench: history {args.verb}: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
