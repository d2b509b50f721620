package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The Java 4.x consumer with group.protocol=consumer (KIP-848): the gateway
 * assigns partitions. Three members split six partitions, a member that
 * leaves hands its partitions to the others, and a member started after
 * all left resumes at the committed offsets. Every record is consumed
 * exactly once, no partition is ever owned by two members (the clients'
 * own rebalance callbacks say so), and the Admin client describes the group
 * as a consumer group.
 *
 * <p>Run against gateways sharing a state store (-Dlakegw.cluster=the three
 * gateways' addresses, e2e/cluster_test.go), the same scenario runs with
 * each member bootstrapped at another gateway, with the classic protocol
 * and with KIP-848: the members find the group's coordinator and the
 * partitions' leaders among the gateways.
 */
class JavaConsumerProtocolTest {
  static String TOPIC = "java_kip848";
  static String GROUP = "java-kip848";
  static final int PARTITIONS = 6;

  /** Which member owns each partition, from the rebalance callbacks. */
  static final Map<Integer, String> owner = new ConcurrentHashMap<>();
  static final List<String> violations = new CopyOnWriteArrayList<>();
  static final Map<String, List<String>> consumed = new ConcurrentHashMap<>();

  /** A consumer polling on its own thread until closed. */
  static final class Member implements ConsumerRebalanceListener {
    final String name;
    final String bootstrap;
    final String protocol;
    final Thread thread;
    volatile boolean stop;
    volatile Throwable failure;

    Member(String name) {
      this(name, Lakegw.bootstrap(), "consumer");
    }

    Member(String name, String bootstrap, String protocol) {
      this.name = name;
      this.bootstrap = bootstrap;
      this.protocol = protocol;
      this.thread = new Thread(this::run, "member-" + name);
      this.thread.start();
    }

    void run() {
      Properties p = Lakegw.consumerProps(GROUP);
      p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
      p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kip848-" + name);
      try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
        c.subscribe(List.of(TOPIC), this);
        while (!stop) {
          var records = c.poll(Duration.ofMillis(200));
          records.forEach(r -> consumed.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(name));
          if (!records.isEmpty()) {
            // Committed before the next poll: a partition that moves
            // carries no uncommitted records with it.
            c.commitSync();
          }
        }
      } catch (Throwable t) {
        failure = t;
      }
    }

    void close() throws InterruptedException {
      stop = true;
      thread.join(60_000);
      assertTrue(!thread.isAlive(), name + " did not close in 60 s");
      if (failure != null) {
        throw new AssertionError(name + " failed", failure);
      }
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
      for (TopicPartition tp : parts) {
        String prev = owner.put(tp.partition(), name);
        if (prev != null && !prev.equals(name)) {
          violations.add("partition " + tp.partition() + " given to " + name + " while " + prev + " owns it");
        }
      }
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
      parts.forEach(tp -> owner.remove(tp.partition(), name));
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> parts) {
      onPartitionsRevoked(parts);
    }
  }

  static int next = 0;

  static void produce(KafkaProducer<String, String> producer, int n) throws Exception {
    for (int i = 0; i < n; i++, next++) {
      producer.send(new ProducerRecord<>(TOPIC, next % PARTITIONS, "k" + next, String.format("v%05d", next)));
    }
    producer.flush();
  }

  static boolean balanced(int members, int each) {
    Map<String, Integer> counts = new HashMap<>();
    owner.values().forEach(n -> counts.merge(n, 1, Integer::sum));
    return counts.size() == members && counts.values().stream().allMatch(c -> c == each);
  }

  @Test
  @DisabledIfSystemProperty(named = "lakegw.cluster", matches = ".+")
  void consumerProtocolGroup() throws Exception {
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (Admin admin = Admin.create(ap); KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
      produce(producer, 300);

      Member a = new Member("a");
      Member b = new Member("b");
      Member c = new Member("c");
      Lakegw.await("three members with two partitions each", Duration.ofSeconds(90), () -> balanced(3, 2), owner::toString);
      Lakegw.await("300 records consumed", Duration.ofSeconds(60), () -> consumed.size() == 300, () -> consumed.size() + " consumed");

      ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
      assertEquals(GroupType.CONSUMER, d.type(), "group type");
      assertEquals(GroupState.STABLE, d.groupState(), "group state");
      assertEquals(3, d.members().size(), "members");
      assertEquals("uniform", d.partitionAssignor(), "assignor");

      c.close();
      Lakegw.await("two members with three partitions each", Duration.ofSeconds(90), () -> balanced(2, 3), owner::toString);
      produce(producer, 300);
      Lakegw.await("600 records consumed", Duration.ofSeconds(60), () -> consumed.size() == 600, () -> consumed.size() + " consumed");
      a.close();
      b.close();

      Map<TopicPartition, OffsetAndMetadata> committed =
          admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
      for (int p = 0; p < PARTITIONS; p++) {
        assertEquals(100, committed.get(new TopicPartition(TOPIC, p)).offset(), "committed offset of partition " + p);
      }

      // A new member resumes where the group left off.
      produce(producer, 60);
      Member r = new Member("r");
      Lakegw.await("660 records consumed", Duration.ofSeconds(90), () -> consumed.size() == 660, () -> consumed.size() + " consumed");
      r.close();
    }
    assertOwnedAndConsumedOnce("");
  }

  /** No partition had two owners, and every record produced was consumed once. */
  static void assertOwnedAndConsumedOnce(String what) {
    assertEquals(List.of(), violations, what + "double ownership");
    List<String> twice = new ArrayList<>();
    for (int i = 0; i < next; i++) {
      String v = String.format("v%05d", i);
      List<String> by = consumed.get(v);
      if (by == null || by.size() != 1) {
        twice.add(v + " by " + by);
      }
    }
    assertEquals(List.of(), twice, what + "records not consumed exactly once");
  }

  /**
   * Members on three gateways sharing a state store: the classic protocol,
   * then KIP-848, each with its own topic and group.
   */
  @Test
  @EnabledIfSystemProperty(named = "lakegw.cluster", matches = ".+")
  void groupAcrossGateways() throws Exception {
    String[] gateways = System.getProperty("lakegw.cluster").split(",");
    assertEquals(3, gateways.length, "-Dlakegw.cluster names three gateways");
    for (String protocol : List.of("classic", "consumer")) {
      TOPIC = "java_cluster_" + protocol;
      GROUP = "java-cluster-" + protocol;
      owner.clear();
      violations.clear();
      consumed.clear();
      next = 0;
      Properties ap = new Properties();
      ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, gateways[2]);
      Properties pp = new Properties();
      pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, gateways[0]);
      pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      try (Admin admin = Admin.create(ap); KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
        admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
        produce(producer, 300);
        Member a = new Member("a", gateways[0], protocol);
        Member b = new Member("b", gateways[1], protocol);
        Member c = new Member("c", gateways[2], protocol);
        Lakegw.await(protocol + ": three members with two partitions each", Duration.ofSeconds(90), () -> balanced(3, 2), owner::toString);
        Lakegw.await(protocol + ": 300 records consumed", Duration.ofSeconds(60), () -> consumed.size() == 300, () -> consumed.size() + " consumed");
        if (protocol.equals("consumer")) {
          ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
          assertEquals(3, d.members().size(), "members");
        }
        c.close();
        Lakegw.await(protocol + ": two members with three partitions each", Duration.ofSeconds(90), () -> balanced(2, 3), owner::toString);
        produce(producer, 300);
        Lakegw.await(protocol + ": 600 records consumed", Duration.ofSeconds(60), () -> consumed.size() == 600, () -> consumed.size() + " consumed");
        a.close();
        b.close();
        Map<TopicPartition, OffsetAndMetadata> committed =
            admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
        for (int p = 0; p < PARTITIONS; p++) {
          assertEquals(100, committed.get(new TopicPartition(TOPIC, p)).offset(), protocol + ": committed offset of partition " + p);
        }
      }
      assertOwnedAndConsumedOnce(protocol + ": ");
    }
  }
}
