"""Campaign files: validation with messages a person can act on.

Everything here runs before any device is touched: a bad value stops the run
with the key, the value and what is allowed.
"""

import copy
import difflib
import functools
import json
import os
import re
import shlex
import stat
import subprocess
import urllib.parse
from pathlib import Path

import jsonschema
import yaml

from fsbench.campaign import privilege
from fsbench.campaign.cells import targets
from fsbench.engines import table
from fsbench.engines.metadata import PER_FILE_OVERHEAD, space_needed
from fsbench.storage import layout as striping
from fsbench.storage.filesystems import FILESYSTEMS
from fsbench.toolkit.sizes import ALLOWED as SIZE_ALLOWED
from fsbench.toolkit.sizes import DURATION_ALLOWED, format_size, parse_duration, parse_size

# IO500's fixed sizes (fsbench.io500.phases sits above this layer): ior-hard's transfer, mdtest-hard's file.
IOR_HARD_TRANSFER = 47008
MDTEST_HARD_BYTES = 3901

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "config" / "schema.yaml"

# Space a filesystem needs beyond its data (journal, metadata, reserved blocks),
# as a fraction of the image, with a floor: the smallest device each mkfs accepts (Filesystem.min_image).
FS_OVERHEAD = 0.10
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


@functools.cache
def load_schema() -> dict:
    """config/schema.yaml, read once (callers must not change it), with the filesystem types of fsbench's table."""
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    names = list(FILESYSTEMS)
    fs_type = schema["$defs"]["filesystem"]["properties"]["type"]
    fs_type |= {"enum": names, "description": f"one of {', '.join(names)} (fsbench.storage.filesystems)"}
    return schema


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
    # An io500 campaign measures only what it names: block I/O cells only where it has an io: section.
    io_cells = "io" in config or config.get("io500") is None
    own_scratch = "scratch" not in config
    validator = _with_defaults(jsonschema.Draft202012Validator)(load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        raise _describe(errors[0])
    if own_scratch:
        config["scratch"] = privilege.default_scratch()
    _check_semantics(config)
    config["io_cells"] = io_cells
    _check_privileges(config)
    return config


def _check_privileges(config: dict) -> None:
    """A scratch this user can write; without root, no step that needs it (fsbench.campaign.privilege)."""
    if why := privilege.unwritable(config["scratch"]):
        raise _fail("scratch", config["scratch"], f"a folder you can make and write ({why})")
    needs_root = [] if privilege.is_root() else privilege.root_steps(config)
    if needs_root:
        key, value, allowed = needs_root[0]
        raise _fail(key, value, allowed + f"; {privilege.user()} is not root")


def _size(value, key: str) -> int:
    try:
        return parse_size(value)
    except ValueError:
        raise _fail(key, value, SIZE_ALLOWED) from None


def _duration(value, key: str) -> float:
    try:
        return parse_duration(value)
    except ValueError:
        raise _fail(key, value, DURATION_ALLOWED) from None


def _check_runtime(io: dict) -> None:
    """Time-based runs: io.size becomes the most a stream writes; an engine must be able to stop at the time and
    then read exactly what it wrote."""
    io["runtime"] = _duration(io["runtime"], "io.runtime")
    engine = io["engine"]
    if why := table.why_not(engine, table.RUNTIME):
        raise _fail("io.engine", engine, f"{table.able(table.RUNTIME)} with io.runtime ({why}), or none")
    if "rand" in io["patterns"] and (why := table.why_not(engine, table.RUNTIME_RAND_WRITE)):
        allowed = f"no rand with io.engine {engine} and io.runtime ({why}); "
        allowed += f"use {table.able(table.RUNTIME_RAND_WRITE)}, or seq, randrw, rw"
        raise _fail("io.patterns", io["patterns"], allowed)


def _check_engine(io: dict) -> None:
    """The tests asked of what io.engine can do (fsbench.engines.table)."""
    engine, can = io["engine"], table
    whys = {why for p in io["patterns"] for need in can.needs(p) if (why := can.why_not(engine, need))}
    if whys:
        ok = [p for p in io["patterns"] if not any(can.why_not(engine, need) for need in can.needs(p))] or ["seq"]
        allowed = f"{', '.join(ok)} only with io.engine {engine} ({'; '.join(sorted(whys))}; use {can.able(can.RAND)})"
        raise _fail("io.patterns", io["patterns"], allowed)
    if True in io["shared_file"] and (why := can.why_not(engine, can.SHARED)):
        allowed = f"[false] with io.engine {engine} ({why}; use {can.able(can.SHARED)})"
        raise _fail("io.shared_file", io["shared_file"], allowed)
    if True in io["shared_file"] and set(io["patterns"]) != {"seq"} and (why := can.why_not(engine, can.SHARED_RAND)):
        allowed = f"[false] with io.engine {engine} and a pattern besides seq ({why}; "
        allowed += f"use {can.able(can.SHARED_RAND)}, or patterns: [seq])"
        raise _fail("io.shared_file", io["shared_file"], allowed)
    if any(d > 1 for d in io["iodepth"]) and (why := can.why_not(engine, can.DEPTH)):
        raise _fail("io.iodepth", io["iodepth"], f"[1] with io.engine {engine} ({why}; use {can.able(can.DEPTH)})")
    if io["buffer"] == "hugepage" and (why := can.why_not(engine, can.HUGEPAGE)):
        raise _fail("io.buffer", "hugepage", f"page with io.engine {engine} ({why}; use {can.able(can.HUGEPAGE)})")


def _check_verify(io: dict) -> None:
    """io.verify: an engine that checks what it reads, data that can carry a stamp, a header (32 bytes) per piece."""
    engine = io["engine"]
    if why := table.why_not(engine, table.VERIFY):
        raise _fail(
            "io.verify", True, f"false with io.engine {engine} ({why}; use io.engine {table.able(table.VERIFY)})"
        )
    if io["data"] != "random":
        raise _fail("io.verify", True, f"false with io.data {io['data']} (a verified block is stamped: not all zeros)")
    for i, bs in enumerate(io["block_sizes"]):
        if bs % 32:
            allowed = "a multiple of 32 bytes with io.verify (every 4 KiB carries a 32-byte header)"
            raise _fail(f"io.block_sizes[{i}]", format_size(bs), allowed)


def _why_no_io_uring() -> str | None:
    from fsbench.engines.uring import why_unavailable  # only campaigns with a depth above 1 need to ask the kernel

    return why_unavailable()


# Where libpq (and so psycopg) finds a PostgreSQL password itself: a URL must not carry one, or Snakemake writes it
# into .snakemake/metadata/ (rule params) and fsbench into its logs and records.
PASSWORD_PLACES = (
    "PGPASSWORD in the environment, ~/.pgpass (or PGPASSFILE), or a service file (PGSERVICE, pg_service.conf)"
)


# libpq's connection keywords (PostgreSQL 16, "Parameter Key Words"): a store given as `host=db user=bench` or
# `service=perf` (a conninfo string, no ://) is PostgreSQL, not an SQLite file of that name.
LIBPQ_KEYWORDS = frozenset(
    "host hostaddr port dbname user password passfile require_auth channel_binding connect_timeout "
    "client_encoding options application_name fallback_application_name keepalives keepalives_idle "
    "keepalives_interval keepalives_count tcp_user_timeout replication gssencmode sslmode requiressl "
    "sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni "
    "requirepeer ssl_min_protocol_version ssl_max_protocol_version krbsrvname gsslib gssdelegation service "
    "target_session_attrs load_balance_hosts".split()
)
# One keyword = value pair as libpq reads it: the value bare, or single-quoted with backslash escapes.
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)\s*")


