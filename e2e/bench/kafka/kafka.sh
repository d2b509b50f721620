#!/usr/bin/env bash
# The Apache Kafka broker of the side-by-side benchmark (e2e/bench), from
# Maven Central: no binary tarball, no Docker.
#
#   kafka.sh fetch                 copy kafka_2.13 and its runtime jars into the cache (once)
#   kafka.sh run DIR PORT CPORT    format DIR and run a KRaft single node (broker+controller)
#                                  on 127.0.0.1:PORT (controller on 127.0.0.1:CPORT), in the
#                                  foreground: the caller stops it with SIGTERM
#   kafka.sh classpath             print the broker's classpath (fetching first if needed)
#   kafka.sh java-consumer ARGS    run BenchConsumer.java (Kafka's KafkaConsumer) with ARGS
#
# Environment: KAFKA_VERSION (default 4.1.2), LAKEGW_BENCH_CACHE (default
# ~/.cache/lakegw-bench), KAFKA_HEAP_OPTS (default -Xmx1G -Xms1G, as
# kafka-server-start.sh). Needs Java 17+ and Maven.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${KAFKA_VERSION:-4.1.2}
cache=${LAKEGW_BENCH_CACHE:-$HOME/.cache/lakegw-bench}
libs=$cache/kafka-$version/libs

fetch() {
	if [[ -f $libs/.complete ]]; then
		return 0
	fi
	command -v java >/dev/null || { echo "kafka.sh: java (17+) is needed" >&2; exit 1; }
	command -v mvn >/dev/null || { echo "kafka.sh: maven is needed" >&2; exit 1; }
	echo "kafka.sh: fetching Apache Kafka $version from Maven Central into $libs" >&2
	rm -rf "$libs.tmp"
	mvn -q -B -f "$here/pom.xml" -Dkafka.version="$version" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$libs.tmp" >&2
	rm -rf "$libs"
	mv "$libs.tmp" "$libs"
	touch "$libs/.complete"
}

run() {
	local dir=$1 port=$2 cport=$3
	fetch
	mkdir -p "$dir/data"
	cat >"$dir/server.properties" <<PROPS
# KRaft single node; everything else is Kafka's default configuration.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
# A single node cannot hold three replicas of the internal topics.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
PROPS
	cat >"$dir/log4j2.properties" <<'PROPS'
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka.server.KafkaRaftServer
logger.kafka.level = INFO
PROPS
	local cp="$libs/*"
	# The JVM options of kafka-server-start.sh / kafka-run-class.sh.
	local jvm=(${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G} -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
		-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15
		-Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties")
	if [[ ! -f $dir/data/meta.properties ]]; then
		# Static voters (controller.quorum.voters): a plain format, no --standalone.
		java "${jvm[@]}" -cp "$cp" kafka.tools.StorageTool format -t "lakegw-bench-$RANDOM$RANDOM" \
			-c "$dir/server.properties" >&2
	fi
	exec java "${jvm[@]}" -cp "$cp" kafka.Kafka "$dir/server.properties"
}

case ${1:-} in
fetch) fetch ;;
classpath) fetch; echo "$libs/*" ;;
java-consumer) shift; fetch; exec java -Xmx1G -cp "$libs/*" "$here/BenchConsumer.java" "$@" ;;
run) shift; [[ $# -eq 3 ]] || { echo "usage: kafka.sh run DIR PORT CONTROLLER_PORT" >&2; exit 2; }; run "$@" ;;
*) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac
