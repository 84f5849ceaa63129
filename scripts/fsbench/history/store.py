"""The results store: every measured row of every run, in one SQLite file or one PostgreSQL database.

Through SQLAlchemy Core, so one schema and one append serve both. A row is known by its identity (campaign,
host, array, target, test, op, rep, started_at, engine): appending a row the store holds already does nothing,
so rerunning a finished campaign adds nothing, and a re-measured cell adds just its new rows (new started_at).
An append is one transaction: a run killed during it leaves the store as it was, and its next run appends it
all. Concurrent appends queue up: SQLite takes its write lock at BEGIN IMMEDIATE and waits for it up to
BUSY_SECONDS; PostgreSQL lets both write and drops the duplicates (ON CONFLICT DO NOTHING).

An SQLite store needs working file locks: keep it on a local disk, not on NFS or Lustre (the run's log warns when
it is on a network or FUSE filesystem); a team shares a PostgreSQL store (a URL, or libpq's key=value string).
Neither ever holds a password (it would be written into .snakemake/ and the logs): libpq finds it in PGPASSWORD,
~/.pgpass or a service file.
"""

import hashlib
import json
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from fsbench.campaign.config import conninfo, password_refused, url_password
from fsbench.measurement.rows import META_TEST, TEST, WHERE

from .key import plain

BUSY_SECONDS = 600  # how long an SQLite append waits for another one to finish
TIMEOUT = 10  # seconds a PostgreSQL server has to answer a connection (history_timeout)
# Filesystems where SQLite's file locks are not to be trusted (statfs names, as /proc/self/mountinfo gives them).
SHARED_FS = ("nfs", "nfs4", "lustre", "gpfs", "beegfs", "fuse")
# What tells one stored row from another (its id is their hash: keep the order).
IDENTITY = [*(c for c in WHERE if c != "fs_type"), *TEST, *META_TEST, "rep", "started_at", "engine"]
SCHEMA_VERSION = 2  # 2: the run column

