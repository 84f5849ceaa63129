"""The structure of scripts/fsbench: each subpackage imports only from the layers below it
(fsbench.LAYERS, drawn in fsbench/__init__.py), imports inside functions included."""

import ast
from pathlib import Path

import fsbench

PACKAGE = Path(fsbench.__file__).parent


def imports_of(path: Path, module: str) -> set[str]:
    """The fsbench modules `path` (module `module`) imports, anywhere in it."""
    found = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m.split(".")[0] == "fsbench"}


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
