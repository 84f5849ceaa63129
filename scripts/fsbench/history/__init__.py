"""History: every run's rows in one store (store), series of one cell over time (series), the change points in
them (changes), the trend page (report), and `python -m fsbench history` (cli)."""
