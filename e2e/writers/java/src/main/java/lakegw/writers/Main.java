package lakegw.writers;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.expressions.Literal;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Types;

/**
 * Writes the Iceberg Java API tables of lakegw's fidelity harness under the
 * directory given as the only argument, with HadoopTables on the local file
 * system, and prints one JSON line per table: its name, the location of its
 * latest metadata file, and the exact change events the gateway must derive
 * for the snapshots where they are known ({"<snapshot id>": {"c":n,"u":n,"d":n}}).
 */
public final class Main {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: Main OUTPUT-DIR");
      System.exit(2);
    }
    String base = args[0];
    HadoopTables tables = new HadoopTables(new Configuration());
    List<W> written = new ArrayList<>();
    written.add(positionDeletes(tables, base + "/pos_deletes"));
    written.add(deletionVectors(tables, base + "/dv"));
    written.add(equalityDeletes(tables, base + "/eq_deletes"));
    written.add(upserts(tables, base + "/upsert"));
    written.add(expiry(tables, base + "/expiry"));
    written.add(evolve(tables, base + "/evolve"));
    for (W w : written) {
      Map<String, Object> line = new LinkedHashMap<>();
      line.put("name", w.name);
      line.put("metadata", w.metadataLocation());
      line.put("snapshots", w.table.currentSnapshot() == null ? 0 : countSnapshots(w.table));
      line.put("expect", w.expect);
      System.out.println(JSON.writeValueAsString(line));
    }
  }

  private static int countSnapshots(Table t) {
    int n = 0;
    for (var s : t.snapshots()) {
      n++;
    }
    return n;
  }

  /** Small row groups, so that deletes span several of them. */
  private static Map<String, String> props(int formatVersion) {
    Map<String, String> p = new HashMap<>();
    p.put(TableProperties.FORMAT_VERSION, Integer.toString(formatVersion));
    p.put(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "4096");
    p.put(TableProperties.PARQUET_PAGE_SIZE_BYTES, "1024");
    p.put(TableProperties.PARQUET_ROW_GROUP_CHECK_MIN_RECORD_COUNT, "20");
    p.put(TableProperties.PARQUET_ROW_GROUP_CHECK_MAX_RECORD_COUNT, "50");
    p.put(TableProperties.PARQUET_COMPRESSION, "zstd");
    return p;
  }

  // ---------------------------------------------------------------------
  // pos_deletes: v2, every primitive type plus list, map and struct,
  // identifier field id; position deletes across three data files of many
  // row groups, repeated and already-deleted positions, an update by
  // position delete + insert, a compaction (replace), then more changes.
  // ---------------------------------------------------------------------
  static final Schema WIDE = new Schema(
      List.of(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()),
          Types.NestedField.optional(3, "amount", Types.DecimalType.of(12, 3)),
          Types.NestedField.optional(4, "price", Types.FloatType.get()),
          Types.NestedField.optional(5, "score", Types.DoubleType.get()),
          Types.NestedField.optional(6, "flag", Types.BooleanType.get()),
          Types.NestedField.optional(7, "day", Types.DateType.get()),
          Types.NestedField.optional(8, "tod", Types.TimeType.get()),
          Types.NestedField.optional(9, "ts", Types.TimestampType.withoutZone()),
          Types.NestedField.optional(10, "tstz", Types.TimestampType.withZone()),
          Types.NestedField.optional(11, "uid", Types.UUIDType.get()),
          Types.NestedField.optional(12, "bin", Types.BinaryType.get()),
          Types.NestedField.optional(13, "fx", Types.FixedType.ofLength(3)),
          Types.NestedField.optional(14, "tags", Types.ListType.ofOptional(15, Types.StringType.get())),
          Types.NestedField.optional(16, "attrs",
              Types.MapType.ofOptional(17, 18, Types.StringType.get(), Types.LongType.get())),
          Types.NestedField.optional(19, "codes",
              Types.MapType.ofOptional(20, 21, Types.IntegerType.get(), Types.StringType.get())),
          Types.NestedField.optional(22, "loc", Types.StructType.of(
              Types.NestedField.optional(23, "lat", Types.DoubleType.get()),
              Types.NestedField.optional(24, "label", Types.StringType.get())))),
      Set.of(1));

  static Record wideRow(long id, int version) {
    Random r = new Random(id * 31 + version);
    GenericRecord rec = GenericRecord.create(WIDE);
    rec.setField("id", id);
    boolean nulls = id % 11 == 0;
    rec.setField("name", nulls ? null : "name-" + id + "-v" + version + (id % 5 == 0 ? " \"quoted\" ünï" : ""));
    rec.setField("amount", nulls ? null : BigDecimal.valueOf(r.nextInt(2_000_000) - 1_000_000, 3));
    rec.setField("price", nulls ? null : r.nextFloat() * 1000f);
    rec.setField("score", nulls ? null : r.nextGaussian() * 1e6);
    rec.setField("flag", nulls ? null : r.nextBoolean());
    rec.setField("day", nulls ? null : LocalDate.of(1960, 1, 1).plusDays(r.nextInt(40_000)));
    rec.setField("tod", nulls ? null : LocalTime.ofNanoOfDay((long) r.nextInt(86_400_000) * 1_000_000L + r.nextInt(1000) * 1000L));
    rec.setField("ts", nulls ? null : LocalDateTime.of(2024, 2, 29, 23, 59, 59).plusNanos(id * 1_001_000L).minusDays(r.nextInt(20_000)));
    rec.setField("tstz", nulls ? null : OffsetDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_000, ZoneOffset.UTC).plusSeconds(id * 3600 * version));
    rec.setField("uid", nulls ? null : new UUID(r.nextLong(), r.nextLong()));
    byte[] b = new byte[r.nextInt(8)];
    r.nextBytes(b);
    rec.setField("bin", nulls ? null : ByteBuffer.wrap(b));
    byte[] fx = new byte[3];
    r.nextBytes(fx);
    rec.setField("fx", nulls ? null : fx);
    rec.setField("tags", nulls ? null : id % 3 == 0 ? List.of() : Arrays.asList("t" + id, null, "v" + version));
    Map<String, Long> attrs = new TreeMap<>();
    for (int i = 0; i < id % 4; i++) {
      attrs.put("k" + i, id * i);
    }
    rec.setField("attrs", nulls ? null : attrs);
    Map<Integer, String> codes = new TreeMap<>();
    codes.put((int) (id % 7), "c" + version);
    rec.setField("codes", nulls ? null : codes);
    GenericRecord loc = GenericRecord.create(WIDE.findType("loc").asStructType());
    loc.setField("lat", r.nextDouble() * 180 - 90);
    loc.setField("label", id % 4 == 0 ? null : "L" + id);
    rec.setField("loc", nulls ? null : loc);
    return rec;
  }

  static List<Record> wideRows(long from, long to, int version) {
    List<Record> out = new ArrayList<>();
    for (long id = from; id < to; id++) {
      out.add(wideRow(id, version));
    }
    return out;
  }

  static W positionDeletes(HadoopTables tables, String location) throws IOException {
    Table t = tables.create(WIDE, PartitionSpec.unpartitioned(), SortOrder.unsorted(), props(2), location);
    W w = new W("pos_deletes", t);
    DataFile a = w.writeData(wideRows(0, 700, 1), null);
    w.append(a);
    w.expect(Map.of("c", 700));
    DataFile b = w.writeData(wideRows(700, 1400, 1), null);
    DataFile c = w.writeData(wideRows(1400, 2100, 1), null);
    w.append(b, c);
    w.expect(Map.of("c", 1400));
    for (DataFile f : List.of(a, b, c)) {
      if (f.splitOffsets() == null || f.splitOffsets().size() < 3) {
        throw new IllegalStateException("data file " + f.location() + " has row groups " + f.splitOffsets() + ", want several");
      }
    }
    // One delete file naming positions in all three files, across row
    // group boundaries (every 7th row of a, a run through the middle of b,
    // the tail of c).
    List<Pos> del1 = new ArrayList<>();
    for (long p = 0; p < 700; p += 7) {
      del1.add(new Pos(a, p));
    }
    for (long p = 150; p < 420; p++) {
      del1.add(new Pos(b, p));
    }
    for (long p = 640; p < 700; p++) {
      del1.add(new Pos(c, p));
    }
    w.rowDelta(List.of(), List.of(w.writePosDeletes(del1, null)));
    w.expect(Map.of("d", del1.size()));
    // Positions deleted before, and one named twice, delete nothing more.
    List<Pos> del2 = new ArrayList<>();
    int fresh = 0;
    for (long p = 0; p < 700; p += 5) {
      del2.add(new Pos(a, p));
      if (p % 7 != 0) {
        fresh++;
      }
    }
    del2.add(new Pos(b, 150)); // deleted by del1 already
    del2.add(new Pos(b, 600));
    del2.add(new Pos(b, 600)); // twice in one file
    fresh++;
    w.rowDelta(List.of(), List.of(w.writePosDeletes(del2, null)));
    w.expect(Map.of("d", fresh));
    // An update of 40 live keys (rows of c from 1 on, and 1 of b): delete
    // by position, insert the new version; the table has an identifier
    // field, so these are 40 update events. (Rows with id % 11 == 0 are
    // null but for the id in every version: an "update" of those would
    // change nothing, so they are left out.)
    List<Pos> upd = new ArrayList<>();
    List<Record> newer = new ArrayList<>();
    for (long p = 1; newer.size() < 39; p++) {
      if ((1400 + p) % 11 == 0) {
        continue;
      }
      upd.add(new Pos(c, p));
      newer.add(wideRow(1400 + p, 2));
    }
    upd.add(new Pos(b, 601));
    newer.add(wideRow(700 + 601, 2));
    w.rowDelta(List.of(w.writeData(newer, null)), List.of(w.writePosDeletes(upd, null)));
    w.expect(Map.of("u", 40));
    // Compaction: every live row into one file, all data and delete files
    // replaced. No change events.
    w.compact();
    w.expect(Map.of());
    // Life goes on after the compaction.
    DataFile after = w.writeData(wideRows(5000, 5010, 1), null);
    w.append(after);
    w.expect(Map.of("c", 10));
    DataFile compacted = w.onlyDataFileOtherThan(after);
    w.rowDelta(List.of(), List.of(w.writePosDeletes(List.of(new Pos(compacted, 0), new Pos(compacted, 999), new Pos(after, 3)), null)));
    w.expect(Map.of("d", 3));
    return w;
  }

  // ---------------------------------------------------------------------
  // dv: format v3, deletion vectors (Puffin) written by BaseDVFileWriter;
  // a second DV for a file replaces the first and holds its positions too.
  // ---------------------------------------------------------------------
  static final Schema SMALL = new Schema(
      List.of(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()),
          Types.NestedField.optional(3, "v", Types.IntegerType.get())),
      Set.of(1));

  static Record small(long id, int v) {
    GenericRecord r = GenericRecord.create(SMALL);
    r.setField("id", id);
    r.setField("name", id % 9 == 0 ? null : "n" + id + "/" + v);
    r.setField("v", v);
    return r;
  }

  static List<Record> smalls(long from, long to, int v) {
    List<Record> out = new ArrayList<>();
    for (long id = from; id < to; id++) {
      out.add(small(id, v));
    }
    return out;
  }

  static W deletionVectors(HadoopTables tables, String location) throws IOException {
    Table t = tables.create(SMALL, PartitionSpec.unpartitioned(), SortOrder.unsorted(), props(3), location);
    W w = new W("dv", t);
    DataFile a = w.writeData(smalls(0, 1500, 1), null);
    DataFile b = w.writeData(smalls(1500, 2300, 1), null);
    w.append(a, b);
    w.expect(Map.of("c", 2300));
    Map<String, Set<Long>> deleted = new HashMap<>();
    Set<Long> pa = new HashSet<>();
    for (long p = 3; p < 1500; p += 10) {
      pa.add(p);
    }
    Set<Long> pb = new HashSet<>();
    for (long p = 0; p < 800; p += 3) {
      pb.add(p);
    }
    Map<DataFile, Set<Long>> first = new LinkedHashMap<>();
    first.put(a, pa);
    first.put(b, pb);
    Map<String, DeleteFile> dvs = w.writeDVs(first);
    w.rowDelta(List.of(), new ArrayList<>(dvs.values()));
    w.expect(Map.of("d", pa.size() + pb.size()));
    // A second DV for a: the old positions plus new ones, replacing the
    // first DV of a.
    Set<Long> pa2 = new HashSet<>(pa);
    int fresh = 0;
    for (long p = 500; p < 900; p++) {
      if (pa2.add(p)) {
        fresh++;
      }
    }
    Map<DataFile, Set<Long>> second = new LinkedHashMap<>();
    second.put(a, pa2);
    Map<String, DeleteFile> dvs2 = w.writeDVs(second);
    RowDelta rd = w.newRowDelta();
    rd.removeDeletes(dvs.get(a.location()));
    rd.addDeletes(dvs2.get(a.location()));
    rd.commit();
    w.expect(Map.of("d", fresh));
    // An update through a DV on b (replacing b's DV) plus new versions.
    Set<Long> pb2 = new HashSet<>(pb);
    List<Record> newer = new ArrayList<>();
    for (long p = 1; p < 60; p += 3) { // live positions of b (p % 3 != 0)
      pb2.add(p);
      newer.add(small(1500 + p, 2));
    }
    Map<DataFile, Set<Long>> third = new LinkedHashMap<>();
    third.put(b, pb2);
    Map<String, DeleteFile> dvs3 = w.writeDVs(third);
    rd = w.newRowDelta();
    rd.removeDeletes(dvs.get(b.location()));
    rd.addDeletes(dvs3.get(b.location()));
    rd.addRows(w.writeData(newer, null));
    rd.commit();
    w.expect(Map.of("u", newer.size()));
    w.compact();
    w.expect(Map.of());
    return w;
  }

  // ---------------------------------------------------------------------
  // eq_deletes: v2, no identifier fields; equality deletes on id, on
  // (cat, region) with nulls, on id with a null key; re-inserted keys that
  // older deletes must not touch; an equality delete and a data file in one
  // snapshot; position deletes in the same table.
  // ---------------------------------------------------------------------
  static final Schema EQ = new Schema(
      Types.NestedField.optional(1, "id", Types.IntegerType.get()),
      Types.NestedField.optional(2, "cat", Types.StringType.get()),
      Types.NestedField.optional(3, "region", Types.StringType.get()),
      Types.NestedField.optional(4, "v", Types.LongType.get()));

  static final String[] REGIONS = {null, "eu", "us", "apac"};

  static Record eqRow(Integer id, long v) {
    GenericRecord r = GenericRecord.create(EQ);
    r.setField("id", id);
    int k = id == null ? (int) v : id;
    r.setField("cat", "c" + (k % 3));
    r.setField("region", REGIONS[(k / 3) % 4]);
    r.setField("v", v);
    return r;
  }

  static Record eqKey(Schema s, Object... vals) {
    GenericRecord r = GenericRecord.create(s);
    for (int i = 0; i < vals.length; i++) {
      r.set(i, vals[i]);
    }
    return r;
  }

  static W equalityDeletes(HadoopTables tables, String location) throws IOException {
    Table t = tables.create(EQ, PartitionSpec.unpartitioned(), SortOrder.unsorted(), props(2), location);
    W w = new W("eq_deletes", t);
    List<Record> ra = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      ra.add(eqRow(i, i));
    }
    ra.add(eqRow(null, 1000)); // null keys
    ra.add(eqRow(null, 1001));
    DataFile a = w.writeData(ra, null);
    w.append(a);
    List<Record> rb = new ArrayList<>();
    for (int i = 200; i < 500; i++) { // ids 200..299 twice (a and b)
      rb.add(eqRow(i, 10_000 + i));
    }
    DataFile b = w.writeData(rb, null);
    w.append(b);
    // Delete on id: 10..19 (a), 250..259 (a and b: two rows each), 490 (b),
    // 9999 (matches nothing).
    Schema byId = EQ.select("id");
    List<Record> k1 = new ArrayList<>();
    for (int i = 10; i < 20; i++) {
      k1.add(eqKey(byId, i));
    }
    for (int i = 250; i < 260; i++) {
      k1.add(eqKey(byId, i));
    }
    k1.add(eqKey(byId, 490));
    k1.add(eqKey(byId, 9999));
    w.rowDelta(List.of(), List.of(w.writeEqDeletes(byId, k1, null)));
    w.expect(Map.of("d", 10 + 20 + 1));
    // Delete on (cat, region), with a null region.
    Schema byCatRegion = EQ.select("cat", "region");
    List<Record> k2 = List.of(eqKey(byCatRegion, "c1", null), eqKey(byCatRegion, "c2", "eu"));
    int n2 = w.countMatching(byCatRegion, k2);
    w.rowDelta(List.of(), List.of(w.writeEqDeletes(byCatRegion, k2, null)));
    w.expect(Map.of("d", n2));
    // Re-insert deleted ids: older deletes must not apply to them.
    List<Record> rc = new ArrayList<>();
    for (int i = 10; i < 15; i++) {
      rc.add(eqRow(i, 20_000 + i));
    }
    rc.add(eqRow(null, 1002));
    DataFile c = w.writeData(rc, null);
    w.append(c);
    w.expect(Map.of("c", rc.size()));
    // Delete on id with a null key: every row with a null id goes.
    List<Record> k3 = Arrays.asList(eqKey(byId, (Object) null), eqKey(byId, 11));
    int n3 = w.countMatching(byId, k3);
    w.rowDelta(List.of(), List.of(w.writeEqDeletes(byId, k3, null)));
    w.expect(Map.of("d", n3));
    // An equality delete and a data file in one snapshot: the delete
    // applies to older files only (no identifier fields: deletes + inserts).
    List<Record> rd = new ArrayList<>();
    for (int i = 300; i < 305; i++) {
      rd.add(eqRow(i, 30_000 + i));
    }
    DataFile d = w.writeData(rd, null);
    List<Record> k4 = new ArrayList<>();
    for (int i = 300; i < 305; i++) {
      k4.add(eqKey(byId, i));
    }
    int n4 = w.countMatching(byId, k4);
    w.rowDelta(List.of(d), List.of(w.writeEqDeletes(byId, k4, null)));
    w.expect(Map.of("d", n4, "c", 5));
    // Position deletes in the same table, on files with equality deletes
    // against them (a row already deleted by equality yields nothing).
    w.rowDelta(List.of(), List.of(w.writePosDeletes(List.of(
        new Pos(a, 10) /* id 10: deleted by equality */, new Pos(a, 100), new Pos(b, 0), new Pos(d, 2)), null)));
    w.expect(Map.of("d", 3));
    return w;
  }

  // ---------------------------------------------------------------------
  // upsert: v2, identifier field id, partitioned by bucket(4, id): the
  // files a Flink upsert sink writes (per partition, an equality delete on
  // the key plus the new rows; a key written twice in one commit gets a
  // position delete for its first row).
  // ---------------------------------------------------------------------
  static final Schema UP = new Schema(
      List.of(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()),
          Types.NestedField.optional(3, "qty", Types.IntegerType.get())),
      Set.of(1));

  static Record up(long id, int qty) {
    GenericRecord r = GenericRecord.create(UP);
    r.setField("id", id);
    r.setField("name", "item-" + id);
    r.setField("qty", qty);
    return r;
  }

  static W upserts(HadoopTables tables, String location) throws IOException {
    PartitionSpec spec = PartitionSpec.builderFor(UP).bucket("id", 4).build();
    Table t = tables.create(UP, spec, SortOrder.unsorted(), props(2), location);
    W w = new W("upsert", t);
    List<Record> init = new ArrayList<>();
    for (long id = 0; id < 400; id++) {
      init.add(up(id, 1));
    }
    w.append(w.writePartitioned(init).toArray(new DataFile[0]));
    w.expect(Map.of("c", 400));
    Schema key = UP.select("id");
    // Upsert 25 existing keys.
    List<Record> v2 = new ArrayList<>();
    for (long id = 0; id < 400; id += 16) {
      v2.add(up(id, 2));
    }
    w.upsertCommit(v2, key, List.of());
    w.expect(Map.of("u", v2.size()));
    // One commit: key 5 updated twice (its first new row deleted by
    // position), key 6 updated once, key 1000 new (its equality delete
    // matches nothing).
    List<Record> v3 = List.of(up(5, 3), up(5, 4), up(6, 3), up(1000, 1));
    w.upsertCommit(v3, key, List.of(0));
    w.expect(Map.of("u", 2, "c", 1));
    // Delete 10 keys by equality only.
    List<Record> gone = new ArrayList<>();
    for (long id = 100; id < 110; id++) {
      gone.add(up(id, 0));
    }
    w.upsertCommit(List.of(), key, List.of(), gone);
    w.expect(Map.of("d", 10));
    return w;
  }

  // ---------------------------------------------------------------------
  // evolve: format v3, the schema changed twice under the rows: renamed
  // columns (a nested one, then the identifier field), promoted types (int
  // to long, float to double, a decimal's precision), added columns (one
  // with an initial default, one nested), a column moved first and one
  // dropped; deletion vectors and updates of rows written in each older
  // schema. lakegw writes every record in the current schema.
  // ---------------------------------------------------------------------
  static final Schema EV = new Schema(
      List.of(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()),
          Types.NestedField.optional(3, "qty", Types.IntegerType.get()),
          Types.NestedField.optional(4, "price", Types.FloatType.get()),
          Types.NestedField.optional(5, "amt", Types.DecimalType.of(9, 2)),
          Types.NestedField.optional(6, "addr", Types.StructType.of(
              Types.NestedField.optional(7, "city", Types.StringType.get()),
              Types.NestedField.optional(8, "zip", Types.IntegerType.get()))),
          Types.NestedField.optional(9, "gone", Types.StringType.get())),
      Set.of(1));

  /**
   * A row of the table's current schema, each value chosen by the field's
   * role: its name in EV, found by field id (roles), whatever it is named now.
   */
  static Record evRow(Schema s, Map<Integer, String> roles, long id, int v) {
    GenericRecord r = GenericRecord.create(s);
    for (Types.NestedField f : s.columns()) {
      Object val = switch (roles.getOrDefault(f.fieldId(), "")) {
        case "id" -> id;
        case "name" -> id % 7 == 0 ? null : "n" + id + "/" + v;
        case "qty" -> f.type().typeId() == org.apache.iceberg.types.Type.TypeID.LONG ? (Object) (id * 1000L + v) : (Object) (int) (id + v);
        case "price" -> f.type().typeId() == org.apache.iceberg.types.Type.TypeID.DOUBLE ? (Object) (id / 3.0) : (Object) (id / 10.0f);
        case "amt" -> new BigDecimal(id * 131 + v).movePointLeft(2);
        case "addr" -> {
          Types.StructType st = f.type().asStructType();
          GenericRecord a = GenericRecord.create(st);
          for (Types.NestedField g : st.fields()) {
            a.setField(g.name(), switch (roles.getOrDefault(g.fieldId(), "")) {
              case "addr.city" -> "c" + (id % 5);
              case "addr.zip" -> (int) (1000 + id);
              default -> "IT";
            });
          }
          yield id % 11 == 0 ? null : a;
        }
        case "gone" -> "g" + id;
        // Columns added later: the initial default's (an int), a note.
        default -> f.type().typeId() == org.apache.iceberg.types.Type.TypeID.INTEGER
            ? (Object) (int) (id % 3) : (id % 2 == 0 ? null : "x" + id);
      };
      r.setField(f.name(), val);
    }
    return r;
  }

  static List<Record> evRows(Schema s, Map<Integer, String> roles, long from, long to, int v) {
    List<Record> out = new ArrayList<>();
    for (long id = from; id < to; id++) {
      out.add(evRow(s, roles, id, v));
    }
    return out;
  }

  static W evolve(HadoopTables tables, String location) throws IOException {
    Table t = tables.create(EV, PartitionSpec.unpartitioned(), SortOrder.unsorted(), props(3), location);
    W w = new W("evolve", t);
    // The table assigned its own field ids.
    Map<Integer, String> roles = new HashMap<>();
    for (String name : List.of("id", "name", "qty", "price", "amt", "addr", "addr.city", "addr.zip", "gone")) {
      roles.put(t.schema().findField(name).fieldId(), name);
    }
    DataFile a = w.writeData(evRows(t.schema(), roles, 0, 40, 1), null);
    DataFile b = w.writeData(evRows(t.schema(), roles, 40, 70, 1), null);
    w.append(a, b);
    w.expect(Map.of("c", 70));
    t.updateSchema()
        .renameColumn("name", "label")
        .renameColumn("addr.city", "town")
        .updateColumn("qty", Types.LongType.get())
        .updateColumn("price", Types.DoubleType.get())
        .updateColumn("amt", Types.DecimalType.of(18, 2))
        .addColumn("note", Types.StringType.get())
        .addColumn("level", Types.IntegerType.get(), Literal.of(7))
        .moveFirst("amt")
        .commit();
    t.refresh();
    // Deletes of rows written in the first schema.
    Set<Long> pa = new HashSet<>();
    for (long p = 1; p < 40; p += 4) {
      pa.add(p);
    }
    Map<DataFile, Set<Long>> dv = new LinkedHashMap<>();
    dv.put(a, pa);
    Map<String, DeleteFile> dvs = w.writeDVs(dv);
    w.rowDelta(List.of(), new ArrayList<>(dvs.values()));
    w.expect(Map.of("d", pa.size()));
    w.append(w.writeData(evRows(t.schema(), roles, 70, 90, 2), null));
    w.expect(Map.of("c", 20));
    t.updateSchema()
        .renameColumn("id", "key_id")
        .addColumn("addr", "country", Types.StringType.get())
        .deleteColumn("gone")
        .commit();
    t.refresh();
    // Updates of rows of both older schemas (b: the first, the file of
    // 70..90: the second) by deletion vector and new versions.
    DataFile c = w.table.currentSnapshot().addedDataFiles(t.io()).iterator().next();
    Set<Long> pb = new HashSet<>();
    List<Record> newer = new ArrayList<>();
    for (long p = 0; p < 30; p += 6) {
      pb.add(p);
      newer.add(evRow(t.schema(), roles, 40 + p, 3));
    }
    Set<Long> pc = new HashSet<>();
    for (long p = 1; p < 20; p += 5) {
      pc.add(p);
      newer.add(evRow(t.schema(), roles, 70 + p, 3));
    }
    Map<DataFile, Set<Long>> dv2 = new LinkedHashMap<>();
    dv2.put(b, pb);
    dv2.put(c, pc);
    RowDelta rd = w.newRowDelta();
    w.writeDVs(dv2).values().forEach(rd::addDeletes);
    rd.addRows(w.writeData(newer, null));
    rd.commit();
    w.expect(Map.of("u", newer.size()));
    w.append(w.writeData(evRows(t.schema(), roles, 90, 100, 4), null));
    w.expect(Map.of("c", 10));
    return w;
  }

  // ---------------------------------------------------------------------
  // expiry: appends and deletes, then all but the last two snapshots
  // expired (their manifest lists and manifests deleted), then one more
  // snapshot.
  // ---------------------------------------------------------------------
  static W expiry(HadoopTables tables, String location) throws IOException {
    Table t = tables.create(SMALL, PartitionSpec.unpartitioned(), SortOrder.unsorted(), props(2), location);
    W w = new W("expiry", t);
    DataFile a = w.writeData(smalls(0, 300, 1), null);
    w.append(a);
    DataFile b = w.writeData(smalls(300, 500, 1), null);
    w.append(b);
    w.rowDelta(List.of(), List.of(w.writePosDeletes(List.of(new Pos(a, 1), new Pos(a, 2), new Pos(b, 7)), null)));
    w.append(w.writeData(smalls(500, 520, 1), null));
    w.expect(Map.of("c", 20));
    t.expireSnapshots().expireOlderThan(System.currentTimeMillis() + 1).retainLast(2).commit();
    t.refresh();
    w.rowDelta(List.of(), List.of(w.writePosDeletes(List.of(new Pos(a, 3), new Pos(b, 8)), null)));
    w.expect(Map.of("d", 2));
    return w;
  }

  // ---------------------------------------------------------------------

  record Pos(DataFile file, long pos) {}

  /** A table being written, with the events expected of its snapshots. */
  static final class W {
    final String name;
    final Table table;
    final Map<String, Map<String, Integer>> expect = new LinkedHashMap<>();
    private int task = 0;

    W(String name, Table table) {
      this.name = name;
      this.table = table;
    }

    String metadataLocation() {
      return ((HasTableOperations) table).operations().current().metadataFileLocation();
    }

    void expect(Map<String, Integer> counts) {
      table.refresh();
      Map<String, Integer> m = new TreeMap<>();
      counts.forEach((k, v) -> {
        if (v != 0) {
          m.put(k, v);
        }
      });
      expect.put(Long.toString(table.currentSnapshot().snapshotId()), m);
    }

    private OutputFileFactory files(FileFormat format) {
      return OutputFileFactory.builderFor(table, 1, ++task).format(format).build();
    }

    private GenericAppenderFactory appenders(int[] eqIds, Schema eqSchema) {
      GenericAppenderFactory f = new GenericAppenderFactory(table.schema(), table.spec(), eqIds, eqSchema, null);
      f.setAll(table.properties());
      return f;
    }

    DataFile writeData(List<Record> rows, StructLike partition) throws IOException {
      DataWriter<Record> dw = appenders(null, null).newDataWriter(
          partition == null ? files(FileFormat.PARQUET).newOutputFile() : files(FileFormat.PARQUET).newOutputFile(table.spec(), partition),
          FileFormat.PARQUET, partition);
      try (dw) {
        for (Record r : rows) {
          dw.write(r);
        }
      }
      return dw.toDataFile();
    }

    /** Groups rows by partition and writes one data file per partition. */
    List<DataFile> writePartitioned(List<Record> rows) throws IOException {
      Map<PartitionKey, List<Record>> parts = byPartition(rows);
      List<DataFile> out = new ArrayList<>();
      for (var e : parts.entrySet()) {
        out.add(writeData(e.getValue(), e.getKey()));
      }
      return out;
    }

    Map<PartitionKey, List<Record>> byPartition(List<Record> rows) {
      Map<PartitionKey, List<Record>> parts = new LinkedHashMap<>();
      for (Record r : rows) {
        PartitionKey pk = new PartitionKey(table.spec(), table.schema());
        pk.partition(r);
        parts.computeIfAbsent(pk, k -> new ArrayList<>()).add(r);
      }
      return parts;
    }

    DeleteFile writePosDeletes(List<Pos> positions, StructLike partition) throws IOException {
      List<Pos> sorted = new ArrayList<>(positions);
      sorted.sort((x, y) -> {
        int c = x.file.location().compareTo(y.file.location());
        return c != 0 ? c : Long.compare(x.pos, y.pos);
      });
      PositionDeleteWriter<Record> pw = appenders(null, null).newPosDeleteWriter(
          partition == null ? files(FileFormat.PARQUET).newOutputFile() : files(FileFormat.PARQUET).newOutputFile(table.spec(), partition),
          FileFormat.PARQUET, partition);
      try (pw) {
        PositionDelete<Record> pd = PositionDelete.create();
        for (Pos p : sorted) {
          pw.write(pd.set(p.file.location(), p.pos, null));
        }
      }
      return pw.toDeleteFile();
    }

    DeleteFile writeEqDeletes(Schema keySchema, List<Record> keys, StructLike partition) throws IOException {
      int[] ids = keySchema.columns().stream().mapToInt(Types.NestedField::fieldId).toArray();
      EqualityDeleteWriter<Record> ew = appenders(ids, keySchema).newEqDeleteWriter(
          partition == null ? files(FileFormat.PARQUET).newOutputFile() : files(FileFormat.PARQUET).newOutputFile(table.spec(), partition),
          FileFormat.PARQUET, partition);
      try (ew) {
        for (Record k : keys) {
          ew.write(k);
        }
      }
      return ew.toDeleteFile();
    }

    /** Live rows whose key columns equal one of keys (nulls equal nulls), read by Iceberg Java. */
    int countMatching(Schema keySchema, List<Record> keys) throws IOException {
      Set<List<Object>> want = new HashSet<>();
      for (Record k : keys) {
        List<Object> v = new ArrayList<>();
        for (int i = 0; i < k.size(); i++) {
          v.add(k.get(i));
        }
        want.add(v);
      }
      table.refresh();
      int n = 0;
      try (CloseableIterable<Record> it = IcebergGenerics.read(table).build()) {
        for (Record r : it) {
          List<Object> v = new ArrayList<>();
          for (Types.NestedField f : keySchema.columns()) {
            v.add(r.getField(f.name()));
          }
          if (want.contains(v)) {
            n++;
          }
        }
      }
      return n;
    }

    /** One deletion vector per data file, each holding all the given positions. */
    Map<String, DeleteFile> writeDVs(Map<DataFile, Set<Long>> positions) throws IOException {
      Function<String, org.apache.iceberg.deletes.PositionDeleteIndex> noPrevious = path -> null;
      BaseDVFileWriter dvw = new BaseDVFileWriter(files(FileFormat.PUFFIN), noPrevious);
      try (dvw) {
        for (var e : positions.entrySet()) {
          List<Long> ps = new ArrayList<>(e.getValue());
          ps.sort(Long::compare);
          for (long p : ps) {
            dvw.delete(e.getKey().location(), p, table.spec(), e.getKey().partition());
          }
        }
      }
      DeleteWriteResult res = dvw.result();
      Map<String, DeleteFile> out = new HashMap<>();
      for (DeleteFile df : res.deleteFiles()) {
        out.put(df.referencedDataFile(), df);
      }
      return out;
    }

    void append(DataFile... files) {
      var app = table.newAppend();
      for (DataFile f : files) {
        app.appendFile(f);
      }
      app.commit();
    }

    /** A row delta validated from the current snapshot, as engines commit them. */
    RowDelta newRowDelta() {
      table.refresh();
      return table.newRowDelta().validateFromSnapshot(table.currentSnapshot().snapshotId());
    }

    void rowDelta(List<DataFile> data, List<DeleteFile> deletes) {
      RowDelta rd = newRowDelta();
      data.forEach(rd::addRows);
      deletes.forEach(rd::addDeletes);
      rd.commit();
    }

    /**
     * What a Flink upsert sink commits: per partition, an equality delete on
     * the key for every written or deleted key, the new rows, and a position
     * delete for the rows at dupPositions (earlier versions of a key written
     * again in the same commit).
     */
    void upsertCommit(List<Record> rows, Schema keySchema, List<Integer> dupPositions) throws IOException {
      upsertCommit(rows, keySchema, dupPositions, List.of());
    }

    void upsertCommit(List<Record> rows, Schema keySchema, List<Integer> dupPositions, List<Record> deletes) throws IOException {
      RowDelta rd = newRowDelta();
      Set<Integer> dups = new HashSet<>(dupPositions);
      Map<PartitionKey, List<Record>> writes = byPartition(rows);
      Map<PartitionKey, List<Record>> keysByPart = new LinkedHashMap<>();
      for (var e : writes.entrySet()) {
        keysByPart.computeIfAbsent(e.getKey(), k -> new ArrayList<>());
      }
      for (var e : byPartition(deletes).entrySet()) {
        keysByPart.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).addAll(e.getValue());
      }
      for (var e : writes.entrySet()) {
        keysByPart.get(e.getKey()).addAll(e.getValue());
      }
      for (var e : keysByPart.entrySet()) {
        List<Record> keys = new ArrayList<>();
        Set<Object> seen = new HashSet<>();
        for (Record r : e.getValue()) {
          if (seen.add(r.getField("id"))) {
            keys.add(eqKey(keySchema, r.getField("id")));
          }
        }
        rd.addDeletes(writeEqDeletes(keySchema, keys, e.getKey()));
        List<Record> part = writes.get(e.getKey());
        if (part == null) {
          continue;
        }
        DataFile df = writeData(part, e.getKey());
        rd.addRows(df);
        List<Pos> pos = new ArrayList<>();
        for (int i = 0; i < part.size(); i++) {
          if (dups.contains(rows.indexOf(part.get(i)))) {
            pos.add(new Pos(df, i));
          }
        }
        if (!pos.isEmpty()) {
          rd.addDeletes(writePosDeletes(pos, e.getKey()));
        }
      }
      rd.commit();
    }

    /** Rewrites every live row into one file, replacing all data and delete files. */
    void compact() throws IOException {
      table.refresh();
      List<Record> live = new ArrayList<>();
      try (CloseableIterable<Record> it = IcebergGenerics.read(table).build()) {
        for (Record r : it) {
          live.add(r.copy());
        }
      }
      Set<DataFile> oldData = new HashSet<>();
      Set<DeleteFile> oldDeletes = new HashSet<>();
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        for (FileScanTask task : tasks) {
          oldData.add(task.file());
          oldDeletes.addAll(task.deletes());
        }
      }
      DataFile merged = writeData(live, null);
      table.newRewrite()
          .validateFromSnapshot(table.currentSnapshot().snapshotId())
          .rewriteFiles(oldData, oldDeletes, Set.of(merged), Set.of())
          .commit();
    }

    DataFile onlyDataFileOtherThan(DataFile other) throws IOException {
      table.refresh();
      DataFile found = null;
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        for (FileScanTask task : tasks) {
          if (!task.file().location().equals(other.location())) {
            if (found != null && !found.location().equals(task.file().location())) {
              throw new IllegalStateException("more than one other data file");
            }
            found = task.file();
          }
        }
      }
      return found;
    }
  }

  private Main() {}
}
