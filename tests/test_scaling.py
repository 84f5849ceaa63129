"""The clients axis (config clients): each point (the first N hosts, M processes on each) a cell of its own for the
all-hosts cells and io500; scaling.csv's arithmetic against the smallest point; plots/scaling.png and the section
of summary.html. The 4-node study through Slurm, on CephFS, is in tests/test_slurm_scaling.py."""

import json

import pandas as pd
import pytest

from fsbench.analysis import scaling
from fsbench.campaign import cells
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.cluster.hosts import short_hostname

from conftest import needs_root, run_campaign

HOSTS = ["n1", "n2", "n3", "n4"]


def campaign(tmp_path, **over) -> dict:
    return {
        "hosts": HOSTS,
        "arrays": {"g": {"kind": "path", "path": str(tmp_path), "all_hosts": True}},
        "io": {"size": "8MiB", "block_sizes": ["1MiB"], "streams": [1], "shared_file": [False, True], "repeats": 1},
        "clients": {"hosts": [1, 2, 4], "processes": [1, 2]},
    } | over


def test_each_point_is_a_cell_of_its_own_on_its_first_hosts(tmp_path):
    config = validate(campaign(tmp_path, io500={"processes": 3}, metadata={"files": 10, "cache": "warm"}))
    assert cells.all_hosts_segments(config) == ["all1x1", "all1x2", "all2x1", "all2x2", "all4x1", "all4x2"]
    found = {(c.host, c.test) for c in cells.cells(config) if cells.is_all_hosts(c.host)}
    assert ("all2x2", "seq-1MiB-buffered-2s-shared") in found and ("all4x1", "seq-1MiB-buffered-1s") in found
    assert len(found) == 6 * 2 and not any(h == "all" for h, _ in found)  # and no metadata cell: the hosts' own
    assert cells.cell_hosts(config, "all2x1") == ["n1", "n2"] and cells.cell_hosts(config, "n3") == HOSTS
    plan = Plan(config)
    spec = plan.cell_spec("all2x2", "g", "path", "io500", 1)
    assert spec["io500"]["processes"] == 2 and spec["read_from"] == "other"
    # one host alone reads what its own streams wrote; several read another host's
    assert "read_from" not in plan.cell_spec("all1x2", "g", "path", "seq-1MiB-buffered-2s", 1)
    assert plan.cell_spec("all2x1", "g", "path", "seq-1MiB-buffered-1s", 1)["read_from"] == "other"
    assert len({plan.priority(h, "g", "path", "io500", 1) for h in cells.all_hosts_segments(config)}) == 6


def test_without_clients_the_all_hosts_cells_keep_their_params(tmp_path):
    config = validate({k: v for k, v in campaign(tmp_path).items() if k != "clients"})
    assert cells.all_hosts_segments(config) == ["all"]
    spec = Plan(config).cell_spec("all", "g", "path", "seq-1MiB-buffered-1s", 1)
    assert spec["host"] == "all" and spec["streams"] == 1 and spec["read_from"] == "other"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"clients": {"hosts": [1, 8], "processes": [1]}}, "config key 'clients.hosts[1]': value 8 is not allowed"),
        ({"hosts": [], "io500": {}, "all_hosts": False}, "config key 'clients.hosts[0]': value 1 is not allowed"),
        ({"clients": {"hosts": [1]}}, "config key 'clients' lacks 'processes'"),
        ({"arrays": {"g": {"kind": "loop"}}, "raw": True}, "config key 'clients'"),
        ({"hosts": ["n1", "all2x1"]}, "config key 'hosts[1]': value 'all2x1' is not allowed"),
    ],
)
def test_a_bad_clients_axis_is_refused_naming_the_key(tmp_path, change, message):
    config = campaign(tmp_path) | change
    if config.pop("all_hosts", True) is False:  # io500 alone on the path array
        config["arrays"] = {"g": {"kind": "path", "path": str(tmp_path)}}
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate(config)


