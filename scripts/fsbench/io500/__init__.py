"""IO500's phases as a campaign: phases (what each does, pure), run (one host's processes, and every host
at once through the all-hosts launcher), launch (one phase of one target as a step and its record), table
(io500.csv and the score)."""
