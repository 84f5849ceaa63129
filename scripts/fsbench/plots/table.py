"""The plots, one row each: its name (plots/<name>.png and .svg, captions/<name>.rst), the function that draws it,
when a campaign has it (rules/common.smk lists those files as the plots rule's outputs) and what data it needs
(without it, fsbench.plots.draw skips it). The plots step draws the rows its outputs name. A new plot is a row here
plus its figure function, and a line in tests/test_plots.py's test of the table.

Nothing here imports matplotlib: the workflow reads this table whenever it plans.
"""

from collections.abc import Callable
from dataclasses import dataclass

from fsbench.campaign.cells import all_targets, io_tests
from fsbench.engines import table as engines


@dataclass(frozen=True)
class Plot:
    name: str
    figure: str  # module.function under fsbench.plots, called with the Inputs (fsbench.plots.draw) named in `args`
    args: tuple[str, ...]
    applies: Callable[[dict], bool]  # to a validated campaign: whether its plots/ hold this one
    needs: str | None = None  # the Inputs field that must hold rows, else it is not drawn
    styled: bool = True  # drawn in fsbench.plots.bars' style

    @property
    def caption(self) -> str:
        """Its caption in the HTML report, relative to the workflow's folder."""
        return f"captions/{self.name}.rst"

    def files(self, folder) -> list[str]:
        return [f"{folder}/{self.name}.{ext}" for ext in ("png", "svg")]


def _always(campaign: dict) -> bool:
    return True


def _io(applies: Callable[[dict], bool]) -> Callable[[dict], bool]:
    """A block I/O plot: where the campaign has block I/O cells (an io500 campaign without io: has none) and
    `applies`."""
    return lambda campaign: bool(io_tests(campaign)) and applies(campaign)


def _beside_raw(campaign: dict) -> bool:
    """A filesystem or path target beside raw."""
    targets = all_targets(campaign)
    return "raw" in targets and any(t != "raw" for t in targets)


def _with(key: str) -> Callable[[dict], bool]:
    """A campaign that sets `key` (metadata, baselines)."""
    return lambda campaign: bool(campaign[key])


def _engine_can(what: str) -> Callable[[dict], bool]:
    """An engine that records `what` (dd has no per-call times, no time series)."""
    return lambda campaign: engines.why_not(campaign["io"]["engine"], what) is None


PLOTS = {
    p.name: p
    for p in [
        Plot(
            "throughput", "throughput.throughput", ("measurements", "summary", "comparisons"), _io(_always), "summary"
        ),
        Plot("efficiency", "throughput.efficiency", ("summary",), _io(_beside_raw), "summary"),
        Plot("durable", "throughput.durable", ("summary",), _io(_always), "summary"),
        Plot("iops", "latency.iops", ("measurements",), _io(_always), "measurements"),
        Plot("latency", "latency.latency", ("measurements",), _io(_engine_can(engines.LATENCY)), "measurements"),
        Plot(
            "latency_percentiles",
            "latency.latency_percentiles",
            ("curves",),
            _io(_engine_can(engines.LATENCY)),
            "measurements",
        ),
        # Written whenever the engine has series, saying so where no measurement has one.
        Plot(
            "timeseries",
            "timeseries.timeseries_plot",
            ("timeseries", "all_measurements"),
            _io(_engine_can(engines.TIMESERIES)),
            styled=False,
        ),
        Plot("metadata", "metadata.metadata", ("meta",), _with("metadata"), "meta"),
        # Written whenever the campaign has baselines: the workflow expects the file.
        Plot(
            "baselines", "baselines.beside_baselines", ("summary", "earlier"), lambda c: bool(c["baselines"]), "earlier"
        ),
    ]
}


def campaign_plots(campaign: dict) -> list[Plot]:
    """The plots a validated campaign has, in the table's order."""
    return [p for p in PLOTS.values() if p.applies(campaign)]
