package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

// consumeJava reads [from, to) of partition 0 of topic with Apache Kafka's
// Java KafkaConsumer (kafka/BenchConsumer.java, run by kafka.sh on the
// broker's classpath), timed inside the JVM from consumer creation to the
// last record, as consume times franz-go. The JVM starts cold every time,
// for Kafka and lakegw alike.
func consumeJava(ctx context.Context, kafkaScript, addr, topic string, from, to int64) (consumeResult, error) {
	var res consumeResult
	cmd := exec.CommandContext(ctx, "bash", kafkaScript, "java-consumer", addr, topic,
		strconv.FormatInt(from, 10), strconv.FormatInt(to, 10))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("java consumer of %s at %s: %w\n%s", topic, addr, err, stderr.Bytes())
	}
	var out struct {
		Records   int64  `json:"records"`
		Bytes     int64  `json:"bytes"`
		ElapsedNs int64  `json:"elapsed_ns"`
		Sum       uint32 `json:"sum"`
	}
	// The result is the last line: anything the client logs comes before.
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &out); err != nil {
		return res, fmt.Errorf("java consumer output %q: %w", stdout.Bytes(), err)
	}
	if out.Records != to-from {
		return res, fmt.Errorf("java consumer read %d records of %s, want %d", out.Records, topic, to-from)
	}
	return consumeResult{Records: out.Records, Bytes: out.Bytes, Elapsed: time.Duration(out.ElapsedNs), Sum: out.Sum}, nil
}

// javaPasses measures Kafka, lakegw cold (a new gateway, left in *g) and
// lakegw warm with the Java consumer, as the franz-go passes do.
func javaPasses(ctx context.Context, c config, r *results, rep int, kafka *procs.Proc, g **procs.Proc, gw gatewayOpts, total int64) error {
	cpu0 := procs.CPUSeconds(kafka.Pid())
	kr, err := consumeJava(ctx, c.kafkaScript, kafka.Addr, mainTopic, 0, total)
	if err != nil {
		return err
	}
	r.addRep("kafka_java", rep, kr, procs.CPUSeconds(kafka.Pid())-cpu0)
	(*g).Stop()
	if *g, err = startGateway(ctx, gw); err != nil {
		return err
	}
	for _, kind := range []string{"cold_java", "warm_java"} {
		cpu0 := procs.CPUSeconds((*g).Pid())
		res, err := consumeJava(ctx, c.kafkaScript, (*g).Addr, mainTopic, 0, total)
		if err != nil {
			return err
		}
		r.addRep(kind, rep, res, procs.CPUSeconds((*g).Pid())-cpu0)
	}
	logf("rep %d, Java consumer: kafka %.0f rec/s, lakegw cold %.0f, warm %.0f", rep+1,
		r.reps["kafka_java"][rep].res.recsPerSec(), r.reps["cold_java"][rep].res.recsPerSec(), r.reps["warm_java"][rep].res.recsPerSec())
	return nil
}
