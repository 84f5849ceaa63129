"""docs/config.md, the campaign file's reference, generated from config/schema.yaml: every key, its default and
what it allows, written once (in the schema). tests/test_config_reference.py checks that the file is up to date;
`python -m fsbench.campaign.reference > docs/config.md` writes it."""

import json
import textwrap

from fsbench.campaign.config import load_schema

HEAD = """# The campaign file: every key

Generated from `config/schema.yaml` by `python -m fsbench.campaign.reference > docs/config.md` (run from
`scripts/`, or with `PYTHONPATH=scripts`); tests/test_config_reference.py fails when it is out of date. What the
keys do together is in [the guide](guide.md); the result files and their columns in [the contract](contract.md).

A key left out takes its default; one with no default may be left out. `<name>` stands for a name you choose.

"""


def _resolved(node: dict, schema: dict) -> dict:
    """`node` with its $ref's keys under its own."""
    ref = node.get("$ref")
    if ref is None:
        return node
    target = schema
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return _resolved(target, schema) | {k: v for k, v in node.items() if k != "$ref"}


def _default(node: dict) -> str:
    if "default" not in node:
        return ""
    value = node["default"]
    return "`" + (json.dumps(value) if not isinstance(value, str) else value) + "`"


def _item(where: str, node: dict) -> str:
    """One key as a list item, wrapped at 120 characters."""
    default = _default(node)
    head = f"- `{where}`" + (f" (default {default})" if default else "")
    text = " ".join(str(node.get("description", "")).split())
    kinds = node.get("x-kinds")
    if kinds:  # the keys of each kind and their defaults
        text += "; per kind: " + "; ".join(f"{k}: {json.dumps(v)}" for k, v in kinds.items())
    return textwrap.fill(f"{head}: {text}", 120, subsequent_indent="  ", break_on_hyphens=False)


def rows(node: dict, schema: dict, path: str = "") -> list[str]:
    """A list item per key below `node`, depth first, in the schema's order."""
    node = _resolved(node, schema)
    found = []
    for key, child in node.get("properties", {}).items():
        child = _resolved(child, schema)
        where = f"{path}.{key}" if path else key
        found.append(_item(where, child))
        found += rows(child, schema, where)
    more = node.get("additionalProperties")
    if isinstance(more, dict):
        found.append(_item(f"{path}.<name>", _resolved(more, schema)))
        found += rows(more, schema, f"{path}.<name>")
    return found


def markdown(schema: dict | None = None) -> str:
    schema = schema or load_schema()
    return HEAD + "\n".join(rows(schema, schema)) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
