"""Writes the PyIceberg tables of lakegw's fidelity harness.

Usage: python3 write_tables.py DATA_DIR [expire_live]

The tables go into the embedded catalog of a lakegw data directory (an
Iceberg SQL catalog on SQLite at DATA_DIR/catalog.db, catalog name "lakegw",
warehouse DATA_DIR/warehouse), so the gateway serves them as topics without
registration. One JSON line per table goes to stdout:

    {"name": "py.cow", "expect": [{"snapshots": [id, ...], "counts": {"c": n, "u": n, "d": n}}, ...],
     "notes": [...]}

"expect" holds the exact change events the gateway must derive, summed over
the listed snapshots; PyIceberg itself computes them (rows matched by a
delete filter before the commit, rows appended).
"""

import datetime
import decimal
import json
import os
import random
import sys
import uuid
import warnings

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import AlwaysTrue, EqualTo, GreaterThanOrEqual, In, LessThan, Or
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

# Small files and row groups, so that deletes span several of each.
SMALL_FILES = {
    "write.parquet.row-group-limit": "64",
    "write.target-file-size-bytes": "16384",
    "write.parquet.compression-codec": "zstd",
}


class Recorder:
    """Tracks the snapshots each operation adds and what they must yield."""

    def __init__(self, table):
        self.table = table
        self.expect = []
        self.notes = []

    def _ids(self):
        self.table.refresh()
        return [s.snapshot_id for s in self.table.snapshots()]

    def run(self, fn, counts=None, want_snapshots=None):
        before = set(self._ids())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        for w in caught:
            self.notes.append(str(w.message))
        new = [i for i in self._ids() if i not in before]
        if want_snapshots is not None and len(new) != want_snapshots:
            raise SystemExit(f"{self.table.name()}: operation made {len(new)} snapshots, want {want_snapshots}")
        if counts is not None:
            self.expect.append({"snapshots": new, "counts": {k: v for k, v in counts.items() if v}})
        return new

    def count(self, expr):
        return self.table.scan(row_filter=expr).to_arrow().num_rows

    def emit(self, name):
        print(json.dumps({"name": name, "expect": self.expect, "notes": self.notes}), flush=True)


def wide_schema():
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "amount", DecimalType(12, 3)),
        NestedField(4, "price", FloatType()),
        NestedField(5, "score", DoubleType()),
        NestedField(6, "flag", BooleanType()),
        NestedField(7, "day", DateType()),
        NestedField(8, "tod", TimeType()),
        NestedField(9, "ts", TimestampType()),
        NestedField(10, "tstz", TimestamptzType()),
        NestedField(11, "uid", UUIDType()),
        NestedField(12, "bin", BinaryType()),
        NestedField(13, "fx", FixedType(3)),
        NestedField(14, "tags", ListType(15, StringType(), element_required=False)),
        NestedField(16, "attrs", MapType(17, StringType(), 18, LongType(), value_required=False)),
        NestedField(
            19,
            "loc",
            StructType(NestedField(20, "lat", DoubleType()), NestedField(21, "label", StringType())),
        ),
        identifier_field_ids=[1],
    )


def wide_row(i, version):
    r = random.Random(i * 1000 + version)
    if i % 13 == 0:
        return {"id": i, **{k: None for k in ("name", "amount", "price", "score", "flag", "day", "tod", "ts",
                                               "tstz", "uid", "bin", "fx", "tags", "attrs", "loc")}}
    return {
        "id": i,
        "name": f"row {i} v{version}" + (' "q" ünï\n' if i % 5 == 0 else ""),
        "amount": decimal.Decimal(r.randint(-10**9, 10**9)).scaleb(-3),
        "price": r.uniform(-1e4, 1e4),
        "score": r.gauss(0, 1e9),
        "flag": r.random() < 0.5,
        "day": datetime.date(1950, 1, 1) + datetime.timedelta(days=r.randint(0, 45000)),
        "tod": datetime.time(r.randint(0, 23), r.randint(0, 59), r.randint(0, 59), r.randint(0, 999999)),
        "ts": datetime.datetime(1969, 12, 31, 23, 0, 0) + datetime.timedelta(microseconds=r.randint(0, 10**15)),
        "tstz": datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
        + datetime.timedelta(microseconds=r.randint(-10**15, 10**15)),
        "uid": uuid.UUID(int=r.getrandbits(128)).bytes,
        "bin": r.randbytes(r.randint(0, 9)),
        "fx": r.randbytes(3),
        "tags": [] if i % 3 == 0 else [f"t{i}", None, f"v{version}"],
        "attrs": [(f"k{j}", i * j) for j in range(i % 4)],
        "loc": {"lat": r.uniform(-90, 90), "label": None if i % 4 == 0 else f"L{i}"},
    }


