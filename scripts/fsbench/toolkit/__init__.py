"""Small tools every layer uses: running external programs (system), atomic JSON records (records), sizes and
durations (sizes), the latency histogram (latency), a measurement's time series (timeseries), the flags and what
makes a figure not valid (flags), how a step script reports (run_step)."""
