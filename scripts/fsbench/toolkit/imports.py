"""What a Python file imports, read from its text (nothing is imported): the layer test's arrows
(tests/test_layers.py) and the analysis digest's closure (fsbench.workflow.digest)."""

import ast
from pathlib import Path


def imports_of(path: Path, module: str, top: str = "fsbench") -> set[str]:
    """The names under `top` that `path` (module `module`, e.g. fsbench.io500.table) imports, anywhere in it,
    inside functions too: each module, and each name imported from one (fsbench.io500.table.markdown)."""
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m.split(".")[0] == top}


def module_file(root: Path, module: str) -> Path | None:
    """The file of `module` under `root` (the folder holding its top package), or None for a name in a module."""
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def closure(root: Path, scripts: list[Path], top: str = "fsbench") -> list[Path]:
    """Every file of package `top` (under `root`) that running `scripts` imports, directly or not, with the
    __init__.py of each package on the way (importing a module runs them), and the scripts themselves; sorted."""
    seen = {Path(s) for s in scripts}
    todo = [(Path(s), Path(s).stem) for s in scripts]
    while todo:
        path, module = todo.pop()
        for name in imports_of(path, module, top):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                found = module_file(root, ".".join(parts[:i]))
                if found is not None and found not in seen:
                    seen.add(found)
                    todo.append((found, ".".join(parts[:i])))
    return sorted(seen)
