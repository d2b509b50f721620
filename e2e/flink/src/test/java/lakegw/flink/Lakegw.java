package lakegw.flink;

import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.flink.types.Row;

/**
 * What every test shares: the gateway's address, the Go test's control
 * endpoint (the oracle: an iceberg-go scan of the table; commits and
 * rollbacks on request), the row model the results are compared in, and a
 * plain full read of a topic.
 */
final class Lakegw {
  static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private Lakegw() {}

  static String bootstrap() {
    return required("lakegw.bootstrap");
  }

  static String workdir() {
    return required("lakegw.workdir");
  }

  private static String required(String prop) {
    String v = System.getProperty(prop, "");
    if (v.isEmpty()) {
      fail("system property " + prop + " is not set: these tests run against a gateway that "
          + "e2e/flink_test.go starts; run them with `make e2e-flink`");
    }
    return v;
  }

  // ---------------------------------------------------------------- control

  static JsonNode call(String method, String pathAndQuery) {
    String base = required("lakegw.control");
    HttpRequest req = HttpRequest.newBuilder(URI.create(base + pathAndQuery))
        .timeout(Duration.ofSeconds(60))
        .method(method, HttpRequest.BodyPublishers.noBody())
        .build();
    try {
      HttpResponse<String> resp = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
      if (resp.statusCode() != 200) {
        fail("control " + method + " " + pathAndQuery + ": HTTP " + resp.statusCode() + ": " + resp.body());
      }
      return JSON.readTree(resp.body());
    } catch (IOException | InterruptedException e) {
      throw new AssertionError("control " + method + " " + pathAndQuery + ": " + e, e);
    }
  }

  /** A snapshot of the table's main branch. */
  record Snap(long id, long sequenceNumber, long timestampMs) {
    static Snap of(JsonNode n) {
      return new Snap(n.get("snapshot_id").asLong(), n.get("sequence_number").asLong(), n.get("timestamp_ms").asLong());
    }
  }

  /** The table as iceberg-go's scanner reads it: the oracle. */
  record TableState(Snap snapshot, Map<Long, Order> rows) {}

  static TableState rows(String table) {
    JsonNode n = call("GET", "/rows?table=" + table);
    Map<Long, Order> rows = new TreeMap<>();
    for (JsonNode r : n.get("rows")) {
      Order o = Order.ofControl(r);
      rows.put(o.orderId(), o);
    }
    return new TableState(Snap.of(n.get("snapshot")), rows);
  }

  static List<Snap> snapshots(String table) {
    List<Snap> out = new ArrayList<>();
    for (JsonNode s : call("GET", "/snapshots?table=" + table)) {
      out.add(Snap.of(s));
    }
    return out;
  }

  /** Commits a quickstart demo snapshot, or an equality-delete one. */
  static Snap step(String table, boolean equalityDeletes) {
    return Snap.of(call("POST", "/step?table=" + table + (equalityDeletes ? "&eq=1" : "")));
  }

