"""The campaign's plots (plots/*.png and .svg): throughput, durable, efficiency, IOPS, latency, metadata, the
campaign beside its baselines (campaign), and throughput over time (timeseries)."""
