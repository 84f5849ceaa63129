"""scaling.csv: a client-scaling study (config clients) as cluster storage is reported. Per test (a block I/O test of
the all-hosts cells, file per process or shared file; each io500 phase) and per point (hosts x processes per host):
the aggregate figure, the figure per client, and the parallel efficiency against the smallest point, (figure /
clients) / (its figure / its clients): 1.0 is the ideal line, every client as fast as the fewest were."""

import html

import pandas as pd

from fsbench.campaign.cells import clients_point
from fsbench.io500 import phases as ph
from fsbench.toolkit.sizes import format_size

COLUMNS = ["test", "unit", "clients", "hosts", "processes", "figure", "per_client", "efficiency"]


def io_test(row) -> str:
    """A block I/O test without its streams (a point's processes), e.g. `demo write seq 1MiB direct, shared file`."""
    depth = f" qd{int(row['iodepth'])}" if int(row["iodepth"]) > 1 else ""
    io = "direct" if str(row["direct"]).lower() == "true" else "buffered"
    layout = "shared file" if str(row["shared_file"]).lower() == "true" else "file per process"
    return f"{row['array']} {row['op']} {row['pattern']} {format_size(int(row['block_size']))} {io}{depth}, {layout}"


def points(measurements: pd.DataFrame, io500_records: list[dict]) -> list[dict]:
    """Each test's figure at each point: the median MB/s of an all-hosts cell's repeats (its cell rows, not its
    hosts' parts), and each io500 phase's value (not the timestamp's: a file touched, its figure always 0; nor a
    phase its io500 block did not run)."""
    found = []
    cells = measurements[measurements.host.astype(str).map(lambda h: clients_point(h) is not None)]
    cells = cells[cells.workload == "io"] if "workload" in cells else cells
    for (host, test), rows in cells.groupby([cells.host.astype(str), cells.apply(io_test, axis=1)], sort=False):
        found.append({"host": host, "test": test, "unit": "MB/s", "figure": float(rows.mb_s.median())})
    for r in io500_records:
        host = r["cell"]["host"]
        if clients_point(host) is not None and ph.BY_NAME[r["phase"]].kind != "dummy" and r.get("run", True):
            test = f"{r['cell']['array']} io500 {r['phase']}"
            found.append({"host": host, "test": test, "unit": ph.unit(r["phase"]), "figure": float(r["value"])})
    return found


def table(measurements: pd.DataFrame, io500_records: list[dict]) -> pd.DataFrame:
    """scaling.csv's rows: per test, its points by clients (hosts x processes), with per_client and efficiency."""
    rows = []
    for p in points(measurements, io500_records):
        hosts, processes = clients_point(p["host"])
        rows.append({**p, "clients": hosts * processes, "hosts": hosts, "processes": processes})
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.DataFrame(rows)
    df["per_client"] = df.figure / df.clients
    df = df.sort_values(["clients", "hosts"], kind="stable")
    smallest = df.groupby("test", sort=False).per_client.transform("first")
    df["efficiency"] = df.per_client / smallest
    order = {t: i for i, t in enumerate(dict.fromkeys(r["test"] for r in rows))}
    df = df.sort_values(["test", "clients", "hosts"], key=lambda c: c.map(order) if c.name == "test" else c)
    return df[COLUMNS].reset_index(drop=True)


def ideal(part: pd.DataFrame) -> pd.Series:
    """A test's ideal line: its smallest point's figure per client, times the clients."""
    first = part.sort_values(["clients", "hosts"]).iloc[0]
    return part.clients * first.per_client


def _shown(df: pd.DataFrame) -> list[list[str]]:
    return [
        [r.test, f"{r.hosts} x {r.processes}", str(r.clients), f"{r.figure:.4g} {r.unit}", f"{r.efficiency:.2f}"]
        for r in df.itertuples()
    ]


HEAD = ["test", "hosts x processes", "clients", "figure", "efficiency"]


def markdown(df: pd.DataFrame) -> str:
    """The scaling section of summary.md."""
    lines = ["", "## Client scaling", "", "![scaling](plots/scaling.png)", "", "| " + " | ".join(HEAD) + " |"]
    lines += ["| " + " | ".join("---" for _ in HEAD) + " |"] + ["| " + " | ".join(r) + " |" for r in _shown(df)]
    return "\n".join(lines) + "\n"


def html_section(df: pd.DataFrame) -> str:
    """The scaling section of summary.html: the plot, then the points."""
    cell = lambda tag, v: f"<{tag}>{html.escape(v)}</{tag}>"  # noqa: E731
    rows = "".join("<tr>" + "".join(cell("td", v) for v in r) + "</tr>" for r in _shown(df))
    head = "<tr>" + "".join(cell("th", h) for h in HEAD) + "</tr>"
    img = '<img src="plots/scaling.png" alt="aggregate figure against clients, with the ideal line" width="900">'
    return f"<h2>Client scaling</h2>\n<p>{img}</p>\n<table>{head}{rows}</table>\n"