  /**
   * Commits a snapshot and waits until the gateway serves it (ListOffsets
   * by its commit time finds it), so that end offsets read next include it.
   */
  static Snap stepServed(String table, boolean equalityDeletes) {
    Snap s = step(table, equalityDeletes);
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(null))) {
      List<TopicPartition> tps = new ArrayList<>();
      c.partitionsFor(table, Duration.ofSeconds(10)).forEach(pi -> tps.add(new TopicPartition(table, pi.partition())));
      Map<TopicPartition, Long> query = new HashMap<>();
      tps.forEach(tp -> query.put(tp, s.timestampMs()));
      await("the gateway to serve snapshot " + s.id() + " of " + table, Duration.ofSeconds(20),
          () -> c.offsetsForTimes(query).values().stream().anyMatch(ot -> ot != null && ot.timestamp() == s.timestampMs()));
    }
    return s;
  }

  static Snap rollback(String table, long toSnapshot) {
    return Snap.of(call("POST", "/rollback?table=" + table + "&to=" + toSnapshot));
  }

  /** Requests the Java clients sent so far, by "ApiName vN". */
  static Map<String, Integer> apis() {
    Map<String, Integer> out = new TreeMap<>();
    call("GET", "/apis").fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asInt()));
    return out;
  }

  static int apiCalls(String name) {
    int n = 0;
    for (var e : apis().entrySet()) {
      if (e.getKey().startsWith(name + " v")) {
        n += e.getValue();
      }
    }
    return n;
  }

  // ---------------------------------------------------------------- rows

  /** One order, in the form every reader is compared in. */
  record Order(long orderId, String customer, String product, String status, String amount,
      int quantity, long createdAtUs, long updatedAtUs, String note) {

    static Order ofControl(JsonNode n) {
      return new Order(n.get("order_id").asLong(), n.get("customer").asText(), n.get("product").asText(),
          n.get("status").asText(), n.get("amount").asText(), n.get("quantity").asInt(),
          n.get("created_at_us").asLong(), n.get("updated_at_us").asLong(), text(n.get("note")));
    }

    /** A row image of lakegw's JSON formats (debezium before/after, upsert value). */
    static Order ofJson(JsonNode n) {
      return new Order(n.get("order_id").asLong(), n.get("customer").asText(), n.get("product").asText(),
          n.get("status").asText(), decimal(n.get("amount").decimalValue()), n.get("quantity").asInt(),
          micros(n.get("created_at").asText()), micros(n.get("updated_at").asText()), text(n.get("note")));
    }

    /** A Flink SQL row of the DDL's columns, in order. */
    static Order ofRow(Row r, int first) {
      return new Order((Long) r.getField(first), (String) r.getField(first + 1), (String) r.getField(first + 2),
          (String) r.getField(first + 3), decimal((BigDecimal) r.getField(first + 4)), (Integer) r.getField(first + 5),
          micros((Instant) r.getField(first + 6)), micros((Instant) r.getField(first + 7)), (String) r.getField(first + 8));
    }
  }

  static String text(JsonNode n) {
    return n == null || n.isNull() ? null : n.asText();
  }

  static String decimal(BigDecimal d) {
    return d.setScale(2).toPlainString();
  }

  static long micros(Instant i) {
    return i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000;
  }

  /** "2026-01-02 03:04:05.123456Z", Flink's SQL format for TIMESTAMP_LTZ. */
  static long micros(String s) {
    return micros(Instant.parse(s.replace(' ', 'T')));
  }

  /** The grouped aggregate of the tests' SQL, computed from the oracle. */
  static Map<String, String> aggregateByStatus(Map<Long, Order> rows) {
    Map<String, long[]> counts = new TreeMap<>();
    Map<String, BigDecimal> totals = new HashMap<>();
    for (Order o : rows.values()) {
      long[] c = counts.computeIfAbsent(o.status(), k -> new long[2]);
      c[0]++;
      c[1] += o.quantity();
      totals.merge(o.status(), new BigDecimal(o.amount()), BigDecimal::add);
    }
    Map<String, String> out = new TreeMap<>();
    counts.forEach((status, c) -> out.put(status, aggValue(c[0], totals.get(status), c[1])));
    return out;
  }

  static String aggValue(long n, BigDecimal total, long quantity) {
    return "n=" + n + " total=" + decimal(total) + " quantity=" + quantity;
  }

  // ---------------------------------------------------------------- reading

  static Properties consumerProps(String group) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, "lakegw-e2e-" + (group == null ? "reader" : group));
    if (group != null) {
      p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    }
    return p;
  }

  /** Reads every partition of the topic from its start to its end now. */
  static List<ConsumerRecord<String, String>> readAll(String topic) {
    return readAll(topic, "read_uncommitted");
  }

  /** readAll at an isolation level (read_committed, read_uncommitted). */
  static List<ConsumerRecord<String, String>> readAll(String topic, String isolation) {
    Properties props = consumerProps(null);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
      List<TopicPartition> tps = new ArrayList<>();
      c.partitionsFor(topic, Duration.ofSeconds(10)).forEach(pi -> tps.add(new TopicPartition(topic, pi.partition())));
      c.assign(tps);
      c.seekToBeginning(tps);
      Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(10));
      List<ConsumerRecord<String, String>> out = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          fail("reading " + topic + " to " + end + " took over 60 s; at " + out.size() + " records");
        }
        c.poll(Duration.ofMillis(500)).forEach(out::add);
      }
      return out;
    }
  }

  static String header(ConsumerRecord<?, ?> r, String name) {
    Header h = r.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  /** Applies debezium-json change events (in offset order per key) to rows. */
  static void applyDebezium(Map<Long, Order> rows, String value) {
    try {
      JsonNode n = JSON.readTree(value);
      String op = n.get("op").asText();
      switch (op) {
        case "c", "r", "u" -> {
          Order after = Order.ofJson(n.get("after"));
          if (op.equals("u")) {
            Order before = Order.ofJson(n.get("before"));
            Order had = rows.get(before.orderId());
            if (!before.equals(had)) {
              fail("update's before-image " + before + " is not the live row " + had);
            }
          }
          rows.put(after.orderId(), after);
        }
        case "d" -> {
          Order before = Order.ofJson(n.get("before"));
          Order had = rows.remove(before.orderId());
          if (!before.equals(had)) {
            fail("delete's before-image " + before + " is not the live row " + had);
          }
        }
        default -> fail("unknown debezium op " + op + " in " + value);
      }
    } catch (IOException e) {
      throw new AssertionError("bad JSON " + value, e);
    }
  }

  // ---------------------------------------------------------------- waiting

  static void await(String what, Duration timeout, BooleanSupplier cond) {
    await(what, timeout, cond, () -> "");
  }

  static void await(String what, Duration timeout, BooleanSupplier cond, Supplier<String> detail) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out after " + timeout.toSeconds() + " s waiting for " + what + " " + detail.get());
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}
