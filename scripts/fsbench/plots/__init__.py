"""The campaign's plots (plots/*.png and .svg), one row each in table.py, drawn by draw.py: throughput, efficiency and
durable (throughput), IOPS, latency and its percentiles (latency), the metadata test (metadata), the campaign beside
its baselines (baselines), throughput over time (timeseries); what bar figures share is in bars."""
