package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

/**
 * Schema evolution as a Flink job sees it: a table whose columns were
 * renamed (name to label), promoted (qty int to long, price float to
 * double) and added (note) mid-history, with deletes and an update of rows
 * written before the change, read from earliest by a Flink table declared
 * with the table's current columns. Every event carries them, so the job's
 * result equals what iceberg-go reads of the table in its current schema;
 * no retraction misses the row it retracts.
 */
class FlinkSchemaTest {

  @Test
  void jobDeclaredWithTheCurrentSchemaReadsATableRenamedMidHistory() throws Exception {
    String topic = "flink.renamed";
    TableEnvironment env = FlinkSqlTest.tableEnv();
    env.executeSql("CREATE TABLE t (id BIGINT, label STRING, qty BIGINT, price DOUBLE, note STRING) WITH ("
        + FlinkSqlTest.kafkaOptions(topic, "debezium-json", "'scan.startup.mode' = 'earliest-offset'")
        + ", 'scan.bounded.mode' = 'latest-offset')");
    Map<String, Integer> bag = new TreeMap<>();
    List<String> errors = new ArrayList<>();
    int[] changes = {0};
    FlinkSqlTest.collect(env, "SELECT id, label, qty, price, note FROM t", Duration.ofSeconds(90), r -> {
      changes[0]++;
      String row = line(r.getField(0), r.getField(1), r.getField(2), r.getField(3), r.getField(4));
      if (r.getKind() == RowKind.INSERT || r.getKind() == RowKind.UPDATE_AFTER) {
        bag.merge(row, 1, Integer::sum);
      } else if (bag.merge(row, -1, Integer::sum) == 0) {
        bag.remove(row);
      } else {
        errors.add(r.getKind() + " of a row the job never saw: " + row);
      }
    });
    assertEquals(List.of(), errors, "retractions of " + topic);

    Map<String, Integer> want = new TreeMap<>();
    for (JsonNode n : Lakegw.call("GET", "/scan?table=" + topic)) {
      want.merge(line(
          n.get("id").asLong(),
          n.get("label").isNull() ? null : n.get("label").asText(),
          n.get("qty").isNull() ? null : n.get("qty").asLong(),
          n.get("price").isNull() ? null : n.get("price").asDouble(),
          n.get("note").isNull() ? null : n.get("note").asText()), 1, Integer::sum);
    }
    assertEquals(want, bag, topic + " read by Flink (" + changes[0] + " changes) vs iceberg-go in the current schema");
  }

  static String line(Object id, Object label, Object qty, Object price, Object note) {
    return id + "|" + label + "|" + qty + "|" + price + "|" + note;
  }
}
