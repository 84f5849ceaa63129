"""From records to tables: measurements.csv and why cells stopped repeating (aggregate), summary.csv's statistics
(stats), verdicts (compare: comparisons.csv and two runs), adaptive repeats' decisions (repeats), validity,
baselines, latency percentile curves (percentiles), timeseries.csv (timeseries_table), what differs between two
runs' provenance (provenance_diff) and how a reader names things (names). The plots are fsbench.plots, the
documents fsbench.report."""