def conninfo(store: str) -> dict[str, str] | None:
    """A libpq key=value string's pairs (`host=db user=bench`, `service=perf`), or None when `store` is not one."""
    if "://" in store or "=" not in store:
        return None
    pairs, at = {}, 0
    while at < len(store):
        found = _PAIR.match(store, at)
        if not found or found.group(1) not in LIBPQ_KEYWORDS:
            return None
        value = found.group(2)
        pairs[found.group(1)] = re.sub(r"\\(.)", r"\1", value[1:-1]) if value.startswith("'") else value
        at = found.end()
    return pairs or None


def url_password(store: str) -> bool:
    """Whether a store carries a password: a URL's user:pw@host or ?password=, or a key=value string's password=
    (anything that is no URL and names a password= is taken to carry one: it would become a file name)."""
    if "://" not in store:
        return re.search(r"(^|\s)password\s*=", store) is not None
    parts = urllib.parse.urlsplit(store)
    try:
        given = parts.password is not None
    except ValueError:  # a netloc urllib cannot read: look for user:pw@ by hand
        given = bool(re.match(r"[^/@]*:[^/@]*@", store.split("://", 1)[1]))
    return given or "password" in urllib.parse.parse_qs(parts.query)


def without_password(store: str) -> str:
    """The store as a message may show it."""
    shown = re.sub(r"^([a-z0-9+]+://[^/:@]*):[^/@]*@", r"\1:***@", store)
    shown = re.sub(r"(^|\s)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)", r"\1\2***", shown)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", shown)


