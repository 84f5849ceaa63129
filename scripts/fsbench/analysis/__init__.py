"""From records to answers: the tidy tables, statistics, verdicts, summaries, plots, baselines and comparisons."""
