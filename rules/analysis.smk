# Results: tidy tables, statistics, plots and provenance, rebuilt from the per-measurement records.
# Quick and device-free: on a cluster they run where Snakemake runs.


localrules:
    aggregate,
    scaling,
    plots,
    provenance,
    baselines,
    compare,
    history,


# baselines.csv as an extra input where the config has baselines; an empty list (never a missing name)
# otherwise, so the scripts always find snakemake.input.baselines.
BASELINE_ROWS = [f"{RESULTS}/baselines.csv"] if CAMPAIGN["baselines"] else []


rule aggregate:
    input:
        records=cell_outputs(),
        released=expand(
            f"{RESULTS}/state/{{host}}/{{array}}/released.json",
            host=MEASURING_HOSTS,
            array=CAMPAIGN["arrays"],
        ),
        baselines=BASELINE_ROWS,
        io500=[f"{RESULTS}/io500.csv"] if IO500_PLACES else [],
        scaling=[f"{RESULTS}/scaling.csv"] if CAMPAIGN["clients"] else [],
    output:
        measurements=report(
            f"{RESULTS}/measurements.csv",
            caption="../captions/measurements.rst",
            category="Tables",
        ),
        summary=report(
            f"{RESULTS}/summary.csv",
            caption="../captions/summary.rst",
            category="Tables",
        ),
        # Verdicts: each filesystem against raw and the others, each block size against the next (fsbench.analysis.compare).
        comparisons=report(
            f"{RESULTS}/comparisons.csv",
            caption="../captions/comparisons.rst",
            category="Tables",
        ),
        # Every measurement's bytes and operations per interval (fsbench.analysis.timeseries_table).
        timeseries=report(
            f"{RESULTS}/timeseries.csv",
            caption="../captions/timeseries_csv.rst",
            category="Tables",
        ),
        markdown=f"{RESULTS}/summary.md",
        # summary.md's tables as a page: the report shows an .html item inline, a .csv only as a download.
        html=report(
            f"{RESULTS}/summary.html",
            caption="../captions/summary_html.rst",
            category="Tables",
        ),
    log:
        f"{RESULTS}/logs/aggregate.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        campaign=NAME,
        code=ANALYSIS_CODE,
    script:
        "../scripts/aggregate.py"


# A client-scaling study (config clients): every point's all-hosts cells and io500 phases, against the clients.
rule scaling:
    input:
        records=cell_outputs(),
        io500=io500_records(),
    output:
        table=report(
            f"{RESULTS}/scaling.csv",
            caption="../captions/scaling_csv.rst",
            category="Tables",
        ),
        png=report(
            f"{RESULTS}/plots/scaling.png",
            caption="../captions/scaling.rst",
            category="Plots",
        ),
        svg=f"{RESULTS}/plots/scaling.svg",
    log:
        f"{RESULTS}/logs/scaling.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        code=ANALYSIS_CODE,
    script:
        "../scripts/scaling.py"


rule plots:
    input:
        measurements=f"{RESULTS}/measurements.csv",
        timeseries=f"{RESULTS}/timeseries.csv",
        summary=f"{RESULTS}/summary.csv",
        comparisons=f"{RESULTS}/comparisons.csv",
        baselines=BASELINE_ROWS,
        # The latency percentile curves read each measurement's histogram from its record.
        records=cell_outputs(),
    output:
        plot_files(as_report_items=True),
    log:
        f"{RESULTS}/logs/plots.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        code=ANALYSIS_CODE,
    script:
        "../scripts/plot.py"


rule provenance:
    input:
        records=cell_outputs(),
    output:
        report(
            f"{RESULTS}/provenance.json",
            caption="../captions/provenance.rst",
            category="Provenance",
        ),
    log:
        f"{RESULTS}/logs/provenance.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        campaign=NAME,
    script:
        "../scripts/provenance.py"


rule baselines:
    input:
        list(CAMPAIGN["baselines"].values()),
    output:
        f"{RESULTS}/baselines.csv",
    log:
        f"{RESULTS}/logs/baselines.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        baselines=CAMPAIGN["baselines"],
    script:
        "../scripts/baselines.py"


# compare_to: this campaign against an earlier one, cell by cell, and what differs in their provenance.
rule compare:
    input:
        measurements=f"{RESULTS}/measurements.csv",
        provenance=f"{RESULTS}/provenance.json",
        earlier=earlier_files(),
    output:
        markdown=report(
            f"{RESULTS}/compare.md",
            caption="../captions/compare.rst",
            category="Tables",
        ),
        table=f"{RESULTS}/compare.csv",
    log:
        f"{RESULTS}/logs/compare.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        earlier=CAMPAIGN["compare_to"],
    script:
        "../scripts/compare.py"


# history: this run's rows appended to the results store (idempotent: a rerun appends nothing new), and the trends
# of this campaign's cells over the runs the store holds. The store and history_context are params, so that
# changing either appends again.
rule history:
    input:
        measurements=f"{RESULTS}/measurements.csv",
        provenance=f"{RESULTS}/provenance.json",
        io500=io500_records(),  # each IO500 phase a figure of the store (none without io500)
    output:
        record=f"{RESULTS}/history.json",
        trends=report(
            f"{RESULTS}/trends.html",
            caption="../captions/trends.rst",
            category="Trends",
        ),
    log:
        f"{RESULTS}/logs/history.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        store=CAMPAIGN["history"],
        settings=CAMPAIGN,
        context=CAMPAIGN["history_context"],
        timeout=CAMPAIGN["history_timeout"],
    script:
        "../scripts/history.py"
