"""The results store: every measured row of every run, in one SQLite file or one PostgreSQL database.

Through SQLAlchemy Core, so one schema and one append serve both. A row is known by its identity (campaign,
host, array, target, test, op, rep, started_at, engine): appending a row the store holds already does nothing,
so rerunning a finished campaign adds nothing, and a re-measured cell adds just its new rows (new started_at).
An append is one transaction: a run killed during it leaves the store as it was, and its next run appends it
all. Concurrent appends queue up: SQLite takes its write lock at BEGIN IMMEDIATE and waits for it up to
BUSY_SECONDS; PostgreSQL lets both write and drops the duplicates (ON CONFLICT DO NOTHING).

An SQLite store needs working file locks: keep it on a local disk, not on NFS or Lustre; a team shares a
PostgreSQL store.
"""

import hashlib
import json
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from fsbench.measurement.rows import META_TEST, PLACE, TEST

from .series import plain

BUSY_SECONDS = 600  # how long an SQLite append waits for another one to finish
# What tells one stored row from another (its id is their hash: keep the order).
IDENTITY = [*(c for c in PLACE if c != "fs_type"), *TEST, *META_TEST, "rep", "started_at", "engine"]
SCHEMA_VERSION = 1

meta = sa.MetaData()
rows = sa.Table(
    "measurements",
    meta,
    sa.Column("row_id", sa.String(64), primary_key=True),  # sha256 of the identity (NULLs never unique in SQL)
    sa.Column("campaign", sa.Text, nullable=False, index=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("array", sa.Text, nullable=False),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("op", sa.Text, nullable=False),
    sa.Column("rep", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("series", sa.String(16), nullable=False, index=True),  # hash of the series key (fsbench.history.series)
    sa.Column("key", sa.Text, nullable=False),  # the series key, JSON
    sa.Column("context", sa.Text, nullable=False),  # the run's context, JSON
    sa.Column("row", sa.Text, nullable=False),  # the measurements.csv row, JSON
    sa.Column("appended_at", sa.Text, nullable=False),
)
marks = sa.Table(
    "marks",
    meta,
    sa.Column("campaign", sa.Text, primary_key=True),  # the first run of a new baseline
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("marked_at", sa.Text, nullable=False),
)
info = sa.Table("fsbench", meta, sa.Column("schema_version", sa.Integer, nullable=False))


def url_of(store: str) -> str:
    """A store as the config or --store gives it: a URL, or a path to an SQLite file."""
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


def connect(store: str) -> sa.Engine:
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
    return sa.create_engine(url)


def _create(conn) -> None:
    if conn.dialect.name == "postgresql":  # two first appends at once: one creates, the other waits
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7235410)"))
    meta.create_all(conn, checkfirst=True)
    if conn.execute(sa.select(sa.func.count()).select_from(info)).scalar() == 0:
        conn.execute(info.insert().values(schema_version=SCHEMA_VERSION))


def row_id(row: dict) -> str:
    ident = json.dumps([str(plain(row.get(c))) for c in IDENTITY])
    return hashlib.sha256(ident.encode()).hexdigest()


def _insert(dialect: str):
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(rows).on_conflict_do_nothing(
        index_elements=["row_id"]
    )


def append(store: str, entries: list[dict], batch: int = 500, between_batches=None) -> dict:
    """Append (row, key, context) entries in one transaction; what was new, per campaign.

    `between_batches` is called inside the transaction after each batch (tests stop the process there)."""
    engine = connect(store)
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
            insert = _insert(conn.dialect.name).returning(rows.c.campaign)  # only the rows it inserted
            for i in range(0, len(values), batch):
                for campaign in conn.execute(insert, values[i : i + batch]).scalars():
                    added[campaign] = added.get(campaign, 0) + 1
                if between_batches:
                    between_batches()
    finally:
        engine.dispose()
    return {"store": describe(store), "rows": len(values), "added": sum(added.values()), "added_by_campaign": added}


def load(store: str) -> list[dict]:
    """Every row of the store: the measurement row with its `series`, `key` and `context`."""
    engine = connect(store)
    try:
        with reaching(store), engine.connect() as conn:
            if not sa.inspect(conn).has_table("measurements"):
                return []
            found = conn.execute(sa.select(rows.c.series, rows.c.key, rows.c.context, rows.c.row)).all()
    finally:
        engine.dispose()
    return [
        json.loads(r.row) | {"series": r.series, "key": json.loads(r.key), "context": json.loads(r.context)}
        for r in found
    ]


def load_marks(store: str) -> dict[str, str]:
    engine = connect(store)
    try:
        with reaching(store), engine.connect() as conn:
            if not sa.inspect(conn).has_table("marks"):
                return {}
            return dict(conn.execute(sa.select(marks.c.campaign, marks.c.reason)).all())
    finally:
        engine.dispose()


def mark(store: str, campaign: str, reason: str) -> None:
    """Campaign `campaign` starts a new baseline: a change up to it is intended, not reported."""
    engine = connect(store)
    try:
        with reaching(store), engine.begin() as conn:
            _create(conn)
            known = conn.execute(sa.select(sa.func.count()).where(rows.c.campaign == campaign)).scalar()
            if not known:
                raise ValueError(f"no run '{campaign}' in the store {describe(store)}")
            conn.execute(marks.delete().where(marks.c.campaign == campaign))
            conn.execute(
                marks.insert().values(campaign=campaign, reason=reason, marked_at=datetime.now(UTC).isoformat())
            )
    finally:
        engine.dispose()
