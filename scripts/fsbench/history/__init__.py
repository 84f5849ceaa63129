"""History: every run's rows in one store (store), which rows are one series, the comparability key (key), the
series' points run by run (points), the change points in them (changes), the trend page (report), IO500 phase
records as rows (io500), and `python -m fsbench history` (cli parses it, commands runs it)."""
