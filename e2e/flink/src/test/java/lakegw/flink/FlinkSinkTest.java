package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import lakegw.flink.Lakegw.TableState;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;

/**
 * A Flink job reads a lakegw topic (debezium-json), aggregates, and writes
 * the result with Flink's upsert-kafka sink (at-least-once) into a lakegw
 * table topic: a primary-key table created through AdminClient with
 * lakegw.schema and lakegw.primary-key. A second job reads that topic's
 * changelog with upsert-kafka, and its final result equals the aggregate
 * computed from iceberg-go's scan of the source table.
 */
class FlinkSinkTest {
  static final String SOURCE = "flink.orders_dbz";
  static final String SINK = "flink_status_totals";

  @Test
  void upsertKafkaSinkWritesATableTopicAnotherJobReads() throws Exception {
    TableState want = Lakegw.rows(SOURCE);
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    try (Admin admin = Admin.create(ap)) {
      NewTopic t = new NewTopic(SINK, 2, (short) 1).configs(Map.of(
          "lakegw.schema", "status string, n long, total decimal(12, 2), quantity long",
          "lakegw.primary-key", "status",
          "lakegw.format", "upsert"));
      admin.createTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
    }
    String sinkDdl = "CREATE TABLE totals (status STRING, n BIGINT, total DECIMAL(12, 2), quantity BIGINT, "
        + "PRIMARY KEY (status) NOT ENFORCED) WITH ("
        + "'connector' = 'upsert-kafka', 'topic' = '" + SINK + "', "
        + "'properties.bootstrap.servers' = '" + Lakegw.bootstrap() + "', "
        + "'key.format' = 'json', 'value.format' = 'json'%s)";

    // Job 1: source -> aggregate -> upsert-kafka sink, to the end of the
    // (bounded) source.
    TableEnvironment writer = FlinkSqlTest.tableEnv();
    writer.executeSql(FlinkSqlTest.debeziumTable("src", SOURCE, "", "'scan.startup.mode' = 'earliest-offset'", true));
    writer.executeSql(String.format(sinkDdl, ""));
    writer.executeSql("INSERT INTO totals SELECT status, COUNT(*), CAST(SUM(amount) AS DECIMAL(12, 2)), "
        + "CAST(SUM(quantity) AS BIGINT) FROM src GROUP BY status").await(180, TimeUnit.SECONDS);

    // Job 2: the table topic's changelog, read to its end.
    TableEnvironment reader = FlinkSqlTest.tableEnv();
    reader.executeSql(String.format(sinkDdl, ", 'scan.bounded.mode' = 'latest-offset'"));
    Map<String, String> got = new TreeMap<>();
    FlinkSqlTest.collect(reader, "SELECT status, n, total, quantity FROM totals", Duration.ofSeconds(90), (Row r) -> {
      String status = (String) r.getField(0);
      switch (r.getKind()) {
        case INSERT, UPDATE_AFTER -> got.put(status,
            Lakegw.aggValue((Long) r.getField(1), (BigDecimal) r.getField(2), (Long) r.getField(3)));
        default -> got.remove(status);
      }
    });
    assertTrue(!got.isEmpty(), "the second job read nothing");
    assertEquals(Lakegw.aggregateByStatus(want.rows()), got,
        "the aggregate written through the upsert-kafka sink and read back vs the one from the Iceberg read of " + SOURCE);
  }
}
