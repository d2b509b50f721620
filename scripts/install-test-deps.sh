#!/usr/bin/env bash
# Installs what the tests need beyond Go: kcat (librdkafka) and the Python
# Kafka clients. Idempotent and quick when everything is there already.
set -euo pipefail
cd "$(dirname "$0")/.."

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "install-test-deps: $1 is missing and this is not root; install it by hand" >&2
    return 1
  fi
}

if ! command -v kcat >/dev/null 2>&1; then
  need_root kcat
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null
fi

if ! python3 -c 'import confluent_kafka, kafka' >/dev/null 2>&1; then
  python3 -m pip install -q -r e2e/clients/requirements.txt
fi

go mod download
