package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import lakegw.flink.Lakegw.Order;
import lakegw.flink.Lakegw.Snap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Java kafka-clients consumer (4.x): group subscribe and commit,
 * seekToBeginning, seekToEnd, offsetsForTimes, a restart that validates its
 * committed position through OffsetForLeaderEpoch, and a rollback of the
 * table (a leader-epoch bump) that it detects as log truncation.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class JavaConsumerTest {
  static final String TOPIC = "flink.orders_client";
  static final TopicPartition TP = new TopicPartition(TOPIC, 0);
  static final String GROUP = "java-consumer";

  static KafkaConsumer<String, String> consumer(String group, String reset) {
    Properties p = Lakegw.consumerProps(group);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "37");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    return new KafkaConsumer<>(p);
  }

  /** Polls until the position reaches end; returns what was read. */
  static List<ConsumerRecord<String, String>> pollTo(KafkaConsumer<String, String> c, long end) {
    List<ConsumerRecord<String, String>> out = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (c.assignment().isEmpty() || c.position(TP) < end) {
      if (System.nanoTime() > deadline) {
        fail("consumer did not reach offset " + end + " within 60 s; read " + out.size());
      }
      c.poll(Duration.ofMillis(200)).forEach(out::add);
    }
    return out;
  }

  static Map<Long, Order> materialise(List<ConsumerRecord<String, String>> records) {
    Map<Long, Order> state = new TreeMap<>();
    long expect = records.isEmpty() ? 0 : records.get(0).offset();
    for (ConsumerRecord<String, String> r : records) {
      assertEquals(expect++, r.offset(), "offsets are dense");
      Lakegw.applyDebezium(state, r.value());
    }
    return state;
  }

  static long endOffset() {
    try (KafkaConsumer<String, String> c = consumer(null, "earliest")) {
      return c.endOffsets(List.of(TP)).get(TP);
    }
  }

  @Test
  @org.junit.jupiter.api.Order(1)
  void groupSubscribeCommitAndRestartValidatesThroughOffsetForLeaderEpoch() {
    long end = endOffset();
    List<ConsumerRecord<String, String>> read;
    try (KafkaConsumer<String, String> c = consumer(GROUP, "earliest")) {
      c.subscribe(List.of(TOPIC));
      read = pollTo(c, end);
      assertEquals(end, read.size());
      assertEquals(Lakegw.rows(TOPIC).rows(), materialise(read), "group consumer's result vs the Iceberg read");
      c.commitSync();
      OffsetAndMetadata om = c.committed(Set.of(TP)).get(TP);
      assertEquals(end, om.offset());
      assertEquals(read.get(read.size() - 1).leaderEpoch(), om.leaderEpoch(), "the commit carries the leader epoch of the last record");
      assertTrue(read.get(read.size() - 1).leaderEpoch().isPresent(), "records carry a leader epoch");
    }

    // The table moves on; a restarted member of the group resumes at its
    // committed offset, validated (it carries an epoch) through
    // OffsetForLeaderEpoch before the first fetch.
    Snap next = Lakegw.stepServed(TOPIC, false);
    long end2 = endOffset();
    assertTrue(end2 > end);
    int validations = Lakegw.apiCalls("OffsetForLeaderEpoch");
    try (KafkaConsumer<String, String> c = consumer(GROUP, "none")) {
      c.subscribe(List.of(TOPIC));
      List<ConsumerRecord<String, String>> more = pollTo(c, end2);
      assertEquals(end, more.get(0).offset(), "restart resumes at the committed offset");
      assertEquals(end2 - end, more.size());
      for (ConsumerRecord<String, String> r : more) {
        assertEquals(String.valueOf(next.id()), Lakegw.header(r, "lakegw.snapshot-id"));
      }
      c.commitSync();
    }
    assertTrue(Lakegw.apiCalls("OffsetForLeaderEpoch") > validations,
        "the restarted consumer validated its position through OffsetForLeaderEpoch; APIs called: " + Lakegw.apis());
  }

  @Test
  @org.junit.jupiter.api.Order(2)
  void seekToBeginningEndAndOffsetsForTimes() {
    List<Snap> snaps = Lakegw.snapshots(TOPIC);
    List<ConsumerRecord<String, String>> all = Lakegw.readAll(TOPIC);
    Map<Long, Long> firstOffset = new LinkedHashMap<>();
    for (ConsumerRecord<String, String> r : all) {
      firstOffset.putIfAbsent(Long.parseLong(Lakegw.header(r, "lakegw.snapshot-id")), r.offset());
    }
    try (KafkaConsumer<String, String> c = consumer(null, "none")) {
      c.assign(List.of(TP));
      c.seekToEnd(List.of(TP));
      assertEquals(all.size(), c.position(TP), "seekToEnd");
      assertEquals(all.size(), c.endOffsets(List.of(TP)).get(TP));
      c.seekToBeginning(List.of(TP));
      assertEquals(0, c.position(TP), "seekToBeginning");
      assertEquals(0, c.beginningOffsets(List.of(TP)).get(TP));
      assertEquals(all.get(0).value(), pollTo(c, 1).get(0).value());

      for (Snap s : snaps) {
        Long want = firstOffset.get(s.id());
        if (want == null) {
          continue; // a snapshot without change records (none expected here)
        }
        for (long ts : new long[] {s.timestampMs(), s.timestampMs() - 1}) {
          OffsetAndTimestamp got = c.offsetsForTimes(Map.of(TP, ts)).get(TP);
          assertNotNull(got, "offsetsForTimes(" + ts + ")");
          boolean exact = ts == s.timestampMs();
          if (exact || snaps.indexOf(s) == 0 || snaps.get(snaps.indexOf(s) - 1).timestampMs() < ts) {
            assertEquals(want, got.offset(), "offsetsForTimes(" + ts + ") of snapshot " + s);
            assertEquals(s.timestampMs(), got.timestamp());
          }
        }
      }
      long after = snaps.get(snaps.size() - 1).timestampMs() + 1;
      assertNull(c.offsetsForTimes(Map.of(TP, after)).get(TP), "offsetsForTimes after the last commit");
    }
  }

  /**
   * A rollback of the table rewrites history under a new leader epoch. A
   * consumer that read past the kept snapshot learns of it as truncation:
   * a running one through its next fetch, a restarted one through the
   * validation of its committed position; with auto.offset.reset=none as
   * LogTruncationException, otherwise by moving to where history diverged.
   */
  @Test
  @org.junit.jupiter.api.Order(3)
  void rollbackIsDetectedAsTruncation() {
    List<Snap> snaps = Lakegw.snapshots(TOPIC);
    List<ConsumerRecord<String, String>> before = Lakegw.readAll(TOPIC);
    long end = before.size();
    Snap keep = snaps.get(snaps.size() - 3);
    long keptEnd = 0;
    for (ConsumerRecord<String, String> r : before) {
      Snap s = snaps.stream().filter(x -> String.valueOf(x.id()).equals(Lakegw.header(r, "lakegw.snapshot-id")))
          .findFirst().orElseThrow();
      if (s.sequenceNumber() <= keep.sequenceNumber()) {
        keptEnd = r.offset() + 1;
      }
    }
    assertTrue(keptEnd > 0 && keptEnd < end);

    // A running consumer at the end, and the group's commit at the end.
    KafkaConsumer<String, String> running = consumer(null, "none");
    running.assign(List.of(TP));
    running.seek(TP, 0);
    pollTo(running, end);
    // The commit carries the epoch of the last record read, as a
    // consumer's own commit would: each snapshot has its own epoch.
    Optional<Integer> lastEpoch = before.get(before.size() - 1).leaderEpoch();
    assertTrue(lastEpoch.isPresent(), "records carry a leader epoch");
    try (KafkaConsumer<String, String> c = consumer(GROUP, "none")) {
      c.assign(List.of(TP));
      c.seek(TP, new OffsetAndMetadata(end, lastEpoch, ""));
      c.commitSync(Map.of(TP, new OffsetAndMetadata(end, lastEpoch, "")));
    }

    Lakegw.rollback(TOPIC, keep.id());
    Snap fresh = Lakegw.stepServed(TOPIC, false);
    Lakegw.stepServed(TOPIC, true);

    // The running consumer's next fetches find the truncation.
    try {
      LogTruncationException e = expectTruncation(running);
      assertEquals(keptEnd, e.divergentOffsets().get(TP).offset(), "running consumer: divergent offset");
    } finally {
      running.close();
    }

    int validations = Lakegw.apiCalls("OffsetForLeaderEpoch");
    // A restarted member of the group: its committed position (last epoch)
    // is validated and found truncated.
    try (KafkaConsumer<String, String> c = consumer(GROUP, "none")) {
      c.subscribe(List.of(TOPIC));
      LogTruncationException e = expectTruncation(c);
      assertEquals(keptEnd, e.divergentOffsets().get(TP).offset(), "restarted consumer: divergent offset");
    }
    assertTrue(Lakegw.apiCalls("OffsetForLeaderEpoch") > validations, "validated through OffsetForLeaderEpoch: " + Lakegw.apis());

    // With a reset policy the consumer moves to where history diverged
    // and reads the new history from there.
    try (KafkaConsumer<String, String> c = consumer(GROUP, "earliest")) {
      c.subscribe(List.of(TOPIC));
      long newEnd = endOffset();
      List<ConsumerRecord<String, String>> got = pollTo(c, newEnd);
      assertEquals(keptEnd, got.get(0).offset(), "after truncation the consumer resumes where history diverged");
      assertEquals(String.valueOf(fresh.id()), Lakegw.header(got.get(0), "lakegw.snapshot-id"));
    }

    // And the new history, read from the start, is the table.
    assertEquals(Lakegw.rows(TOPIC).rows(), materialise(Lakegw.readAll(TOPIC)), "after the rollback");
  }

  /**
   * Two members of one group share a two-partition topic (JoinGroup,
   * SyncGroup, Heartbeat through a rebalance): each gets one partition,
   * together they read every record once, and their commits are the ends.
   */
  @Test
  @org.junit.jupiter.api.Order(4)
  void twoGroupMembersSplitThePartitions() throws Exception {
    String topic = "flink.orders_upsert";
    String group = "java-consumer-pair";
    List<ConsumerRecord<String, String>> all = Lakegw.readAll(topic);
    Map<TopicPartition, Long> end = new HashMap<>();
    for (ConsumerRecord<String, String> r : all) {
      end.merge(new TopicPartition(topic, r.partition()), r.offset() + 1, Math::max);
    }
    assertEquals(2, end.size(), "records in both partitions");
    try (KafkaConsumer<String, String> a = consumer(group, "earliest");
        KafkaConsumer<String, String> b = consumer(group, "earliest")) {
      a.subscribe(List.of(topic));
      b.subscribe(List.of(topic));
      Map<String, Integer> seen = new HashMap<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (true) {
        for (KafkaConsumer<String, String> c : List.of(a, b)) {
          c.poll(Duration.ofMillis(100)).forEach(r -> seen.merge(r.partition() + ":" + r.offset(), 1, Integer::sum));
        }
        boolean split = a.assignment().size() == 1 && b.assignment().size() == 1;
        boolean atEnd = split
            && a.position(a.assignment().iterator().next()) == end.get(a.assignment().iterator().next())
            && b.position(b.assignment().iterator().next()) == end.get(b.assignment().iterator().next());
        if (atEnd && seen.size() == all.size()) {
          break;
        }
        if (System.nanoTime() > deadline) {
          fail("two members: assignments " + a.assignment() + " / " + b.assignment() + ", read " + seen.size() + " of " + all.size());
        }
      }
      // A member may re-read what it had not committed before the rebalance
      // moved a partition; every record was read, none beyond the end.
      assertEquals(all.size(), seen.size());
      a.commitSync();
      b.commitSync();
      Map<TopicPartition, Long> committed = new HashMap<>();
      for (KafkaConsumer<String, String> c : List.of(a, b)) {
        c.committed(c.assignment()).forEach((tp, om) -> committed.put(tp, om.offset()));
      }
      assertEquals(end, committed, "the members' commits");
    }
  }

  static LogTruncationException expectTruncation(KafkaConsumer<String, String> c) {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (System.nanoTime() < deadline) {
      try {
        var recs = c.poll(Duration.ofMillis(200));
        if (!recs.isEmpty()) {
          fail("read " + recs.count() + " records from offset " + recs.iterator().next().offset()
              + " of the rewritten history instead of detecting truncation");
        }
      } catch (LogTruncationException e) {
        return e;
      }
    }
    fail("no LogTruncationException within 30 s");
    return null;
  }
}
