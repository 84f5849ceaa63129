"""Measuring: the device steps of a cell, the measurement, its time series, all-hosts cells, the row, provenance."""