meta = sa.MetaData()
rows = sa.Table(
    "measurements",
    meta,
    sa.Column("row_id", sa.String(64), primary_key=True),  # sha256 of the identity (NULLs never unique in SQL)
    sa.Column("campaign", sa.Text, nullable=False, index=True),
    # The measuring pass the row came from: "<campaign> <first started_at>" of the rows new to the store in one
    # append. A rerun of aggregate/history adds no row, so no run; a re-measurement adds new rows, so a new run.
    sa.Column("run", sa.Text, index=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("array", sa.Text, nullable=False),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("op", sa.Text, nullable=False),
    sa.Column("rep", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("series", sa.String(16), nullable=False, index=True),  # hash of the series key (fsbench.history.key)
    sa.Column("key", sa.Text, nullable=False),  # the series key, JSON
    sa.Column("context", sa.Text, nullable=False),  # the run's context, JSON
    sa.Column("row", sa.Text, nullable=False),  # the measurements.csv row, JSON
    sa.Column("appended_at", sa.Text, nullable=False),
)
marks = sa.Table(
    "marks",
    meta,
    sa.Column("campaign", sa.Text, primary_key=True),  # the first run of a new baseline: a run, or a campaign's first
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("marked_at", sa.Text, nullable=False),
)
info = sa.Table("fsbench", meta, sa.Column("schema_version", sa.Integer, nullable=False))


def url_of(store: str) -> str:
    """A store as the config or --store gives it: a URL or a libpq key=value string (never with a password), or a
    path to an SQLite file."""
    if url_password(store):
        raise password_refused("history", store)
    if (pairs := conninfo(store)) is not None:  # host=db user=bench, service=perf: libpq's keywords, as query
        return sa.engine.URL.create("postgresql+psycopg", query=pairs).render_as_string()
    if "://" in store:
        # postgresql://… means psycopg 3 (SQLAlchemy's default for the bare scheme is psycopg2, not installed)
        return "postgresql+psycopg://" + store.split("://", 1)[1] if store.startswith("postgresql://") else store
    return f"sqlite:///{Path(store).resolve()}"


def describe(store: str) -> str:
    """The store for messages: a URL without its password."""
    return sa.engine.make_url(url_of(store)).render_as_string(hide_password=True)


@contextmanager
def reaching(store: str):
    """A store that cannot be reached (no server, refused, locked too long, not a database) as an OSError that
    says which store and why, in one line."""
    try:
        yield
    except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.DatabaseError) as e:
        why = str(getattr(e, "orig", e)).strip().splitlines()
        raise OSError(f"results store {describe(store)}: {why[0] if why else type(e).__name__}") from None


def filesystem_type(path: Path) -> str:
    """The type of the filesystem `path` lies on, as /proc/self/mountinfo names it (the deepest mount above it)."""
    path, best, found = Path(path).resolve(), -1, ""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = Path(fields[4].encode().decode("unicode_escape"))  # spaces and such come as \040 octal escapes
        if (path == point or point in path.parents) and len(
            point.parts
        ) >= best:  # the later of two mounts on one point
            best, found = len(point.parts), fields[fields.index("-") + 1]
    return found


def lock_warning(store: str) -> str | None:
    """Why an SQLite store's folder is a bad place for it (a network or FUSE filesystem), or None."""
    url = url_of(store)
    if not url.startswith("sqlite:"):
        return None
    folder = Path(url.removeprefix("sqlite:///")).parent
    while not folder.exists():
        folder = folder.parent
    kind = filesystem_type(folder)
    if kind.split(".")[0] in SHARED_FS:
        return (
            f"the results store {folder} is on {kind}, where SQLite's file locks may not hold (two runs appending "
            "at once can corrupt it): keep it on a local disk, or share a PostgreSQL store (history: postgresql://…)"
        )
    return None


def connect(store: str, timeout: float = TIMEOUT) -> sa.Engine:
    url = url_of(store)
    if url.startswith("sqlite:"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": BUSY_SECONDS})

        # SQLAlchemy's documented recipe: let SQLAlchemy, not the sqlite3 module, begin transactions, and begin
        # them IMMEDIATE so that two appends queue at the start instead of failing on a lock upgrade.
        @sa.event.listens_for(engine, "connect")
        def _connect(dbapi_connection, _record):
            dbapi_connection.isolation_level = None

        @sa.event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    # libpq's connect_timeout: a server that drops packets fails the step in `timeout` s instead of hanging it
    return sa.create_engine(url, connect_args={"connect_timeout": max(1, round(timeout))})


def _create(conn) -> None:
    if conn.dialect.name == "postgresql":  # two first appends at once: one creates, the other waits
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7235410)"))
    meta.create_all(conn, checkfirst=True)
    if conn.execute(sa.select(sa.func.count()).select_from(info)).scalar() == 0:
        conn.execute(info.insert().values(schema_version=SCHEMA_VERSION))
    if "run" not in {c["name"] for c in sa.inspect(conn).get_columns("measurements")}:
        # a store of schema 1 (a run was a campaign): each campaign's rows become one run
        conn.execute(sa.text("ALTER TABLE measurements ADD COLUMN run TEXT"))
        conn.execute(sa.text("CREATE INDEX IF NOT EXISTS ix_measurements_run ON measurements (run)"))
        starts = conn.execute(sa.select(rows.c.campaign, sa.func.min(rows.c.started_at)).group_by(rows.c.campaign))
        for campaign, started in starts.all():
            conn.execute(rows.update().where(rows.c.campaign == campaign).values(run=f"{campaign} {started}"))
        conn.execute(info.update().values(schema_version=SCHEMA_VERSION))


def row_id(row: dict) -> str:
    ident = json.dumps([str(plain(row.get(c))) for c in IDENTITY])
    return hashlib.sha256(ident.encode()).hexdigest()


def _insert(dialect: str):
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(rows).on_conflict_do_nothing(
        index_elements=["row_id"]
    )


def append(store: str, entries: list[dict], batch: int = 500, between_batches=None, timeout: float = TIMEOUT) -> dict:
    """Append (row, key, context) entries in one transaction; what was new, per campaign.

    `between_batches` is called inside the transaction after each batch (tests stop the process there)."""
    engine = connect(store, timeout)
    now = datetime.now(UTC).isoformat()
    values = []
    for e in entries:
        row = {k: plain(v) for k, v in e["row"].items()}
        values.append(
            {
                "row_id": row_id(row),
                "campaign": str(row["campaign"]),
                "host": str(row["host"]),
                "array": str(row["array"]),
                "target": str(row["target"]),
                "op": str(row["op"]),
                "rep": int(row["rep"]),
                "started_at": str(row["started_at"]),
                "series": e["series"],
                "key": json.dumps(e["key"], sort_keys=True),
                "context": json.dumps(e["context"], sort_keys=True),
                "row": json.dumps(row),
                "appended_at": now,
            }
        )
    added = {}
    try:
        with reaching(store), engine.begin() as conn:
            _create(conn)
            known = set()
            for i in range(0, len(values), batch):
                ids = [v["row_id"] for v in values[i : i + batch]]
                known |= set(conn.execute(sa.select(rows.c.row_id).where(rows.c.row_id.in_(ids))).scalars())
            new = [v for v in values if v["row_id"] not in known]
            run = runs_of(new)
            for v in new:
                v["run"] = run[v["campaign"]]
            insert = _insert(conn.dialect.name).returning(rows.c.run)  # only the rows it inserted
            for i in range(0, len(new), batch):
                for run in conn.execute(insert, new[i : i + batch]).scalars():
                    added[run] = added.get(run, 0) + 1
                if between_batches:
                    between_batches()
    finally:
        engine.dispose()
    return {"store": describe(store), "rows": len(values), "added": sum(added.values()), "added_by_run": added}


def runs_of(new: list[dict]) -> dict[str, str]:
    """The run of the rows new to the store, per campaign: its name and the first of their started_at."""
    first = {}
    for v in new:
        first[v["campaign"]] = min(first.get(v["campaign"], v["started_at"]), v["started_at"])
    return {campaign: f"{campaign} {started}" for campaign, started in first.items()}


def load(store: str, timeout: float = TIMEOUT) -> list[dict]:
    """Every row of the store: the measurement row with its `series`, `key` and `context`."""
    engine = connect(store, timeout)
    try:
        with reaching(store), engine.connect() as conn:
            if not sa.inspect(conn).has_table("measurements"):
                return []
            _create_if_old(conn)
            found = conn.execute(sa.select(rows.c.run, rows.c.series, rows.c.key, rows.c.context, rows.c.row)).all()
    finally:
        engine.dispose()
    return [
        json.loads(r.row)
        | {"run": r.run, "series": r.series, "key": json.loads(r.key), "context": json.loads(r.context)}
        for r in found
    ]


def _create_if_old(conn) -> None:
    """Reading a store of an older schema: bring it up to date first."""
    if "run" not in {c["name"] for c in sa.inspect(conn).get_columns("measurements")}:
        _create(conn)
        conn.commit()


def load_marks(store: str, timeout: float = TIMEOUT) -> dict[str, str]:
    engine = connect(store, timeout)
    try:
        with reaching(store), engine.connect() as conn:
            if not sa.inspect(conn).has_table("marks"):
                return {}
            return dict(conn.execute(sa.select(marks.c.campaign, marks.c.reason)).all())
    finally:
        engine.dispose()


def mark(store: str, campaign: str, reason: str, timeout: float = TIMEOUT) -> None:
    """Run `campaign` (as `history runs` names it, or a campaign name: its first run) starts a new baseline: a
    change up to it is intended, not reported."""
    engine = connect(store, timeout)
    try:
        with reaching(store), engine.begin() as conn:
            _create(conn)
            named = sa.or_(rows.c.campaign == campaign, rows.c.run == campaign)
            known = conn.execute(sa.select(sa.func.count()).where(named)).scalar()
            if not known:
                raise ValueError(f"no run '{campaign}' in the store {describe(store)}")
            conn.execute(marks.delete().where(marks.c.campaign == campaign))
            conn.execute(
                marks.insert().values(campaign=campaign, reason=reason, marked_at=datetime.now(UTC).isoformat())
            )
    finally:
        engine.dispose()
