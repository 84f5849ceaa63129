"""The structure of scripts/fsbench: each subpackage imports only from the layers below it
(fsbench.LAYERS, drawn in fsbench/__init__.py), imports inside functions included."""

from pathlib import Path

import fsbench
from fsbench.toolkit.imports import imports_of
from fsbench.workflow.digest import analysis_files

PACKAGE = Path(fsbench.__file__).parent


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in fsbench.LAYERS else None


def test_every_subpackage_has_a_layer():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(fsbench.LAYERS), "a subpackage without a layer (or a layer without a folder)"


def test_no_import_goes_up_a_layer():
    up = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        own = layer(module)
        if own is None:
            continue  # the package's own modules stand above every layer
        for target in sorted(imports_of(path, module)):
            other = layer(target)
            if other is None and target not in ("fsbench", "fsbench.LAYERS"):
                up.append(f"{module} imports {target} (the package's top)")
            elif other is not None and fsbench.LAYERS.index(other) > fsbench.LAYERS.index(own):
                up.append(f"{module} ({own}) imports {target} ({other}), a higher layer")
    assert not up, "arrows up:\n" + "\n".join(up)


def test_the_analysis_digest_holds_every_module_the_analysis_scripts_import():
    """What common.smk's hand-kept list missed: flags (which flags invalidate a figure), latency, io500's table,
    dd's log reader (through the engine table); and the package __init__s on the way."""
    scripts = PACKAGE.parent
    found = {str(p.relative_to(scripts)) for p in analysis_files([scripts / "aggregate.py", scripts / "plot.py"])}
    for module in ("toolkit/flags.py", "toolkit/latency.py", "io500/table.py", "engines/ddlog.py", "plots/draw.py"):
        assert f"fsbench/{module}" in found
    assert {"aggregate.py", "plot.py", "fsbench/__init__.py", "fsbench/io500/__init__.py"} <= found
    assert "fsbench/measurement/measure.py" not in found and "fsbench/history/store.py" not in found
    # every figure module of the plot table (fsbench.plots.draw imports them by name)
    from fsbench.plots.table import PLOTS

    assert {f"fsbench/plots/{p.figure.split('.')[0]}.py" for p in PLOTS.values()} <= found
