package lakegw.flink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The Java kafka-clients producer (4.x) with its defaults (idempotence on,
 * acks=all) writes a raw topic that AdminClient.createTopics made, and the
 * Java consumer reads back every acknowledged record at its partition and
 * offset: key, value (null and empty apart), headers and timestamp.
 */
class JavaProducerTest {
  static final String TOPIC = "java_produced";
  static final int PARTITIONS = 3;
  static final int COUNT = 3000;
  static final long TS0 = 1_700_000_000_000L;

  static byte[] bytes(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  static byte[] keyOf(int i) {
    return i % 7 == 0 ? null : bytes("k" + i);
  }

  static byte[] valueOf(int i) {
    if (i % 11 == 0) {
      return null; // a tombstone
    }
    return i % 13 == 0 ? new byte[0] : bytes("v" + i);
  }

  @Test
  void producedRecordsReadBackExactly() throws Exception {
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
    }
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
    Map<String, Integer> byPosition = new HashMap<>();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
      List<Future<RecordMetadata>> acks = new ArrayList<>();
      for (int i = 0; i < COUNT; i++) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(TOPIC, i % PARTITIONS, TS0 + i, keyOf(i), valueOf(i));
        r.headers().add("n", bytes(Integer.toString(i)));
        acks.add(producer.send(r));
      }
      producer.flush();
      for (int i = 0; i < COUNT; i++) {
        RecordMetadata md = acks.get(i).get();
        assertEquals(i % PARTITIONS, md.partition());
        byPosition.put(md.partition() + "/" + md.offset(), i);
      }
    }
    assertEquals(COUNT, byPosition.size(), "every record acknowledged at its own offset");

    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Lakegw.bootstrap());
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int p = 0; p < PARTITIONS; p++) {
        tps.add(new TopicPartition(TOPIC, p));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      int read = 0;
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (read < COUNT) {
        if (System.nanoTime() > deadline) {
          fail("read " + read + " of " + COUNT + " records within 60 s");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          Integer i = byPosition.remove(r.partition() + "/" + r.offset());
          assertTrue(i != null, "record at " + r.partition() + "/" + r.offset() + " was not produced there, or read twice");
          read++;
          if (keyOf(i) == null) {
            assertNull(r.key(), "key of record " + i);
          } else {
            assertArrayEquals(keyOf(i), r.key(), "key of record " + i);
          }
          if (valueOf(i) == null) {
            assertNull(r.value(), "value of record " + i);
          } else {
            assertArrayEquals(valueOf(i), r.value(), "value of record " + i);
          }
          assertEquals(TS0 + i, r.timestamp(), "timestamp of record " + i);
          Header[] hs = r.headers().toArray();
          assertEquals(1, hs.length, "headers of record " + i);
          assertEquals("n", hs[0].key());
          assertArrayEquals(bytes(Integer.toString(i)), hs[0].value());
        }
      }
    }
    assertTrue(byPosition.isEmpty(), byPosition.size() + " acknowledged records not read back");
  }
}