def rows(figures: dict) -> pd.DataFrame:
    """Cell rows of measurements.csv: {(host, op, shared_file): [mb_s of each rep]}; and a part's row to ignore."""
    found = []
    for (host, op, shared), values in figures.items():
        for rep, mb_s in enumerate(values, start=1):
            found.append(
                {"host": host, "array": "g", "workload": "io", "op": op, "pattern": "seq", "block_size": 2**20}
                | {"direct": False, "iodepth": 1, "shared_file": shared, "rep": rep, "mb_s": mb_s}
            )
    part = found[0] | {"host": "n1@all1x1", "mb_s": 1e9}
    return pd.DataFrame([*found, part])


def test_scaling_csv_per_client_and_efficiency_against_the_smallest_point():
    df = scaling.table(
        rows(
            {
                ("all1x1", "write", False): [90, 100, 110],  # the median: 100
                ("all2x1", "write", False): [200],
                ("all4x1", "write", False): [300],
                ("all4x2", "write", False): [400],
                ("all2x1", "write", True): [50],  # the shared file's smallest point is 2 clients
                ("all4x1", "write", True): [60],
            }
        ),
        [{"cell": {"host": h, "array": "g"}, "phase": "ior-easy-write", "value": v} for h, v in [("all4x1", 2.0)]]
        + [{"cell": {"host": "all1x1", "array": "g"}, "phase": "ior-easy-write", "value": 1.0}]
        + [{"cell": {"host": h, "array": "g"}, "phase": "timestamp", "value": 0.0} for h in ("all1x1", "all4x1")],
    )
    fpp = df[df.test == "g write seq 1MiB buffered, file per process"]
    assert list(fpp.clients) == [1, 2, 4, 8] and list(fpp.figure) == [100, 200, 300, 400]
    assert list(fpp.per_client) == [100, 100, 75, 50] and list(fpp.efficiency) == [1.0, 1.0, 0.75, 0.5]
    shared = df[df.test == "g write seq 1MiB buffered, shared file"]
    assert list(shared.efficiency) == [1.0, 0.6] and list(shared.hosts) == [2, 4]
    io500 = df[df.test == "g io500 ior-easy-write"]
    assert list(io500.clients) == [1, 4] and list(io500.efficiency) == [1.0, 0.5] and set(io500.unit) == {"GiB/s"}
    assert "g io500 timestamp" not in set(df.test)  # io500's dummy phase: a file touched, no figure to scale
    assert list(scaling.ideal(fpp)) == [100, 200, 400, 800]
    assert list(df.columns) == scaling.COLUMNS


@needs_root
def test_a_scaling_study_on_this_host_alone(scratch, tmp_path):
    """clients with this host as the one host (no Slurm): a cell per point, scaling.csv, scaling.png and the section
    of summary.html."""
    shared = scratch / "shared"
    shared.mkdir()
    config = campaign(shared) | {
        "campaign": "scaling",
        "scratch": str(scratch / "s"),
        "hosts": [short_hostname()],
        "clients": {"hosts": [1], "processes": [1, 2]},
        "io": campaign(shared)["io"] | {"cache": "fadvise", "shared_file": [False]},
        "history": False,
    }
    run_campaign(tmp_path, config)
    results = tmp_path / "results/scaling"
    df = pd.read_csv(results / "scaling.csv")
    assert sorted(zip(df.test, df.clients, strict=True)) == [
        ("g read seq 1MiB buffered, file per process", 1),
        ("g read seq 1MiB buffered, file per process", 2),
        ("g write seq 1MiB buffered, file per process", 1),
        ("g write seq 1MiB buffered, file per process", 2),
    ]
    measured = pd.read_csv(results / "measurements.csv")
    for row in df.itertuples():
        cell = measured[(measured.host == f"all1x{row.processes}") & (row.test.split()[1] == measured.op)]
        assert cell.streams.tolist() == [row.processes] and cell.mb_s.tolist() == [pytest.approx(row.figure)]
        record = json.loads((tmp_path / cell.record.iloc[0]).read_text())
        assert record["hosts"]["start_spread_s"] >= 0
    assert (results / "plots/scaling.png").stat().st_size > 0
    assert "Client scaling" in (results / "summary.html").read_text()
