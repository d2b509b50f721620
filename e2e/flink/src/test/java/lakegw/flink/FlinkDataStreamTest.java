package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import lakegw.flink.Lakegw.Order;
import lakegw.flink.Lakegw.Snap;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * A DataStream KafkaSource job with checkpoints every second commits its
 * offsets to lakegw; killed mid-stream and restored from its last
 * checkpoint, its materialised result has every record exactly once and
 * equals the table. Bounded jobs started from committed group offsets and
 * from a timestamp start where they should.
 */
class FlinkDataStreamTest {
  static final String TOPIC = "flink.orders_ckpt";

  /** partition \t offset \t timestamp \t snapshot id \t value */
  static final class Lines implements KafkaRecordDeserializationSchema<String> {
    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<String> out) {
      var h = r.headers().lastHeader("lakegw.snapshot-id");
      out.collect(r.partition() + "\t" + r.offset() + "\t" + r.timestamp() + "\t"
          + (h == null ? "" : new String(h.value(), StandardCharsets.UTF_8)) + "\t"
          + new String(r.value(), StandardCharsets.UTF_8));
    }

    @Override
    public TypeInformation<String> getProducedType() {
      return Types.STRING;
    }
  }

  record Line(int partition, long offset, long timestamp, String snapshotId, String value) {
    static Line of(String s) {
      String[] f = s.split("\t", 5);
      return new Line(Integer.parseInt(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]), f[3], f[4]);
    }
  }

  // What the materialiser of each run and subtask holds, as the test sees it.
  static final Map<String, List<String>> LIVE = new ConcurrentHashMap<>();
  static final Map<String, Integer> RESTORED = new ConcurrentHashMap<>();
  // run/subtask/checkpoint -> records in state at that checkpoint
  static final Map<String, Integer> AT_CHECKPOINT = new ConcurrentHashMap<>();
  // run -> completed checkpoint ids
  static final Map<String, Set<Long>> COMPLETED = new ConcurrentHashMap<>();

  /**
   * Keeps every record it sees in operator state (the materialised result,
   * exactly once if the source rewinds to the checkpoint it restores), slowly,
   * so that the job is mid-stream when it is killed.
   */
  static final class Materializer extends ProcessFunction<String, String>
      implements CheckpointedFunction, CheckpointListener {
    private final String run;
    private final long sleepMs;
    private transient ListState<String> state;
    private transient List<String> seen;
    private transient String me;

    Materializer(String run, long sleepMs) {
      this.run = run;
      this.sleepMs = sleepMs;
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
      me = run + "/" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
      state = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("seen", Types.STRING));
      seen = Collections.synchronizedList(new ArrayList<>());
      if (ctx.isRestored()) {
        for (String s : state.get()) {
          seen.add(s);
        }
        RESTORED.put(me, seen.size());
      }
      LIVE.put(me, seen);
    }

    @Override
    public void processElement(String value, Context ctx, Collector<String> out) throws Exception {
      if (sleepMs > 0) {
        Thread.sleep(sleepMs);
      }
      seen.add(value);
    }

    @Override
    public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
      state.update(new ArrayList<>(seen));
      AT_CHECKPOINT.put(me + "/" + ctx.getCheckpointId(), seen.size());
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
      COMPLETED.computeIfAbsent(run, k -> ConcurrentHashMap.newKeySet()).add(checkpointId);
    }
  }

  static Admin admin() {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap()));
  }

  static Map<Integer, Long> endOffsets(Admin admin) throws Exception {
    Map<TopicPartition, OffsetSpec> req = new HashMap<>();
    for (int p = 0; p < 2; p++) {
      req.put(new TopicPartition(TOPIC, p), OffsetSpec.latest());
    }
    Map<Integer, Long> out = new TreeMap<>();
    admin.listOffsets(req).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> out.put(tp.partition(), info.offset()));
    return out;
  }

  static Map<Integer, Long> committed(Admin admin, String group) throws Exception {
    Map<Integer, Long> out = new TreeMap<>();
    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
        .forEach((tp, om) -> {
          if (om != null) {
            out.put(tp.partition(), om.offset());
          }
        });
    return out;
  }

  static boolean committedSome(Admin admin, String group) {
    try {
      return committed(admin, group).values().stream().anyMatch(o -> o > 0);
    } catch (Exception e) {
      return false;
    }
  }

  static StreamExecutionEnvironment env(Path checkpoints, String restoreFrom) {
    Map<String, String> conf = new HashMap<>(Map.of(
        "parallelism.default", "2",
        "taskmanager.numberOfTaskSlots", "2",
        "rest.bind-port", "0",
        "execution.checkpointing.interval", "1 s",
        "execution.checkpointing.dir", checkpoints.toUri().toString(),
        "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"));
    if (restoreFrom != null) {
      conf.put("execution.state-recovery.path", restoreFrom);
    }
    return StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(conf));
  }

  static JobClient start(Path checkpoints, String restoreFrom, String run, String group) throws Exception {
    StreamExecutionEnvironment env = env(checkpoints, restoreFrom);
    KafkaSource<String> source = KafkaSource.<String>builder()
        .setBootstrapServers(Lakegw.bootstrap())
        .setTopics(TOPIC)
        .setGroupId(group)
        .setStartingOffsets(OffsetsInitializer.earliest())
        .setDeserializer(new Lines())
        .setProperty("commit.offsets.on.checkpoint", "true")
        .setProperty("check.crcs", "true")
        .setProperty("max.poll.records", "50")
        .build();
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "lakegw").uid("source")
        .process(new Materializer(run, 25)).uid("materializer")
        .sinkTo(new DiscardingSink<>()).uid("sink");
    return env.executeAsync("lakegw-checkpoint-" + run);
  }

  static List<Line> lines(String run) {
    List<Line> out = new ArrayList<>();
    LIVE.forEach((k, v) -> {
      if (k.startsWith(run + "/")) {
        synchronized (v) {
          v.forEach(s -> out.add(Line.of(s)));
        }
      }
    });
    return out;
  }

  /** The latest retained checkpoint of a job: its chk-N directory. */
  static Path latestCheckpoint(Path checkpoints, JobClient job) throws Exception {
    Path dir = checkpoints.resolve(job.getJobID().toHexString());
    try (var s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("chk-") && Files.exists(p.resolve("_metadata")))
          .max(Comparator.comparingLong(p -> Long.parseLong(p.getFileName().toString().substring(4))))
          .orElseThrow(() -> new AssertionError("no completed checkpoint in " + dir));
    }
  }

  @Test
  void killedAndRestoredFromCheckpointLosesAndDuplicatesNothing() throws Exception {
    Path checkpoints = Path.of(Lakegw.workdir(), "checkpoints");
    Files.createDirectories(checkpoints);
    String group = "flink-datastream-ckpt";
    try (Admin admin = admin()) {
      Map<Integer, Long> end1 = endOffsets(admin);
      long total1 = end1.values().stream().mapToLong(Long::longValue).sum();

      // Run 1: kill it once two checkpoints hold part of the stream.
      JobClient job1 = start(checkpoints, null, "run1", group);
      // Offsets are committed to lakegw when a checkpoint completes.
      Lakegw.await("two completed checkpoints of run 1 and its offsets committed to lakegw", Duration.ofSeconds(90),
          () -> COMPLETED.getOrDefault("run1", Set.of()).size() >= 2
              && lines("run1").size() > 0
              && committedSome(admin, group),
          () -> "records seen " + lines("run1").size() + " of " + total1);
      int seenAtKill = lines("run1").size();
      job1.cancel().get(60, TimeUnit.SECONDS);
      assertTrue(seenAtKill < total1, "run 1 read all " + total1 + " records before it was killed; "
          + "the test needs it mid-stream (it reads slowly on purpose)");
      Path chk = latestCheckpoint(checkpoints, job1);
      long chkId = Long.parseLong(chk.getFileName().toString().substring(4));
      int inCheckpoint = 0;
      for (int s = 0; s < 2; s++) {
        inCheckpoint += AT_CHECKPOINT.getOrDefault("run1/" + s + "/" + chkId, 0);
      }
      System.out.printf("run 1 killed after %d of %d records; checkpoint %d holds %d%n",
          seenAtKill, total1, chkId, inCheckpoint);

      Map<Integer, Long> committed1 = committed(admin, group);
      for (var e : committed1.entrySet()) {
        assertTrue(e.getValue() <= end1.get(e.getKey()), "committed " + committed1 + " beyond the end " + end1);
      }

      // The table moves on while the job is down.
      Lakegw.stepServed(TOPIC, false);
      Lakegw.stepServed(TOPIC, true);
      Map<Integer, Long> end2 = endOffsets(admin);

      // Run 2: restored from run 1's last checkpoint, runs to the end.
      JobClient job2 = start(checkpoints, chk.toString(), "run2", group);
      try {
        Lakegw.await("run 2 to read every offset of " + end2, Duration.ofSeconds(120), () -> {
          Map<Integer, Set<Long>> byPartition = new HashMap<>();
          for (Line l : lines("run2")) {
            byPartition.computeIfAbsent(l.partition(), k -> new HashSet<>()).add(l.offset());
          }
          return end2.entrySet().stream()
              .allMatch(e -> byPartition.getOrDefault(e.getKey(), Set.of()).size() >= e.getValue());
        }, () -> "have " + lines("run2").size());
        int restored = RESTORED.values().stream().mapToInt(Integer::intValue).sum();
        assertEquals(inCheckpoint, restored, "records restored from checkpoint " + chkId);
        // Committed offsets follow to the end once a checkpoint covers it.
        Lakegw.await("run 2 to commit the end offsets " + end2, Duration.ofSeconds(30),
            () -> {
              try {
                return committed(admin, group).equals(end2);
              } catch (Exception e) {
                return false;
              }
            });
      } finally {
        job2.cancel().get(60, TimeUnit.SECONDS);
      }

      // Exactly once: every (partition, offset) once, none missing.
      List<Line> all = lines("run2");
      Map<String, Integer> dup = new TreeMap<>();
      Map<Integer, List<Line>> byPartition = new TreeMap<>();
      for (Line l : all) {
        dup.merge(l.partition() + ":" + l.offset(), 1, Integer::sum);
        byPartition.computeIfAbsent(l.partition(), k -> new ArrayList<>()).add(l);
      }
      dup.values().removeIf(n -> n == 1);
      assertEquals(Map.of(), dup, "records held more than once after the restore");
      long total2 = end2.values().stream().mapToLong(Long::longValue).sum();
      assertEquals(total2, all.size(), "records held after the restore, of " + end2);

      // Applied in offset order per partition, they are the table.
      Map<Long, Order> state = new TreeMap<>();
      for (List<Line> ls : byPartition.values()) {
        ls.sort(Comparator.comparingLong(Line::offset));
        for (int i = 0; i < ls.size(); i++) {
          assertEquals(i, ls.get(i).offset(), "offsets of partition " + ls.get(0).partition());
          Lakegw.applyDebezium(state, ls.get(i).value());
        }
      }
      assertEquals(Lakegw.rows(TOPIC).rows(), state, "the restored job's result vs the Iceberg read");
    }
  }

  static List<Line> runBounded(OffsetsInitializer start, String group) throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(
        Configuration.fromMap(Map.of("parallelism.default", "2", "taskmanager.numberOfTaskSlots", "2", "rest.bind-port", "0")));
    KafkaSource<String> source = KafkaSource.<String>builder()
        .setBootstrapServers(Lakegw.bootstrap())
        .setTopics(TOPIC)
        .setGroupId(group)
        .setStartingOffsets(start)
        .setBounded(OffsetsInitializer.latest())
        .setDeserializer(new Lines())
        .build();
    List<Line> out = new ArrayList<>();
    try (CloseableIterator<String> it = env.fromSource(source, WatermarkStrategy.noWatermarks(), "lakegw").executeAndCollect()) {
      it.forEachRemaining(s -> out.add(Line.of(s)));
    }
    return out;
  }

  static void checkStart(String what, List<Line> got, Map<Integer, Long> from, Map<Integer, Long> end) {
    Map<Integer, List<Long>> offsets = new TreeMap<>();
    for (Line l : got) {
      offsets.computeIfAbsent(l.partition(), k -> new ArrayList<>()).add(l.offset());
    }
    for (var e : end.entrySet()) {
      int p = e.getKey();
      List<Long> want = new ArrayList<>();
      for (long o = from.get(p); o < e.getValue(); o++) {
        want.add(o);
      }
      List<Long> have = offsets.getOrDefault(p, List.of());
      Collections.sort(have);
      assertEquals(want, have, what + ": offsets read from partition " + p + " (want " + from.get(p) + ".." + e.getValue() + ")");
    }
  }

  @Test
  void startsFromCommittedGroupOffsets() throws Exception {
    String group = "flink-datastream-group-offsets";
    try (Admin admin = admin()) {
      Map<Integer, Long> end = endOffsets(admin);
      Map<Integer, Long> from = Map.of(0, end.get(0) / 2, 1, end.get(1) / 3);
      Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
      from.forEach((p, o) -> commit.put(new TopicPartition(TOPIC, p), new OffsetAndMetadata(o)));
      admin.alterConsumerGroupOffsets(group, commit).all().get(30, TimeUnit.SECONDS);
      assertEquals(new TreeMap<>(from), committed(admin, group));
      checkStart("group-offsets", runBounded(OffsetsInitializer.committedOffsets(), group), from, end);
    }
  }

  @Test
  void startsFromTimestamp() throws Exception {
    List<ConsumerRecord<String, String>> all = Lakegw.readAll(TOPIC);
    List<Snap> snaps = Lakegw.snapshots(TOPIC);
    Snap mid = snaps.get(snaps.size() / 2);
    Map<Long, Long> commitTime = new HashMap<>();
    snaps.forEach(s -> commitTime.put(s.id(), s.timestampMs()));
    // Expected per partition: the first record of a snapshot committed at
    // or after the timestamp (by the table's metadata), else the end.
    Map<Integer, Long> from = new TreeMap<>();
    Map<Integer, Long> end = new TreeMap<>();
    for (ConsumerRecord<String, String> r : all) {
      end.merge(r.partition(), r.offset() + 1, Math::max);
      Long ct = commitTime.get(Long.parseLong(Lakegw.header(r, "lakegw.snapshot-id")));
      assertNotNull(ct, "record of a snapshot not in the main branch: " + r);
      assertEquals(ct.longValue(), r.timestamp(), "record timestamp = snapshot commit time");
      if (ct >= mid.timestampMs()) {
        from.merge(r.partition(), r.offset(), Math::min);
      }
    }
    end.forEach((p, e) -> from.putIfAbsent(p, e));
    checkStart("timestamp " + mid.timestampMs(),
        runBounded(OffsetsInitializer.timestamp(mid.timestampMs()), "flink-datastream-ts"), from, end);
  }

}
