"""Campaign files: validation with messages a person can act on, and the cells they describe.

Everything here runs before any device is touched: a bad value stops the run
with the key, the value and what is allowed.
"""

import copy
import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

from .sizes import ALLOWED as SIZE_ALLOWED
from .sizes import format_size, parse_size

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"

# Space a filesystem needs beyond its data (journal, metadata, reserved blocks),
# as a fraction of the image, with a floor: xfs refuses images under 300 MiB.
FS_OVERHEAD = 0.10
FS_MIN_IMAGE = {"xfs": 300 * 2**20, "btrfs": 128 * 2**20}
# O_DIRECT needs block sizes (and buffers) aligned to the device's logical block; 4 KiB covers all.
DIRECT_ALIGN = 4096


class ConfigError(ValueError):
    """A campaign value that fsbench refuses, with key, value and what is allowed."""


def _key(path) -> str:
    key = ""
    for part in path:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key or "(top level)"


def _show(value) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def _fail(key: str, value, allowed: str) -> ConfigError:
    return ConfigError(f"config key '{key}': value {_show(value)} is not allowed; allowed: {allowed}")


def load_schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _with_defaults(validator_class):
    """A validator that fills in each property's default before checking it (recursively)."""
    check_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, props, instance, schema):
        if isinstance(instance, dict):
            for name, sub in props.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, props, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties})


def _describe(error: jsonschema.ValidationError) -> ConfigError:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        key = _key(path + [unknown[0]]) if unknown else _key(path)
        hint = difflib.get_close_matches(str(unknown[0]), allowed, n=1) if unknown else []
        maybe = f" (did you mean '{hint[0]}'?)" if hint else ""
        return ConfigError(f"config key '{key}' is not known{maybe}; allowed keys here: {', '.join(allowed)}")
    if error.validator == "required":
        missing = error.message.split("'")[1]
        allowed = error.schema["properties"][missing].get("description", "see config/schema.yaml")
        return ConfigError(f"config key '{_key(path)}' lacks '{missing}', which is required; allowed: {allowed}")
    allowed = error.schema.get("description")
    if not allowed:
        if error.validator == "enum":
            allowed = "one of " + ", ".join(_show(v) for v in error.validator_value)
        elif error.validator in ("minimum", "maximum"):
            allowed = f"{'at least' if error.validator == 'minimum' else 'at most'} {error.validator_value}"
        else:
            allowed = error.message
    return _fail(_key(path), error.instance, allowed)


def validate(config: dict) -> dict:
    """The campaign with defaults filled in and sizes in bytes; ConfigError on the first bad value."""
    config = copy.deepcopy(config) if config is not None else {}
    if not isinstance(config, dict):
        raise _fail("(top level)", config, "a mapping of campaign keys")
    validator = _with_defaults(jsonschema.Draft202012Validator)(load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        raise _describe(errors[0])
    _check_semantics(config)
    return config


def _size(value, key: str) -> int:
    try:
        return parse_size(value)
    except ValueError:
        raise _fail(key, value, SIZE_ALLOWED) from None


def _check_semantics(config: dict) -> None:
    io = config["io"]
    io["size"] = _size(io["size"], "io.size")
    io["block_sizes"] = [_size(bs, f"io.block_sizes[{i}]") for i, bs in enumerate(io["block_sizes"])]
    if len(set(io["block_sizes"])) != len(io["block_sizes"]):
        raise _fail("io.block_sizes", [format_size(b) for b in io["block_sizes"]], "each block size once")
    for i, bs in enumerate(io["block_sizes"]):
        if bs > io["size"]:
            raise _fail(f"io.block_sizes[{i}]", format_size(bs), f"at most io.size ({format_size(io['size'])})")
        if io["size"] % bs:
            raise _fail(
                f"io.block_sizes[{i}]",
                format_size(bs),
                f"a divisor of io.size ({format_size(io['size'])}), "
                "so that count = size / block size moves exactly io.size bytes",
            )
    if io["engine"] == "dd" and "rand" in io["patterns"]:
        allowed = "seq only with io.engine dd (dd cannot seek at random; use python or fio)"
        raise _fail("io.patterns", io["patterns"], allowed)
    if True in io["direct"] or io["cache"] == "direct":
        for i, bs in enumerate(io["block_sizes"]):
            if bs % DIRECT_ALIGN:
                allowed = f"a multiple of {DIRECT_ALIGN} bytes with O_DIRECT"
                raise _fail(f"io.block_sizes[{i}]", format_size(bs), allowed)
    if not config["raw"] and not config["filesystems"]:
        raise _fail("filesystems", {}, "at least one filesystem, or raw: true")
    seen = {}
    for name in [*config["arrays"], *config["filesystems"]]:
        rule = name.replace("-", "_")
        if rule in seen and seen[rule] != name:
            raise _fail(f"filesystems.{name}", name, f"a name that differs from '{seen[rule]}' by more than '-' vs '_'")
        seen[rule] = name
    if "raw" in config["filesystems"]:
        raise _fail("filesystems.raw", "raw", "any filesystem name but 'raw', which names the bare array")
    for fs in config["filesystems"].values():
        fs["mkfs"] = [str(a) for a in fs["mkfs"]]
    written = io["size"] * max(io["streams"])
    for name, array in config["arrays"].items():
        array["size"] = _size(array["size"], f"arrays.{name}.size")
        need = int(written * (1 + FS_OVERHEAD)) if config["filesystems"] else written
        for fs in config["filesystems"].values():
            need = max(need, FS_MIN_IMAGE.get(fs["type"], 0))
        if array["kind"] == "loop" and array["size"] < need:
            raise _fail(
                f"arrays.{name}.size",
                format_size(array["size"]),
                f"at least {-(-need // 2**20)}MiB: io.size × streams ({format_size(written)}) plus filesystem overhead",
            )


@dataclass(frozen=True)
class Cell:
    """One measurement: a write and the read of what it wrote."""

    array: str
    target: str
    pattern: str
    block_size: int
    direct: bool
    streams: int
    rep: int

    @property
    def test(self) -> str:
        io = "direct" if self.direct else "buffered"
        return f"{self.pattern}-{format_size(self.block_size)}-{io}-{self.streams}s"


def targets(config: dict, array: str) -> list[str]:
    """What is measured on an array, in order: the bare array first, then each filesystem."""
    return (["raw"] if config["raw"] else []) + list(config["filesystems"])


def cells(config: dict):
    """Every cell, repeats outermost so that drift over time spreads over all tests."""
    io = config["io"]
    for array in config["arrays"]:
        for target in targets(config, array):
            for rep in range(1, io["repeats"] + 1):
                for bs in io["block_sizes"]:
                    for pattern in io["patterns"]:
                        for direct in io["direct"]:
                            for streams in io["streams"]:
                                yield Cell(array, target, pattern, bs, direct, streams, rep)


def fingerprint(*parts) -> str:
    """A short stable digest of settings, to tell whether a device holds what the config asks."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
