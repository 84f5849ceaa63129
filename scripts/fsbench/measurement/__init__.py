"""Measuring: the device steps of a cell (steps), the write, cold read, mix and metadata test themselves
(measure), the cell as an engine job (cell_job), the checks that target and data are the expected ones
(identity), the cold cache (cold), the time series judged (judgement), the row and record (record), the columns
(rows), all-hosts cells (all_hosts), provenance.json (provenance)."""