def arrow_rows(table, rows):
    return pa.Table.from_pylist(rows, schema=table.schema().as_arrow())


def write_cow(cat):
    """Copy-on-write deletes and updates over several files and row groups,
    upserts by identifier field, empty snapshots; every value type."""
    t = cat.create_table("py.cow", schema=wide_schema(), properties=SMALL_FILES)
    rec = Recorder(t)
    rows = [wide_row(i, 1) for i in range(600)]
    rec.run(lambda: t.append(arrow_rows(t, rows)), {"c": 600}, want_snapshots=1)
    more = [wide_row(i, 1) for i in range(600, 1000)]
    rec.run(lambda: t.append(arrow_rows(t, more)), {"c": 400}, want_snapshots=1)
    nfiles = len(list(t.scan().plan_files()))
    if nfiles < 4:
        raise SystemExit(f"py.cow: {nfiles} data files, want several")
    rec.notes.append(f"{nfiles} data files before the first delete")
    # A copy-on-write delete touching every file: only the deleted rows are
    # changes, the rewritten rest is carry-over.
    f = EqualTo("flag", True)
    n = rec.count(f)
    rec.run(lambda: t.delete(f), {"d": n})
    # A delete by id range that drops some files whole and rewrites others.
    f = LessThan("id", 200)
    n = rec.count(f)
    rec.run(lambda: t.delete(f), {"d": n})
    # An update of 30 keys with overwrite: PyIceberg commits a copy-on-write
    # delete snapshot, then an append snapshot.
    ids = [i for i in range(200, 1000, 7) if i % 13][:30]
    f = In("id", ids)
    n = rec.count(f)
    newer = [wide_row(i, 2) for i in ids]
    snaps = rec.run(lambda: t.overwrite(arrow_rows(t, newer), overwrite_filter=f))
    rec.expect.append({"snapshots": snaps, "counts": {"d": n, "c": len(newer)}})
    # Upsert by the identifier field: 20 changed rows, 5 unchanged, 10 new.
    t.refresh()
    current = {r["id"]: r for r in t.scan(row_filter=GreaterThanOrEqual("id", 500)).to_arrow().to_pylist()}
    keys = [i for i in sorted(current) if i % 13]  # all-null rows look the same in every version
    changed = [wide_row(i, 3) for i in keys[:20]]
    same = [current[i] for i in keys[20:25]]
    new = [wide_row(i, 1) for i in range(2000, 2010)]
    res = {}

    def upsert():
        res["r"] = t.upsert(arrow_rows(t, changed + same + new))

    snaps = rec.run(upsert)
    if res["r"].rows_updated != 20 or res["r"].rows_inserted != 10:
        raise SystemExit(f"py.cow upsert: {res['r']}")
    rec.expect.append({"snapshots": snaps, "counts": {"d": 20, "c": 30}})
    # Empty snapshots: an append of no rows, a delete that matches nothing.
    rec.run(lambda: t.append(arrow_rows(t, [])), {}, want_snapshots=1)
    snaps = rec.run(lambda: t.delete(EqualTo("id", -1)), {})
    rec.notes.append(f"a delete matching nothing made {len(snaps)} snapshot(s)")
    # A full overwrite: everything deleted, new rows in.
    n = rec.count(AlwaysTrue())
    last = [wide_row(i, 4) for i in range(3000, 3050)]
    snaps = rec.run(lambda: t.overwrite(arrow_rows(t, last)))
    rec.expect.append({"snapshots": snaps, "counts": {"d": n, "c": 50}})
    rec.emit("py.cow")


