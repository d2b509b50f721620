package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import lakegw.flink.Lakegw.Order;
import lakegw.flink.Lakegw.Snap;
import lakegw.flink.Lakegw.TableState;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Flink SQL over lakegw topics with the kafka + debezium-json, upsert-kafka
 * and kafka + canal-json connectors: a plain projection and a grouped
 * aggregate, materialised from the job's changelog, equal what iceberg-go's
 * scanner reads from the table (position deletes, equality deletes and
 * equality-delete upserts included); new snapshots reach a running job within
 * 2 s; group-offsets and timestamp startup modes land where they should.
 */
class FlinkSqlTest {
  static final String COLUMNS = "order_id BIGINT, customer STRING, product STRING, status STRING, "
      + "amount DECIMAL(10, 2), quantity INT, created_at TIMESTAMP_LTZ(6), updated_at TIMESTAMP_LTZ(6), note STRING";
  static final String SELECT_ALL = "order_id, customer, product, status, amount, quantity, created_at, updated_at, note";
  static final String AGGREGATE = "SELECT status, COUNT(*) AS n, SUM(amount) AS total, SUM(quantity) AS quantity "
      + "FROM %s GROUP BY status";

  // Shared by every test class that collects a query (FlinkSinkTest,
  // FlinkSchemaTest, FlinkExactlyOnceTest), whichever runs last: daemon
  // threads, never shut down, so that no class's end stops another's.
  private static final ExecutorService POOL = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "lakegw-collect");
    t.setDaemon(true);
    return t;
  });

  static TableEnvironment tableEnv() {
    Configuration conf = Configuration.fromMap(Map.of(
        "parallelism.default", "1",
        "taskmanager.numberOfTaskSlots", "2",
        "table.exec.resource.default-parallelism", "1",
        "rest.bind-port", "0"));
    return TableEnvironment.create(EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
  }

  static String kafkaOptions(String topic, String format, String startup) {
    return "'connector' = 'kafka', 'topic' = '" + topic + "', "
        + "'properties.bootstrap.servers' = '" + Lakegw.bootstrap() + "', "
        + "'properties.check.crcs' = 'true', "
        + startup + ", 'format' = '" + format + "'";
  }

  static String debeziumTable(String name, String topic, String extraColumns, String startup, boolean bounded) {
    return "CREATE TABLE " + name + " (" + COLUMNS + extraColumns + ") WITH ("
        + kafkaOptions(topic, "debezium-json", startup)
        + (bounded ? ", 'scan.bounded.mode' = 'latest-offset'" : "") + ")";
  }

  /** Runs a query to its end (bounded sources), handing every row to sink. */
  static void collect(TableEnvironment env, String query, Duration timeout, Consumer<Row> sink) throws Exception {
    TableResult result = env.executeSql(query);
    Future<?> f = POOL.submit(() -> {
      try (CloseableIterator<Row> it = result.collect()) {
        while (it.hasNext()) {
          sink.accept(it.next());
        }
      }
      return null;
    });
    try {
      f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      result.getJobClient().ifPresent(jc -> jc.cancel());
      f.cancel(true);
      fail("query did not finish within " + timeout.toSeconds() + " s: " + query);
    }
  }

  /** A multiset of rows kept from a changelog: +I/+U add, -U/-D remove. */
  static final class RowBag {
    final Map<Order, Integer> rows = new HashMap<>();
    final List<String> errors = new ArrayList<>();
    int changes;

    synchronized void apply(RowKind kind, Order o) {
      changes++;
      if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
        rows.merge(o, 1, Integer::sum);
      } else if (rows.merge(o, -1, Integer::sum) == 0) {
        rows.remove(o);
      } else if (rows.getOrDefault(o, 0) < 0) {
        errors.add(kind + " of a row never added: " + o);
      }
    }

    synchronized Map<Long, Order> byKey() {
      Map<Long, Order> out = new TreeMap<>();
      rows.forEach((o, n) -> {
        for (int i = 0; i < n; i++) {
          if (out.put(o.orderId(), o) != null) {
            errors.add("two live rows for order_id " + o.orderId());
          }
        }
      });
      return out;
    }
  }

  /** The aggregate's result kept from its changelog, by status. */
  static final class AggBag {
    final Map<String, String> groups = new TreeMap<>();
    final List<String> errors = new ArrayList<>();

    synchronized void apply(Row r) {
      String status = (String) r.getField(0);
      String value = Lakegw.aggValue((Long) r.getField(1), (BigDecimal) r.getField(2), (Integer) r.getField(3));
      switch (r.getKind()) {
        case INSERT, UPDATE_AFTER -> groups.put(status, value);
        default -> {
          String had = groups.remove(status);
          if (!value.equals(had)) {
            errors.add(r.getKind() + " " + status + " " + value + " retracts " + had);
          }
        }
      }
    }
  }

  void checkProjectionAndAggregate(String ddl, String table) throws Exception {
    TableState want = Lakegw.rows(table);
    TableEnvironment env = tableEnv();
    env.executeSql(ddl);
    RowBag bag = new RowBag();
    collect(env, "SELECT " + SELECT_ALL + " FROM t", Duration.ofSeconds(90),
        r -> bag.apply(r.getKind(), Order.ofRow(r, 0)));
    assertEquals(List.of(), bag.errors, "changelog of the projection");
    assertEquals(want.rows(), bag.byKey(), "projection of " + table + " (" + bag.changes + " changes) vs the Iceberg read");

    AggBag agg = new AggBag();
    collect(env, String.format(AGGREGATE, "t"), Duration.ofSeconds(90), agg::apply);
    assertEquals(List.of(), agg.errors, "changelog of the aggregate");
    assertEquals(Lakegw.aggregateByStatus(want.rows()), agg.groups, "aggregate of " + table + " vs the Iceberg read");
  }

  @Test
  void debeziumJson() throws Exception {
    String topic = "flink.orders_dbz";
    checkProjectionAndAggregate(debeziumTable("t", topic, "", "'scan.startup.mode' = 'earliest-offset'", true), topic);
  }

  @Test
  void upsertKafka() throws Exception {
    String topic = "flink.orders_upsert";
    String ddl = "CREATE TABLE t (" + COLUMNS + ", PRIMARY KEY (order_id) NOT ENFORCED) WITH ("
        + "'connector' = 'upsert-kafka', 'topic' = '" + topic + "', "
        + "'properties.bootstrap.servers' = '" + Lakegw.bootstrap() + "', "
        + "'key.format' = 'json', 'value.format' = 'json', 'scan.bounded.mode' = 'latest-offset')";
    checkProjectionAndAggregate(ddl, topic);
  }

  @Test
  void canalJson() throws Exception {
    String topic = "flink.orders_canal";
    String ddl = "CREATE TABLE t (" + COLUMNS + ") WITH ("
        + kafkaOptions(topic, "canal-json", "'scan.startup.mode' = 'earliest-offset'")
        + ", 'scan.bounded.mode' = 'latest-offset')";
    checkProjectionAndAggregate(ddl, topic);
  }

  /**
   * A running job sees each new snapshot within 2 s of its commit (the
   * snapshot's timestamp), and ends equal to the final table.
   */
  @Test
  void continuousModeSeesNewSnapshotsWithinTwoSeconds() throws Exception {
    String table = "flink.orders_live";
    TableEnvironment env = tableEnv();
    env.executeSql(debeziumTable("t", table, "", "'scan.startup.mode' = 'earliest-offset'", false));
    TableResult result = env.executeSql("SELECT " + SELECT_ALL + " FROM t");
    RowBag bag = new RowBag();
    CloseableIterator<Row> it = result.collect();
    Future<?> reader = POOL.submit(() -> {
      while (it.hasNext()) {
        Row r = it.next();
        bag.apply(r.getKind(), Order.ofRow(r, 0));
      }
      return null;
    });
    try {
      TableState want = Lakegw.rows(table);
      Lakegw.await("the running job to catch up with " + table, Duration.ofSeconds(60),
          () -> want.rows().equals(bag.byKey()), () -> "have " + bag.byKey().size() + " rows, want " + want.rows().size());
      // A plain consumer at the end of the topic tells how much of each
      // latency is the gateway's (commit to record) and how much Flink's.
      Map<String, Long> firstSeen = new java.util.concurrent.ConcurrentHashMap<>();
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      Future<?> watcher = POOL.submit(() -> {
        try (var c = new org.apache.kafka.clients.consumer.KafkaConsumer<String, String>(Lakegw.consumerProps(null))) {
          TopicPartition tp = new TopicPartition(table, 0);
          c.assign(List.of(tp));
          c.seekToEnd(List.of(tp));
          c.position(tp);
          while (!stop.get()) {
            c.poll(Duration.ofMillis(100)).forEach(r ->
                firstSeen.putIfAbsent(Lakegw.header(r, "lakegw.snapshot-id"), System.currentTimeMillis()));
          }
        }
        return null;
      });
      List<Long> latencies = new ArrayList<>();
      List<Long> gateway = new ArrayList<>();
      try {
        Thread.sleep(500);
        for (int i = 0; i < 6; i++) {
          Snap s = Lakegw.step(table, i % 3 == 2);
          TableState next = Lakegw.rows(table);
          assertEquals(s.id(), next.snapshot().id());
          Lakegw.await("snapshot " + s.id() + " in the job's result", Duration.ofSeconds(15),
              () -> next.rows().equals(bag.byKey()));
          latencies.add(System.currentTimeMillis() - s.timestampMs());
          Long seen = firstSeen.get(String.valueOf(s.id()));
          gateway.add(seen == null ? -1 : seen - s.timestampMs());
          Thread.sleep(300);
        }
      } finally {
        stop.set(true);
        watcher.get(10, TimeUnit.SECONDS);
      }
      System.out.println("continuous mode: commit-to-result latencies (ms) " + latencies
          + "; commit-to-record at a plain consumer (ms) " + gateway);
      for (long l : latencies) {
        assertTrue(l <= 2000, "a snapshot took " + l + " ms from commit to the job's result; latencies " + latencies);
      }
      assertEquals(List.of(), bag.errors);
      assertEquals(Lakegw.rows(table).rows(), bag.byKey(), "final result vs the final table");
    } finally {
      result.getJobClient().ifPresent(jc -> jc.cancel());
      reader.cancel(true);
      try {
        it.close();
      } catch (Exception ignored) {
        // the job is cancelled
      }
    }
  }

  /**
   * 'group-offsets' starts at the group's committed offsets; 'timestamp' at
   * the first record of the first snapshot committed at or after it.
   */
  @Test
  void startupFromGroupOffsetsAndTimestamp() throws Exception {
    String topic = "flink.orders_dbz";
    List<ConsumerRecord<String, String>> all = Lakegw.readAll(topic);
    long end = all.size();
    List<Snap> snaps = Lakegw.snapshots(topic);
    Snap mid = snaps.get(snaps.size() / 2);
    Snap prev = snaps.get(snaps.size() / 2 - 1);
    long first = -1;
    for (ConsumerRecord<String, String> r : all) {
      if (String.valueOf(mid.id()).equals(Lakegw.header(r, "lakegw.snapshot-id"))) {
        first = r.offset();
        break;
      }
    }
    assertTrue(first > 0, "snapshot " + mid.id() + " has no records in " + topic);

    String group = "flink-sql-group-offsets";
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap()))) {
      admin.alterConsumerGroupOffsets(group, Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(first)))
          .all().get(30, TimeUnit.SECONDS);
    }
    String offsetColumn = ", kafka_offset BIGINT METADATA FROM 'offset' VIRTUAL, "
        + "kafka_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL";

    TableEnvironment env = tableEnv();
    env.executeSql(debeziumTable("g", topic, offsetColumn,
        "'scan.startup.mode' = 'group-offsets', 'properties.group.id' = '" + group + "'", true));
    TreeSet<Long> offsets = new TreeSet<>();
    collect(env, "SELECT kafka_offset FROM g", Duration.ofSeconds(90), r -> offsets.add((Long) r.getField(0)));
    assertEquals(first, offsets.first(), "group-offsets: first offset read");
    assertEquals(end - 1, offsets.last(), "group-offsets: last offset read");
    assertEquals(end - first, offsets.size(), "group-offsets: offsets read");

    // Just after the previous snapshot's commit: lands on mid's first record.
    long ts = prev.timestampMs() + 1;
    assertTrue(ts <= mid.timestampMs());
    env.executeSql(debeziumTable("ts", topic, offsetColumn,
        "'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '" + ts + "'", true));
    TreeSet<Long> fromTs = new TreeSet<>();
    List<Long> stamps = new ArrayList<>();
    collect(env, "SELECT kafka_offset, kafka_ts FROM ts", Duration.ofSeconds(90), r -> {
      fromTs.add((Long) r.getField(0));
      stamps.add(((java.time.Instant) r.getField(1)).toEpochMilli());
    });
    assertEquals(first, fromTs.first(), "timestamp " + ts + ": first offset read");
    assertEquals(end - first, fromTs.size(), "timestamp: offsets read");
    assertTrue(stamps.stream().allMatch(s -> s >= mid.timestampMs()), "timestamp: every record at or after " + ts);
  }
}
