// The Java consumer of the side-by-side benchmark (e2e/bench): Apache
// Kafka's own KafkaConsumer, with its default configuration, reading
// [from, to) of partition 0 of one topic. It runs from source on the
// broker's classpath (kafka.sh java-consumer), which holds kafka-clients.
//
// It prints one line, {"records":..,"bytes":..,"elapsed_ns":..,"sum":..}:
// bytes counts keys, values and header keys and values, and sum is a
// CRC-32C over every record's offset, timestamp, key, value and headers in
// offset order, exactly as the Go consumer of the benchmark computes them,
// so that both clients can be checked to have read the same records.
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.zip.CRC32C;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class BenchConsumer {
    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: BenchConsumer BOOTSTRAP TOPIC FROM TO");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1];
        long from = Long.parseLong(args[2]), to = Long.parseLong(args[3]);
        long deadline = System.nanoTime() + Duration.ofMinutes(30).toNanos();

        long start = System.nanoTime();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // As the Go consumer: a shorter long-poll, which matters only at the
        // high watermark.
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "500");
        long records = 0, bytes = 0, next = from;
        CRC32C sum = new CRC32C();
        ByteBuffer longs = ByteBuffer.allocate(16);
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seek(tp, from);
            while (next < to) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no record past offset " + (next - 1) + " in 30 minutes");
                }
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofSeconds(1));
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    if (r.offset() < next || r.offset() >= to) {
                        continue;
                    }
                    if (r.offset() != next) {
                        throw new IllegalStateException("offset " + r.offset() + " after " + (next - 1));
                    }
                    next = r.offset() + 1;
                    records++;
                    longs.clear();
                    longs.putLong(r.offset()).putLong(r.timestamp());
                    sum.update(longs.array(), 0, 16);
                    if (r.key() != null) {
                        sum.update(r.key());
                        bytes += r.key().length;
                    }
                    if (r.value() != null) {
                        sum.update(r.value());
                        bytes += r.value().length;
                    }
                    for (Header h : r.headers()) {
                        byte[] k = h.key().getBytes(StandardCharsets.UTF_8);
                        sum.update(k);
                        bytes += k.length;
                        if (h.value() != null) {
                            sum.update(h.value());
                            bytes += h.value().length;
                        }
                    }
                }
            }
        }
        long elapsed = System.nanoTime() - start;
        System.out.printf("{\"records\":%d,\"bytes\":%d,\"elapsed_ns\":%d,\"sum\":%d}%n", records, bytes, elapsed, sum.getValue());
    }
}