def write_evolve(cat):
    """Schema evolution (add, rename, drop, promote int to long) and
    partition evolution, with copy-on-write deletes over old and new files."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "qty", IntegerType()),
        NestedField(4, "cat", StringType()),
        NestedField(5, "price", FloatType()),
        identifier_field_ids=[1],
    )
    t = cat.create_table("py.evolve", schema=schema, properties=SMALL_FILES)
    rec = Recorder(t)

    def rows(lo, hi, **extra):
        out = []
        for i in range(lo, hi):
            r = {"id": i, "name": f"n{i}", "qty": i * 3 - 500, "cat": f"c{i % 4}", "price": i / 8}
            r.update({k: (v(i) if callable(v) else v) for k, v in extra.items()})
            out.append(r)
        return out

    def append(rs):
        def f():
            t.append(pa.Table.from_pylist([{k: r.get(k) for k in t.schema().column_names} for r in rs],
                                          schema=t.schema().as_arrow()))
        rec.run(f, {"c": len(rs)}, want_snapshots=1)

    def delete(expr):
        n = rec.count(expr)
        rec.run(lambda: t.delete(expr), {"d": n})

    append(rows(0, 100))
    # Partition evolution: identity(cat) from now on.
    with t.update_spec() as u:
        u.add_identity("cat")
    append(rows(100, 200))
    # Add a column.
    with t.update_schema() as u:
        u.add_column("note", StringType())
    append(rows(200, 250, note=lambda i: f"note {i}"))
    delete(EqualTo("cat", "c1"))  # old unpartitioned files and new partitioned ones
    # Rename a column.
    with t.update_schema() as u:
        u.rename_column("name", "label")
    append(rows(250, 280, label=lambda i: f"L{i}"))
    # Promote int to long, and float to double.
    with t.update_schema() as u:
        u.update_column("qty", LongType())
        u.update_column("price", DoubleType())
    append(rows(280, 300, qty=lambda i: 2**40 + i, price=lambda i: i / 3))
    delete(LessThan("qty", 0))
    # Drop a column.
    with t.update_schema() as u:
        u.delete_column("note")
    append(rows(300, 320, label=lambda i: f"L{i}"))
    # Partition evolution again: cat out, bucket(4, id) in.
    with t.update_spec() as u:
        u.remove_field("cat")
        u.add_field("id", BucketTransform(4), "id_bucket")
    append(rows(320, 360, label=lambda i: f"L{i}"))
    delete(In("id", [5, 150, 210, 290, 310, 330, 331]))
    # An overwrite across all three specs.
    f = Or(LessThan("id", 20), GreaterThanOrEqual("id", 340))
    n = rec.count(f)
    newer = rows(10, 30, label=lambda i: f"again {i}")
    snaps = rec.run(lambda: t.overwrite(
        pa.Table.from_pylist([{k: r.get(k) for k in t.schema().column_names} for r in newer],
                             schema=t.schema().as_arrow()), overwrite_filter=f))
    rec.expect.append({"snapshots": snaps, "counts": {"d": n, "c": len(newer)}})
    rec.emit("py.evolve")


def write_evolve_more(cat):
    """The schema changes write_evolve leaves out: a nested struct field
    renamed and added, the identifier field renamed, a decimal's precision
    widened, columns moved; deletes and an overwrite of rows written under
    each older schema. lakegw serves every record in the current schema."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "amt", DecimalType(9, 2)),
        NestedField(4, "addr", StructType(
            NestedField(5, "city", StringType()),
            NestedField(6, "zip", IntegerType()),
        )),
        NestedField(7, "qty", IntegerType()),
        identifier_field_ids=[1],
    )
    t = cat.create_table("py.evolve_more", schema=schema, properties=SMALL_FILES)
    rec = Recorder(t)

    def append(rs):
        def f():
            arrow_schema = t.schema().as_arrow()
            t.append(pa.Table.from_pylist(rs, schema=arrow_schema))
        rec.run(f, {"c": len(rs)}, want_snapshots=1)

    def delete(expr):
        n = rec.count(expr)
        rec.run(lambda: t.delete(expr), {"d": n})

    def dec(i):
        return decimal.Decimal(i * 37 % 10000) / 100

    append([{"id": i, "name": f"n{i}", "amt": dec(i), "addr": {"city": f"c{i % 5}", "zip": 1000 + i},
             "qty": i} for i in range(0, 60)])
    with t.update_schema() as u:
        u.rename_column("addr.city", "town")
        u.update_column("amt", DecimalType(18, 2))
        u.move_first("qty")
    append([{"qty": i, "id": i, "name": f"n{i}", "amt": decimal.Decimal(10**12 + i) / 100,
             "addr": {"town": f"t{i % 3}", "zip": 2000 + i}} for i in range(60, 80)])
    delete(In("id", [1, 2, 61]))
    with t.update_schema() as u:
        u.rename_column("id", "key_id")
        u.add_column(("addr", "country"), StringType())
        u.move_after("name", "amt")
    append([{"qty": i, "key_id": i, "amt": dec(i), "name": f"n{i}",
             "addr": {"town": "Bari", "zip": 70, "country": "IT"}} for i in range(80, 90)])
    delete(In("key_id", [3, 62, 81]))
    f = Or(LessThan("key_id", 10), GreaterThanOrEqual("key_id", 85))
    n = rec.count(f)
    newer = [{"qty": -i, "key_id": i, "amt": dec(i), "name": f"again {i}",
              "addr": {"town": "Lecce", "zip": 73, "country": "IT"}} for i in range(5, 10)]
    snaps = rec.run(lambda: t.overwrite(pa.Table.from_pylist(newer, schema=t.schema().as_arrow()), overwrite_filter=f))
    rec.expect.append({"snapshots": snaps, "counts": {"d": n, "c": len(newer)}})
    rec.emit("py.evolve_more")


