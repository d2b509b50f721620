#!/usr/bin/env python3
"""Consume a lakegw topic with confluent-kafka (librdkafka), for the Go e2e tests.

Prints one JSON object per consumed record on stdout:
  {"topic", "partition", "offset", "timestamp" (ms), "key", "value", "headers": [[k, v], ...]}
and, in "times" mode, one {"timestamp", "partition", "offset"} per asked timestamp.

Modes:
  assign   assign partition 0 at the beginning, read until the end of the partition
  group    subscribe as a member of --group, read until every assigned partition is
           at its end, commit synchronously, close (leaves the group)
  times    offsets_for_times of partition 0 at each --ts

Any client error, and not finishing within --timeout seconds, exits non-zero.
"""
import argparse
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition


def text(b):
    return None if b is None else b.decode("utf-8")


def emit(msg):
    _, ts = msg.timestamp()
    print(json.dumps({
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": ts,
        "key": text(msg.key()),
        "value": text(msg.value()),
        "headers": [[k, text(v)] for k, v in (msg.headers() or [])],
    }), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["assign", "group", "times"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", default="")
    ap.add_argument("--ts", type=int, nargs="*", default=[])
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()

    errors = []

    def on_error(err):
        errors.append(str(err))
        print("client error: %s" % err, file=sys.stderr, flush=True)

    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group or "lakegw-e2e-unused",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "max.partition.fetch.bytes": 65536,  # several fetches for the big snapshot
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "error_cb": on_error,
    }
    c = Consumer(conf)
    deadline = time.monotonic() + args.timeout

    if args.mode == "times":
        tps = [TopicPartition(args.topic, 0, ts) for ts in args.ts]
        # One lookup per timestamp: a request holds a partition only once.
        for tp in tps:
            got = c.offsets_for_times([tp], timeout=args.timeout)[0]
            if got.error:
                raise KafkaException(got.error)
            print(json.dumps({"timestamp": tp.offset, "partition": got.partition, "offset": got.offset}), flush=True)
        c.close()
        return 1 if errors else 0

    assigned = set()
    at_end = set()
    if args.mode == "assign":
        c.assign([TopicPartition(args.topic, 0, OFFSET_BEGINNING)])
        assigned.add(0)
    else:
        def on_assign(consumer, parts):
            for p in parts:
                assigned.add(p.partition)

        c.subscribe([args.topic], on_assign=on_assign)

    consumed = 0
    while not (assigned and at_end >= assigned):
        if time.monotonic() > deadline:
            print("timed out: assigned %s, at end %s, %d records" % (sorted(assigned), sorted(at_end), consumed),
                  file=sys.stderr, flush=True)
            return 2
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
                continue
            raise KafkaException(msg.error())
        at_end.discard(msg.partition())
        consumed += 1
        emit(msg)

    if args.mode == "group" and consumed:
        c.commit(asynchronous=False)
    c.close()
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
