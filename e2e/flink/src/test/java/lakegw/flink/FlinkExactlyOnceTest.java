package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.lineage.DefaultKafkaDatasetFacet;
import org.apache.flink.connector.kafka.lineage.DefaultKafkaDatasetIdentifier;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacet;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacetProvider;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.TransactionNamingStrategy;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A Flink job writes a lakegw primary-key table topic through KafkaSink with
 * DeliveryGuarantee.EXACTLY_ONCE (its defaults otherwise, a transaction per
 * checkpoint), under each transaction naming strategy, while the gateway is
 * killed with SIGKILL and restarted several times mid-stream, and one of the
 * job's tasks fails once: the job fails over, recovers its transactions
 * (committing those its checkpoint holds, aborting the rest) and finishes. Then a read_committed consumer of the
 * topic's changelog sees every input once and nothing twice, a downstream
 * Flink job (upsert-kafka, read_committed) sees every row, and iceberg-go's
 * scan of the table holds exactly the inputs.
 */
class FlinkExactlyOnceTest {
  static final int N = 3000;
  static final int KILLS = 3;

  /** Task starts, restarts included: the kills must have failed the job over. */
  static final AtomicInteger STARTS = new AtomicInteger();

  /** Whether the one task failure the test injects has happened. */
  static final AtomicBoolean FAILED = new AtomicBoolean();

  /**
   * Slows the stream so that the kills land in the middle of it, and fails
   * its task once, mid-stream: the job fails over and recovers its
   * transactions from its last checkpoint (commits those it holds through
   * the producer id and epoch it saved, aborts the lingering ones).
   */
  static class Slow extends RichMapFunction<Long, Long> {
    @Override
    public void open(OpenContext ctx) {
      STARTS.incrementAndGet();
    }

    @Override
    public Long map(Long v) throws Exception {
      Thread.sleep(4);
      if (v == N / 2 && FAILED.compareAndSet(false, true)) {
        throw new RuntimeException("the test's injected task failure");
      }
      return v;
    }
  }

  /**
   * An input id as the upsert record of its row. It names its topic
   * (KafkaDatasetFacetProvider): the POOLING strategy lists the
   * transactions writing it.
   */
  static class Upserts implements KafkaRecordSerializationSchema<Long>, KafkaDatasetFacetProvider {
    final String topic;

    Upserts(String topic) {
      this.topic = topic;
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(Long id, KafkaRecordSerializationSchema.KafkaSinkContext ctx, Long ts) {
      return new ProducerRecord<>(topic, bytes("{\"id\":" + id + "}"), bytes("{\"id\":" + id + ",\"v\":\"x-" + id + "\"}"));
    }

    @Override
    public Optional<KafkaDatasetFacet> getKafkaDatasetFacet() {
      return Optional.of(new DefaultKafkaDatasetFacet(DefaultKafkaDatasetIdentifier.ofTopics(List.of(topic))));
    }
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @EnumSource(value = TransactionNamingStrategy.class, names = {"INCREMENTING", "POOLING"})
  void exactlyOnceSinkAcrossGatewayKills(TransactionNamingStrategy strategy) throws Exception {
    String topic = "flink_eo_" + strategy.name().toLowerCase();
    STARTS.set(0);
    FAILED.set(false);
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1).configs(Map.of(
          "lakegw.schema", "id long, v string",
          "lakegw.primary-key", "id",
          "lakegw.format", "upsert")))).all().get(30, TimeUnit.SECONDS);
    }

    Path checkpoints = Path.of(Lakegw.workdir(), "eo-checkpoints-" + strategy.name());
    Files.createDirectories(checkpoints);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(Map.of(
        "parallelism.default", "2",
        "taskmanager.numberOfTaskSlots", "2",
        "rest.bind-port", "0",
        "execution.checkpointing.interval", "500 ms",
        "execution.checkpointing.dir", checkpoints.toUri().toString(),
        "restart-strategy.type", "fixed-delay",
        "restart-strategy.fixed-delay.attempts", "100",
        "restart-strategy.fixed-delay.delay", "1 s")));
    KafkaSink<Long> sink = KafkaSink.<Long>builder()
        .setBootstrapServers(Lakegw.bootstrap())
        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .setTransactionalIdPrefix("eo-" + strategy.name().toLowerCase())
        .setTransactionNamingStrategy(strategy)
        .setRecordSerializer(new Upserts(topic))
        .build();
    env.fromSequence(0, N - 1).map(new Slow()).sinkTo(sink);
    JobClient job = env.executeAsync("lakegw-exactly-once-" + strategy);

    // Each kill restarts the gateway at once: the producers retry across
    // it, and what they staged before it commits after it.
    for (int k = 0; k < KILLS; k++) {
      Thread.sleep(1500);
      assertTrue(!job.getJobStatus().get().isGloballyTerminalState(),
          "the job ended before kill " + k + ": the kills must land mid-stream");
      Lakegw.call("POST", "/kill9");
    }
    job.getJobExecutionResult().get(180, TimeUnit.SECONDS);
    assertTrue(STARTS.get() > 2, "the job's 2 tasks started " + STARTS.get() + " times: the injected failure failed nothing over");
    System.out.printf("%s: the job's tasks started %d times (one injected failure) over %d gateway kills%n", strategy, STARTS.get(), KILLS);

    // The changelog, read_committed: one insert per input, nothing twice.
    Map<Long, Integer> seen = new TreeMap<>();
    List<String> wrong = new ArrayList<>();
    for (ConsumerRecord<String, String> r : Lakegw.readAll(topic, "read_committed")) {
      JsonNode key = Lakegw.JSON.readTree(r.key());
      long id = key.get("id").asLong();
      seen.merge(id, 1, Integer::sum);
      if (r.value() == null || !Lakegw.JSON.readTree(r.value()).get("v").asText().equals("x-" + id)) {
        wrong.add(r.key() + " -> " + r.value());
      }
    }
    assertEquals(List.of(), wrong, "changelog records that are not an input's insert");
    List<Long> twice = seen.entrySet().stream().filter(e -> e.getValue() != 1).map(Map.Entry::getKey).toList();
    assertEquals(List.of(), twice, "inputs in the changelog more than once");
    assertEquals(N, seen.size(), "inputs in the changelog");

    // A downstream Flink job, read_committed.
    TableEnvironment reader = FlinkSqlTest.tableEnv();
    reader.executeSql("CREATE TABLE eo (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
        + "'connector' = 'upsert-kafka', 'topic' = '" + topic + "', "
        + "'properties.bootstrap.servers' = '" + Lakegw.bootstrap() + "', "
        + "'properties.isolation.level' = 'read_committed', "
        + "'key.format' = 'json', 'value.format' = 'json', 'scan.bounded.mode' = 'latest-offset')");
    Map<Long, String> state = new HashMap<>();
    FlinkSqlTest.collect(reader, "SELECT id, v FROM eo", Duration.ofSeconds(90), (Row r) -> {
      switch (r.getKind()) {
        case INSERT, UPDATE_AFTER -> state.put((Long) r.getField(0), (String) r.getField(1));
        default -> state.remove((Long) r.getField(0));
      }
    });
    assertEquals(N, state.size(), "rows the downstream Flink job sees");

    // The Iceberg table, as iceberg-go reads it.
    Map<Long, Integer> scanned = new TreeMap<>();
    for (JsonNode n : Lakegw.call("GET", "/scan?table=" + topic)) {
      assertEquals("x-" + n.get("id").asLong(), n.get("v").asText(), "row " + n);
      scanned.merge(n.get("id").asLong(), 1, Integer::sum);
    }
    assertEquals(N, scanned.size(), "rows of the Iceberg table");
    assertTrue(scanned.values().stream().allMatch(c -> c == 1), "a key twice in the Iceberg table");
  }
}
