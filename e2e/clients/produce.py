#!/usr/bin/env python3
"""Produce records to a lakegw topic with confluent-kafka (librdkafka) or
kafka-python, for the Go e2e tests.

Record i goes to partition i % --partitions with key "k<i>", value "v<i>",
header ("n", "<i>") and timestamp --ts0 + i (ms). Prints one JSON object
{"i", "partition", "offset"} per acknowledged record on stdout; any
delivery error exits non-zero.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--ts0", type=int, default=1_700_000_000_000)
    ap.add_argument("--compression", default="none")
    a = ap.parse_args()
    acked = []
    if a.client == "confluent":
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": a.bootstrap, "enable.idempotence": True, "acks": "all",
                      "compression.type": a.compression, "linger.ms": 5})
        errors = []

        def done(i):
            def cb(err, msg):
                if err is not None:
                    errors.append(f"record {i}: {err}")
                else:
                    acked.append({"i": i, "partition": msg.partition(), "offset": msg.offset()})
            return cb

        for i in range(a.count):
            p.produce(a.topic, key=f"k{i}", value=f"v{i}", partition=i % a.partitions,
                      headers=[("n", str(i).encode())], timestamp=a.ts0 + i, on_delivery=done(i))
            p.poll(0)
        if p.flush(60) != 0:
            errors.append("records still unsent after 60 s")
        if errors:
            print("\n".join(errors[:10]), file=sys.stderr)
            sys.exit(1)
    else:
        from kafka import KafkaProducer
        comp = None if a.compression == "none" else a.compression
        p = KafkaProducer(bootstrap_servers=a.bootstrap, acks="all", compression_type=comp, linger_ms=5)
        futures = []
        for i in range(a.count):
            futures.append((i, p.send(a.topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % a.partitions,
                                      headers=[("n", str(i).encode())], timestamp_ms=a.ts0 + i)))
        p.flush(60)
        for i, f in futures:
            md = f.get(timeout=60)
            acked.append({"i": i, "partition": md.partition, "offset": md.offset})
        p.close()
    for r in acked:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