def password_refused(key: str, store: str) -> ConfigError:
    return ConfigError(
        f"config key '{key}': value {without_password(store)!r} is not allowed; allowed: a URL or libpq key=value "
        f"string without a password (it would be written into .snakemake/ and the logs); give the password in "
        f"{PASSWORD_PLACES}"
    )


def _check_semantics(config: dict) -> None:
    if isinstance(config["history"], str) and url_password(config["history"]):
        raise password_refused("history", config["history"])
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
    if "runtime" in io:
        _check_runtime(io)
        if io.get("read_from") == "other" and "rand" in io["patterns"]:
            allowed = "self with io.runtime and a rand pattern (a timed random write's blocks are its stream's own)"
            raise _fail("io.read_from", "other", allowed)
    if "log_interval" in io:
        io["log_interval"] = _duration(io["log_interval"], "io.log_interval")
    if config["precondition"] is not None:
        pre = config["precondition"]
        pre["block_size"] = _size(pre["block_size"], "precondition.block_size")
        if pre["block_size"] % DIRECT_ALIGN:
            allowed = f"a multiple of {DIRECT_ALIGN} bytes (preconditioning writes with O_DIRECT)"
            raise _fail("precondition.block_size", format_size(pre["block_size"]), allowed)
    if "steady" in io and "runtime" not in io:
        raise _fail("io.steady", io["steady"], "a steady-state test with io.runtime only (a time-based run)")
    _check_engine(io)
    if io["verify"]:
        _check_verify(io)
    deep = [d for d in io["iodepth"] if d > 1]
    if deep and (why := _why_no_io_uring()):
        raise _fail("io.iodepth", io["iodepth"], f"[1] on this machine: above 1 needs io_uring, and {why}")
    if True in io["direct"] or io["cache"] == "direct":
        for i, bs in enumerate(io["block_sizes"]):
            if bs % DIRECT_ALIGN:
                allowed = f"a multiple of {DIRECT_ALIGN} bytes with O_DIRECT"
                raise _fail(f"io.block_sizes[{i}]", format_size(bs), allowed)
    repeats = io["repeats"]
    if isinstance(repeats, dict) and "target_ci" not in repeats and not repeats["decide"]:
        raise _fail("io.repeats", repeats, load_schema()["properties"]["io"]["properties"]["repeats"]["description"])
    if isinstance(repeats, dict) and repeats["max"] < repeats["min"]:
        raise _fail("io.repeats.max", repeats["max"], f"at least io.repeats.min ({repeats['min']})")
    # A path array is measured as it is: only the other kinds need raw or a filesystem.
    bare = [a for a, spec in config["arrays"].items() if spec["kind"] != "path"]
    if bare and not config["raw"] and not config["filesystems"]:
        raise _fail("filesystems", {}, f"at least one filesystem, or raw: true (for arrays {', '.join(bare)})")
    seen = {}
    if "path" in config["filesystems"]:
        raise _fail("filesystems.path", "path", "any filesystem name but 'path', which names a path array")
    for name in [*config["arrays"], *config["filesystems"]]:
        rule = name.replace("-", "_")
        if rule in seen and seen[rule] != name:
            raise _fail(f"filesystems.{name}", name, f"a name that differs from '{seen[rule]}' by more than '-' vs '_'")
        seen[rule] = name
    if "raw" in config["filesystems"]:
        raise _fail("filesystems.raw", "raw", "any filesystem name but 'raw', which names the bare array")
    for fs in config["filesystems"].values():
        fs["mkfs"] = [str(a) for a in fs["mkfs"]]
    earlier = config["compare_to"]
    found = earlier is not None and any(os.path.isfile(p) for p in (earlier, os.path.join(earlier, "measurements.csv")))
    if earlier is not None and not found:
        raise _fail("compare_to", earlier, "an earlier campaign's result folder, or its measurements.csv")
    for name, path in config["baselines"].items():
        if not os.path.isfile(path):
            raise _fail(f"baselines.{name}", path, "an existing file: a dd log or a measurements.csv")
    meta = config["metadata"]
    if meta is not None:
        # 0: empty files (mdtest-easy's); parse_size takes sizes above zero only.
        empty = meta["file_size"] in (0, "0", "0B")
        meta["file_size"] = 0 if empty else _size(meta["file_size"], "metadata.file_size")
    allowed_devices = {os.path.realpath(d) for d in config["allow_destroy"]}
    for name, array in config["arrays"].items():
        _check_array(config, name, array, allowed_devices)
        if not targets(config, name):
            raise _fail(f"arrays.{name}", array["kind"], _nothing_to_measure(array))
        if meta is not None and array["kind"] == "loop":
            _check_inodes(config, name, array)
    if config["io500"] is not None:  # after the arrays: it asks what each measures
        _check_io500(config)
    if config["clients"] is not None:
        _check_clients(config)


def _check_clients(config: dict) -> None:
    """A scaling axis needs hosts to take its points from, and something all hosts run at once."""
    clients, n = config["clients"], len(config["hosts"])
    for i, h in enumerate(clients["hosts"]):
        if h > n:
            allowed = f"at most the number of hosts ({n}): a point's hosts are the first ones of hosts"
            raise _fail(f"clients.hosts[{i}]", h, allowed)
    paths = [a for a, spec in config["arrays"].items() if spec["kind"] == "path"]
    if not any(config["arrays"][a]["all_hosts"] for a in paths) and not (paths and config["io500"] is not None):
        allowed = "null without a path array with all_hosts: true or io500 on a path array (what all hosts run at once)"
        raise _fail("clients", clients, allowed)


def _check_io500(config: dict) -> None:
    """io500's sizes in bytes; a transferSize that divides blockSize; something with files on every array."""
    io500 = config["io500"]
    easy = io500["ior-easy"]
    for k in ("transferSize", "blockSize"):
        easy[k] = _size(easy[k], f"io500.ior-easy.{k}")
    if easy["transferSize"] % 8 or easy["transferSize"] < 16:  # IOR's words; fsbench's stamp in each transfer
        allowed = "a multiple of 8 bytes, as IOR takes, of at least 16 (each transfer's stamp: its writer and offset)"
        raise _fail("io500.ior-easy.transferSize", format_size(easy["transferSize"]), allowed)
    if easy["blockSize"] % easy["transferSize"]:
        allowed = f"a multiple of io500.ior-easy.transferSize ({format_size(easy['transferSize'])})"
        raise _fail("io500.ior-easy.blockSize", format_size(easy["blockSize"]), allowed)
    cmd = io500["drop-caches-cmd"]
    if isinstance(cmd, str):
        try:
            io500["drop-caches-cmd"] = shlex.split(cmd)
        except ValueError as e:
            raise _fail("io500.drop-caches-cmd", cmd, f"a command a shell could split ({e})") from None
    if cmd is not None and (not io500["drop-caches-cmd"] or not all(io500["drop-caches-cmd"])):
        raise _fail("io500.drop-caches-cmd", cmd, "a command and its arguments, none empty")
    p = io500["processes"]
    files = p * (io500["mdtest-easy"]["n"] + io500["mdtest-hard"]["n"] + 1) + 1
    data = p * (easy["blockSize"] + io500["ior-hard"]["segmentCount"] * IOR_HARD_TRANSFER)
    need = data + space_needed(p * io500["mdtest-hard"]["n"], MDTEST_HARD_BYTES) + space_needed(files, 0)
    for name, array in config["arrays"].items():
        if targets(config, name) == ["raw"]:
            allowed = "a filesystem or a path array: IO500's phases make files, a raw target has none"
            raise _fail("io500", f"arrays.{name}: raw", allowed)
        # A loop image of one member must hold what the phases write (the filesystem's own share beside it).
        if array["kind"] == "loop" and array["members"] == 1 and array["size"] * (1 - FS_OVERHEAD) < need:
            allowed = f"at least {-(-int(need / (1 - FS_OVERHEAD)) // 2**20)}MiB for what io500's phases write"
            raise _fail(f"arrays.{name}.size", format_size(array["size"]), allowed)
        for target in targets(config, name) if array["kind"] == "loop" and array["members"] == 1 else []:
            fs = config["filesystems"].get(target)
            if fs and FILESYSTEMS[fs["type"]].fixed_inodes and ext_inodes(fs["mkfs"], array["size"]) < files + 16:
                allowed = f"options that give at least {files + 16} inodes for io500's files on arrays.{name}"
                raise _fail(f"filesystems.{target}.mkfs", fs["mkfs"], allowed)


