package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Static membership (KIP-345) with the Java 4.x consumer on the classic
 * protocol: a member with a group.instance.id that restarts within its
 * session timeout gets its assignment back in the same generation, without
 * a rebalance: the leader (told to skip the assignment, JoinGroup v9) and a
 * follower alike. Closing a static member does not leave the group.
 */
class JavaStaticMemberTest {
  static final String TOPIC = "java_static";
  static final String GROUP = "java-static";

  /** A static member polling on its own thread; what it sees is published. */
  static final class Member {
    final Thread thread;
    volatile boolean stop;
    volatile Throwable failure;
    volatile int generation = -1;
    volatile String memberId = "";
    volatile Set<Integer> assignment = Set.of();

    Member(String instance) {
      thread = new Thread(() -> run(instance), "static-" + instance);
      thread.start();
    }

    void run(String instance) {
      Properties p = Lakegw.consumerProps(GROUP);
      p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
      p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
      p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "60000");
      p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      p.put(ConsumerConfig.CLIENT_ID_CONFIG, "static-" + instance);
      try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
        c.subscribe(List.of(TOPIC));
        while (!stop) {
          c.poll(Duration.ofMillis(100));
          Set<Integer> parts = new TreeSet<>();
          c.assignment().forEach(tp -> parts.add(tp.partition()));
          assignment = parts;
          generation = c.groupMetadata().generationId();
          memberId = c.groupMetadata().memberId();
        }
      } catch (Throwable t) {
        failure = t;
      }
    }

    void close() throws InterruptedException {
      stop = true;
      thread.join(60_000);
      assertTrue(!thread.isAlive(), "member did not close in 60 s");
      if (failure != null) {
        throw new AssertionError("member failed", failure);
      }
    }
  }

  @Test
  void restartedStaticMembersKeepTheirAssignment() throws Exception {
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(TOPIC, 2, (short) 1))).all().get();
    }
    Member leader = new Member("pod-a");
    Lakegw.await("the first member owns both partitions", Duration.ofSeconds(60),
        () -> leader.assignment.equals(Set.of(0, 1)));
    Member follower = new Member("pod-b");
    Lakegw.await("the two members split the partitions", Duration.ofSeconds(60),
        () -> leader.assignment.size() == 1 && follower.assignment.size() == 1
            && leader.generation == follower.generation,
        () -> "leader " + leader.assignment + " gen " + leader.generation + ", follower " + follower.assignment + " gen " + follower.generation);
    int generation = leader.generation;
    Set<Integer> leaderParts = leader.assignment;
    Set<Integer> followerParts = follower.assignment;

    // The leader restarts: same generation, same partitions, no rebalance.
    String oldLeaderId = leader.memberId;
    leader.close();
    Member leader2 = new Member("pod-a");
    Lakegw.await("the restarted leader has its partition back", Duration.ofSeconds(60),
        () -> !leader2.assignment.isEmpty(), () -> "assignment " + leader2.assignment);
    assertEquals(generation, leader2.generation, "generation after the leader restarted");
    assertEquals(leaderParts, leader2.assignment, "the leader's partitions after its restart");
    assertNotEquals(oldLeaderId, leader2.memberId, "a restarted static member gets a new member id");

    // The follower restarts: the same again.
    follower.close();
    Member follower2 = new Member("pod-b");
    Lakegw.await("the restarted follower has its partition back", Duration.ofSeconds(60),
        () -> !follower2.assignment.isEmpty(), () -> "assignment " + follower2.assignment);
    assertEquals(generation, follower2.generation, "generation after the follower restarted");
    assertEquals(followerParts, follower2.assignment, "the follower's partitions after its restart");
    assertEquals(generation, leader2.generation, "the leader's generation after the follower restarted");
    leader2.close();
    follower2.close();
  }
}
