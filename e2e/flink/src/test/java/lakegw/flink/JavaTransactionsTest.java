package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * The Java kafka-clients producer's transactional API against lakegw:
 * committed transactions become visible whole with dense offsets, aborted
 * ones never (read_committed and read_uncommitted alike), a second producer
 * of the transactional id fences the first, and a transaction open past
 * transaction.timeout.ms is aborted and its producer fenced.
 */
class JavaTransactionsTest {
  static final String TOPIC = "java_txn";
  static final int PARTITIONS = 2;

  static KafkaProducer<String, String> producer(String txnId, int timeoutMs) {
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
    pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.toString(timeoutMs));
    pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
    KafkaProducer<String, String> p = new KafkaProducer<>(pp);
    p.initTransactions();
    return p;
  }

  static void send(KafkaProducer<String, String> p, String prefix, int n) throws Exception {
    for (int i = 0; i < n; i++) {
      p.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, Integer.toString(i), prefix + "-" + i));
    }
    p.flush();
  }

  static List<ConsumerRecord<String, String>> readAll(String isolation) {
    return Lakegw.readAll(TOPIC, isolation);
  }

  @Test
  void commitAbortFenceAndTimeout() throws Exception {
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);

      try (KafkaProducer<String, String> p = producer("java-tx", 60_000)) {
        p.beginTransaction();
        send(p, "committed", 100);
        TransactionDescription open = admin.describeTransactions(List.of("java-tx")).all().get().get("java-tx");
        assertEquals("ONGOING", open.state().name(), "kafka-transactions describe of an open transaction");
        assertEquals(0, readAll("read_uncommitted").size(), "records of an open transaction are visible");
        p.commitTransaction();

        p.beginTransaction();
        send(p, "aborted", 50);
        p.abortTransaction();

        p.beginTransaction();
        send(p, "later", 30);
        p.commitTransaction();
      }

      for (String isolation : List.of("read_committed", "read_uncommitted")) {
        Map<String, Integer> byTxn = new HashMap<>();
        Map<Integer, Long> next = new HashMap<>();
        for (ConsumerRecord<String, String> r : readAll(isolation)) {
          assertEquals((long) next.getOrDefault(r.partition(), 0L), r.offset(), isolation + ": offsets dense in partition " + r.partition());
          next.put(r.partition(), r.offset() + 1);
          byTxn.merge(r.value().substring(0, r.value().indexOf('-')), 1, Integer::sum);
        }
        assertEquals(Map.of("committed", 100, "later", 30), byTxn, isolation + ": records by transaction");
      }

      // Fencing: a second producer of the id fences the first.
      try (KafkaProducer<String, String> zombie = producer("java-fenced", 60_000)) {
        zombie.beginTransaction();
        send(zombie, "zombie", 5);
        try (KafkaProducer<String, String> successor = producer("java-fenced", 60_000)) {
          assertThrows(ProducerFencedException.class, zombie::commitTransaction, "the fenced producer's commit");
        }
      }

      // Timeout: aborted by lakegw, the producer fenced.
      try (KafkaProducer<String, String> slow = producer("java-slow", 1000)) {
        slow.beginTransaction();
        send(slow, "timedout", 5);
        Thread.sleep(3000);
        assertThrows(KafkaException.class, slow::commitTransaction, "the commit of a timed-out transaction");
      }
      assertEquals(130, readAll("read_committed").size(), "a fenced or timed-out transaction's records are visible");
      assertTrue(admin.listTransactions().all().get().stream().anyMatch(l -> l.transactionalId().equals("java-slow")),
          "kafka-transactions list shows the transactional ids");
    }
  }
}
