// Package e2e holds end-to-end tests: the built lakegw binary, real tables
// written through iceberg-go, and real Kafka clients (franz-go, kcat,
// confluent-kafka and kafka-python).
package e2e
