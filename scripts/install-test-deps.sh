#!/usr/bin/env bash
# Installs what the tests need beyond Go: kcat (librdkafka), Java and Maven,
# the Python Kafka clients and PyIceberg, and the PostgreSQL server the state
# store's tests start (internal/pgtest). Idempotent and quick when
# everything is there already.
set -euo pipefail
cd "$(dirname "$0")/.."

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "install-test-deps: $1 is missing and this is not root; install it by hand" >&2
    return 1
  fi
}

apt_install() {
  need_root "$1"
  if [ -z "${apt_updated:-}" ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v kcat >/dev/null 2>&1 || apt_install kcat

# The tests start their own PostgreSQL clusters (as the postgres user when
# run as root); the package's own cluster is not used.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || apt_install postgresql

# The S3 server of the lake-on-S3 tests (internal/s3test: versitygw, built once
# per version from the Go module proxy into ~/.cache/lakegw-s3), built here so
# that no test's time budget pays the first build. The test names the version.
go test -count=1 -run '^TestStartServesObjectsAndSeparatesServers$' ./internal/s3test/

# Java and Maven run the Iceberg Java writer, the REST catalog fixture and
# the Flink tests.
command -v java >/dev/null 2>&1 || apt_install openjdk-17-jdk-headless
command -v mvn >/dev/null 2>&1 || apt_install maven

if ! python3 -c 'import confluent_kafka, kafka' >/dev/null 2>&1; then
  python3 -m pip install -q -r e2e/clients/requirements.txt
fi

# PyIceberg writes test tables (and reads them as a second oracle).
if ! python3 -c 'import pyiceberg.catalog.sql, pyarrow, pyiceberg_core' >/dev/null 2>&1; then
  python3 -m pip install -q -r e2e/writers/pyiceberg/requirements.txt
fi

# Fetch the Flink job's Maven dependencies (about 170 MB on a fresh
# machine) here rather than inside the test's time budget.
(cd e2e/flink && mvn -B -q -ntp dependency:resolve dependency:resolve-plugins)

# Apache Kafka's command-line tools (about 45 MB of jars, and a 50 MB
# class-data-sharing archive dumped once) for e2e/kafka_tools_test.go.
bash e2e/kafkatools/kafkatools.sh fetch

go mod download