def write_expiry(cat):
    """Snapshot expiry: the oldest snapshots are expired (metadata only)."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "v", StringType()),
        identifier_field_ids=[1],
    )
    t = cat.create_table("py.expiry", schema=schema, properties=SMALL_FILES)
    rec = Recorder(t)

    def rows(lo, hi, tag):
        return pa.Table.from_pylist([{"id": i, "v": f"{tag}{i}"} for i in range(lo, hi)], schema=t.schema().as_arrow())

    first = rec.run(lambda: t.append(rows(0, 100, "a")))
    second = rec.run(lambda: t.append(rows(100, 200, "b")))
    rec.run(lambda: t.delete(LessThan("id", 30)))
    rec.run(lambda: t.append(rows(200, 210, "c")), {"c": 10}, want_snapshots=1)
    with t.maintenance.expire_snapshots() as e:
        e.by_ids(first + second)
    n = rec.count(In("id", [40, 150, 205]))
    rec.run(lambda: t.delete(In("id", [40, 150, 205])), {"d": n})
    rec.emit("py.expiry")


def write_expiry_live(cat):
    """A table the gateway indexes before its oldest snapshots are expired
    (the second phase, expire_live, expires them while the gateway runs)."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "v", StringType()),
        identifier_field_ids=[1],
    )
    t = cat.create_table("py.expiry_live", schema=schema, properties=SMALL_FILES)
    rec = Recorder(t)

    def rows(lo, hi, tag):
        return pa.Table.from_pylist([{"id": i, "v": f"{tag}{i}"} for i in range(lo, hi)], schema=t.schema().as_arrow())

    # No counts for the first three: two get expired, and the third then
    # starts the topic as a compacted prefix.
    rec.run(lambda: t.append(rows(0, 100, "a")))
    rec.run(lambda: t.append(rows(100, 200, "b")))
    rec.run(lambda: t.delete(LessThan("id", 30)))
    rec.run(lambda: t.append(rows(200, 210, "c")), {"c": 10})
    rec.emit("py.expiry_live")


def expire_live(cat):
    """Phase two: expire the two oldest snapshots of py.expiry_live, then
    delete some rows."""
    t = cat.load_table("py.expiry_live")
    rec = Recorder(t)
    oldest = [s.snapshot_id for s in sorted(t.snapshots(), key=lambda s: s.sequence_number)[:2]]
    with t.maintenance.expire_snapshots() as e:
        e.by_ids(oldest)
    f = In("id", [40, 150, 205])
    n = rec.count(f)
    rec.run(lambda: t.delete(f), {"d": n})
    rec.notes.append(f"expired snapshots {oldest}")
    rec.emit("py.expiry_live")


def main():
    data_dir = os.path.abspath(sys.argv[1])
    phase = sys.argv[2] if len(sys.argv) > 2 else "write"
    os.makedirs(os.path.join(data_dir, "warehouse"), exist_ok=True)
    cat = SqlCatalog(
        "lakegw",
        uri="sqlite:///" + os.path.join(data_dir, "catalog.db"),
        warehouse="file://" + os.path.join(data_dir, "warehouse"),
    )
    if phase == "expire_live":
        expire_live(cat)
        return
    cat.create_namespace_if_not_exists("py")
    write_cow(cat)
    write_evolve(cat)
    write_evolve_more(cat)
    write_expiry(cat)
    write_expiry_live(cat)


if __name__ == "__main__":
    main()