REQUIRED = "required"  # in the schema's x-kinds: a key the campaign must give
OPTIONAL = "optional"  # in the schema's x-kinds: a key without a default, absent unless given (so in no cell's params)


def kind_keys(kind: str) -> dict:
    """The keys of an array of `kind` and their defaults, as the schema's x-kinds lists them."""
    return load_schema()["$defs"]["array"]["x-kinds"][kind]


def _check_layout(array: dict, key: str) -> None:
    """A path array's striping: sizes in bytes, and only what the filesystem it lies on can take."""
    layout = array["layout"]
    for k in ("stripe_unit", "object_size"):
        if k in layout:
            layout[k] = _size(layout[k], f"{key}.layout.{k}")
    fs_type = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", array["path"]], capture_output=True, text=True)
    if why := striping.problem(layout, fs_type.stdout.strip()):
        raise _fail(f"{key}.layout", layout, why)


MD_MIN_MEMBERS = {0: 2, 1: 2, 4: 3, 5: 3, 6: 4, 10: 2}
# Filesystems that can span several devices themselves (mkfs over all members).


def _check_array(config: dict, name: str, array: dict, allowed_devices: set) -> None:
    kind, key = array["kind"], f"arrays.{name}"
    keys = kind_keys(kind)
    for k, v in array.items():
        if k != "kind" and k not in keys:
            raise _fail(f"{key}.{k}", v, f"no '{k}' for kind {kind}; its keys are: kind, {', '.join(keys)}")
    for k, default in keys.items():
        if k not in array:
            if default == REQUIRED:
                allowed = load_schema()["$defs"]["array"]["properties"][k]["description"]
                raise ConfigError(f"config key '{key}' lacks '{k}', which kind {kind} requires; allowed: {allowed}")
            if default != OPTIONAL:
                array[k] = copy.deepcopy(default)
    for k in ("size", "chunk"):
        if k in array:
            array[k] = _size(array[k], f"{key}.{k}")
    members = array.get("members") if kind == "loop" else len(array.get("devices", [1]))
    if array.get("level") is not None and members < MD_MIN_MEMBERS[array["level"]]:
        raise _fail(
            f"{key}.level",
            array["level"],
            f"a level that {members} member(s) can build "
            f"(RAID {array['level']} needs at least {MD_MIN_MEMBERS[array['level']]})",
        )
    listed = {"device": [array.get("device")], "mdadm": array.get("devices", [])}.get(kind, [])
    for i, dev in enumerate(listed):
        where = f"{key}.device" if kind == "device" else f"{key}.devices[{i}]"
        if not os.path.exists(dev):
            raise _fail(where, dev, "an existing block device; this one does not exist")
        if not stat.S_ISBLK(os.stat(dev).st_mode):
            raise _fail(where, dev, "a block device; this is not one")
        if os.path.realpath(dev) not in allowed_devices:
            raise _fail(where, dev, "a device also listed in allow_destroy (fsbench overwrites only those)")
    if kind == "path" and not os.path.isdir(array["path"]):
        raise _fail(f"{key}.path", array["path"], "an existing directory")
    if kind == "path" and (why := privilege.unwritable(array["path"])):
        raise _fail(f"{key}.path", array["path"], f"a directory you can write ({why})")
    if kind == "path" and "layout" in array:
        _check_layout(array, key)
    if array.get("all_hosts") and not config["hosts"]:
        raise _fail(f"{key}.all_hosts", True, "true only with hosts: [...], the nodes that write and read at once")
    if kind == "loop":
        io = config["io"]
        written = io["size"] * max(io["streams"])
        fs_types = [config["filesystems"][t]["type"] for t in targets(config, name) if t != "raw"]
        per_member = members if array["level"] is None and fs_types else 1
        need = int(written * (1 + FS_OVERHEAD)) if fs_types else written
        need = max([-(-need // per_member)] + [FILESYSTEMS[t].min_image for t in fs_types])
        if array["size"] < need:
            raise _fail(
                f"{key}.size",
                format_size(array["size"]),
                f"at least {-(-need // 2**20)}MiB: io.size × streams ({format_size(written)}) plus filesystem overhead",
            )
        meta = config["metadata"]
        small = space_needed(meta["files"] * max(io["streams"]), meta["file_size"]) if meta and fs_types else 0
        if array["size"] * per_member < small * (1 + FS_OVERHEAD):
            at_least = -(-int(small * (1 + FS_OVERHEAD)) // per_member // 2**20)
            raise _fail(
                f"{key}.size",
                format_size(array["size"]),
                f"at least {at_least}MiB for the metadata test: metadata.files × streams × (file_size rounded up to "
                f"4 KiB + {PER_FILE_OVERHEAD} B per file) = {format_size(small)}, plus filesystem overhead",
            )


# mke2fs's bytes per inode (-i) by usage type (-T, /etc/mke2fs.conf as shipped), and for an image under 512 MiB
# without -T (its "small" type).
EXT_INODE_RATIO = {
    "default": 16384,
    "small": 4096,
    "floppy": 8192,
    "news": 4096,
    "largefile": 2**20,
    "largefile4": 4 * 2**20,
    "huge": 65536,
    "big": 32768,
}


def ext_inodes(mkfs: list[str], size: int) -> int:
    """About how many inodes mke2fs makes on `size` bytes with these options: -N as given, else size / ratio."""
    args = list(mkfs)
    if "-N" in args and args.index("-N") + 1 < len(args):
        return int(args[args.index("-N") + 1])
    if "-i" in args and args.index("-i") + 1 < len(args):
        return size // int(args[args.index("-i") + 1])
    usage = args[args.index("-T") + 1] if "-T" in args and args.index("-T") + 1 < len(args) else None
    ratio = EXT_INODE_RATIO.get(usage or ("small" if size < 512 * 2**20 else "default"), 16384)
    return size // ratio


def _check_inodes(config: dict, name: str, array: dict) -> None:
    """ext2-4 have a fixed inode table: refuse a metadata test that would run out of it on a loop image."""
    meta, streams = config["metadata"], max(config["io"]["streams"])
    need = streams * (meta["files"] + meta["dirs"] + 1) + 16  # the files, their folders, the root's own
    if array["members"] > 1:
        return  # an md array's size is not one image's; the step checks the real filesystem before it starts
    for target in targets(config, name):
        fs = config["filesystems"].get(target)
        if fs and FILESYSTEMS[fs["type"]].fixed_inodes:
            have = ext_inodes(fs["mkfs"], array["size"])
            if have < need:
                raise _fail(
                    f"filesystems.{target}.mkfs",
                    fs["mkfs"],
                    f"options that give at least {need} inodes for the metadata test (metadata.files × streams "
                    f"plus folders) on arrays.{name}: these make about {have} on {format_size(array['size'])}; "
                    "drop -T largefile/largefile4, give -N or a smaller -i, or make metadata.files smaller",
                )


def _nothing_to_measure(array: dict) -> str:
    if array["kind"] == "loop" and array["members"] > 1 and array["level"] is None:
        return "with several members and no md level, only filesystems that span devices (btrfs): add one, or set level"
    return "an array with something to measure: raw: true or a filesystem"
