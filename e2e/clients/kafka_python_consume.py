#!/usr/bin/env python3
"""Consume a lakegw topic with kafka-python (a pure-Python client), for the Go e2e tests.

Prints one JSON object per consumed record on stdout:
  {"topic", "partition", "offset", "timestamp" (ms), "key", "value", "headers": [[k, v], ...]}
and, in "times" mode, one {"timestamp", "partition", "offset"} per asked timestamp.

Modes:
  assign   assign partition 0, seek to the beginning, read up to the end offset
  group    subscribe as a member of --group, read until every assigned partition is
           at its end offset, commit synchronously, close (leaves the group)
  times    offsets_for_times of partition 0 at each --ts

An error logged by the client, an exception, or not finishing within --timeout
seconds exits non-zero.
"""
import argparse
import json
import logging
import sys
import time

import kafka
from kafka import KafkaConsumer, TopicPartition


class ErrorCounter(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.count = 0

    def emit(self, record):
        self.count += 1


def text(b):
    return None if b is None else b.decode("utf-8")


def emit(rec):
    print(json.dumps({
        "topic": rec.topic,
        "partition": rec.partition,
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "key": text(rec.key),
        "value": text(rec.value),
        "headers": [[k, text(v)] for k, v in (rec.headers or [])],
    }), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["assign", "group", "times"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", default=None)
    ap.add_argument("--ts", type=int, nargs="*", default=[])
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    errors = ErrorCounter()
    logging.getLogger().addHandler(errors)
    print("kafka-python %s" % kafka.__version__, file=sys.stderr, flush=True)

    timeout_ms = int(args.timeout * 1000)
    c = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group if args.mode == "group" else None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=65536,  # several fetches for the big snapshot
        fetch_max_bytes=65536,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        request_timeout_ms=timeout_ms + 1000,
        consumer_timeout_ms=timeout_ms,
    )
    deadline = time.monotonic() + args.timeout

    if args.mode == "times":
        tp = TopicPartition(args.topic, 0)
        for ts in args.ts:
            got = c.offsets_for_times({tp: ts})[tp]
            print(json.dumps({"timestamp": ts, "partition": 0, "offset": None if got is None else got.offset}), flush=True)
        c.close()
        return 1 if errors.count else 0

    if args.mode == "assign":
        tp = TopicPartition(args.topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
    else:
        c.subscribe([args.topic])

    consumed = 0
    while True:
        if time.monotonic() > deadline:
            print("timed out: assignment %s, %d records" % (c.assignment(), consumed), file=sys.stderr, flush=True)
            return 2
        for recs in c.poll(timeout_ms=200).values():
            for rec in recs:
                consumed += 1
                emit(rec)
        parts = c.assignment()
        if not parts:
            continue
        ends = c.end_offsets(list(parts))
        if all(c.position(tp) >= ends[tp] for tp in parts):
            break

    if args.mode == "group" and consumed:
        c.commit()  # synchronous
    c.close()
    return 1 if errors.count else 0


if __name__ == "__main__":
    sys.exit(main())
