#!/usr/bin/env bash
# Apache Kafka's command-line tools, from Maven Central (no binary tarball):
# e2e/kafka_tools_test.go runs them against lakegw.
#
#   kafkatools.sh fetch              copy kafka-tools and its runtime jars into the cache, compile
#                                    ClientApiVersions.java and dump the class-data-sharing archive
#                                    (each once; again when what it is made from changes)
#   kafkatools.sh classpath          print the tools' classpath (fetching first if needed)
#   kafkatools.sh TOOL ARGS...       run a tool as bin/TOOL.sh of Kafka's distribution does, e.g.
#                                    kafkatools.sh kafka-topics --bootstrap-server 127.0.0.1:9092 --list;
#                                    TOOL client-api-versions prints the client jar's latest version
#                                    of each API (ClientApiVersions.java)
#   kafkatools.sh classlist DIR      merge the class lists that runs with KAFKATOOLS_CLASSLIST_DIR=DIR
#                                    wrote into classlist.txt (after a Kafka upgrade: run the tests
#                                    with KAFKATOOLS_CLASSLIST_DIR set, then this)
#
# Environment: LAKEGW_KAFKA_TOOLS_CACHE (default ~/.cache/lakegw-kafka-tools),
# KAFKA_HEAP_OPTS (default -Xmx256M, as kafka-run-class.sh for tools),
# KAFKA_JVM_OPTS (default: C1 only and the serial collector, which start a
# short-lived JVM fastest), KAFKATOOLS_SKIP_FETCH=1 (a TOOL run skips the
# fetch checks: the caller fetched), KAFKATOOLS_CLASSLIST_DIR (see
# classlist). Needs Java 17+ and Maven.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# The version lives in pom.xml alone; it names the cache directory.
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
cache=${LAKEGW_KAFKA_TOOLS_CACHE:-$HOME/.cache/lakegw-kafka-tools}/kafka-tools-$version
libs=$cache/libs
app=$cache/app/lakegw-kafkatools.jar
jsa=$cache/tools.jsa

# The main class behind each bin/*.sh script of Kafka 4.4 (all in
# kafka-tools: ConfigCommand moved there from core's kafka.admin).
main_class() {
	case $1 in
	kafka-topics) echo org.apache.kafka.tools.TopicCommand ;;
	kafka-consumer-groups) echo org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
	kafka-get-offsets) echo org.apache.kafka.tools.GetOffsetShell ;;
	kafka-cluster) echo org.apache.kafka.tools.ClusterTool ;;
	kafka-configs) echo org.apache.kafka.tools.ConfigCommand ;;
	kafka-broker-api-versions) echo org.apache.kafka.tools.BrokerApiVersionsCommand ;;
	kafka-console-consumer) echo org.apache.kafka.tools.consumer.ConsoleConsumer ;;
	kafka-console-producer) echo org.apache.kafka.tools.ConsoleProducer ;;
	client-api-versions) echo ClientApiVersions ;;
	*) return 1 ;;
	esac
}

# An explicit, sorted classpath rather than libs/*: the class-data-sharing
# archive is valid only for the very classpath it was dumped with, and a
# wildcard expands in directory order.
classpath() {
	local cp=$app f
	for f in "$libs"/*.jar; do cp+=:$f; done
	echo "$cp"
}

fetch() {
	command -v java >/dev/null || { echo "kafkatools.sh: java (17+) is needed" >&2; exit 1; }
	# Each marker holds the checksum of what its step is made from.
	local sum
	sum=$(sha256sum "$here/pom.xml" | cut -d' ' -f1)
	if [[ ! -f $libs/.complete || $(cat "$libs/.complete") != "$sum" ]]; then
		command -v mvn >/dev/null || { echo "kafkatools.sh: maven is needed" >&2; exit 1; }
		echo "kafkatools.sh: fetching Apache Kafka $version tools from Maven Central into $libs" >&2
		rm -rf "$libs.tmp"
		mvn -q -B -ntp -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies \
			-DincludeScope=runtime -DoutputDirectory="$libs.tmp" >&2
		rm -rf "$libs" "$cache/app" "$jsa"
		mv "$libs.tmp" "$libs"
		echo "$sum" >"$libs/.complete"
	fi
	# A checksum, not file times: CI works in a fresh clone each run.
	sum=$(sha256sum "$here/ClientApiVersions.java" | cut -d' ' -f1)
	if [[ ! -f $app || ! -f $app.sum || $(cat "$app.sum") != "$sum" ]]; then
		local tmp=$cache/app.tmp
		rm -rf "$tmp"
		mkdir -p "$tmp/classes"
		javac -nowarn -cp "$libs/*" -d "$tmp/classes" "$here/ClientApiVersions.java"
		# A jar, not a directory: class-data sharing refuses a classpath
		# holding a non-empty directory.
		jar cf "$tmp/lakegw-kafkatools.jar" -C "$tmp/classes" .
		rm -rf "$cache/app" "$jsa"
		mkdir -p "$cache/app"
		mv "$tmp/lakegw-kafkatools.jar" "$app"
		echo "$sum" >"$app.sum"
		rm -rf "$tmp"
	fi
	# A static class-data-sharing archive of the classes the tools load
	# (classlist.txt): a tool then starts in about a second instead of
	# three, which is most of the tests' wall time. It depends on the exact
	# JVM, so the JVM's version is part of its checksum.
	sum=$( (cat "$here/classlist.txt" "$libs/.complete"; java -Xshare:off -version 2>&1) | sha256sum | cut -d' ' -f1)
	if [[ ! -f $jsa || ! -f $jsa.sum || $(cat "$jsa.sum") != "$sum" ]]; then
		rm -f "$jsa" "$jsa.sum"
		# Classes of the list that no longer exist or cannot be archived are
		# skipped with a warning: a stale list only makes starts slower.
		java -Xshare:dump -XX:SharedClassListFile="$here/classlist.txt" -XX:SharedArchiveFile="$jsa.tmp" \
			-cp "$(classpath)" >"$cache/cds-dump.log" 2>&1 ||
			{ echo "kafkatools.sh: dumping the CDS archive failed, see $cache/cds-dump.log" >&2; rm -f "$jsa.tmp"; return 0; }
		mv "$jsa.tmp" "$jsa"
		echo "$sum" >"$jsa.sum"
	fi
}

case ${1:-} in
fetch) fetch ;;
classpath) fetch; classpath ;;
classlist)
	[[ $# -eq 2 ]] || { echo "usage: kafkatools.sh classlist DIR" >&2; exit 2; }
	{
		echo "# The classes Kafka's tools load in e2e/kafka_tools_test.go (-XX:DumpLoadedClassList),"
		echo "# for the class-data-sharing archive kafkatools.sh fetch dumps. Made by kafkatools.sh classlist."
		# Not the JVM's comments and lambda forms, nor the classes it
		# generates at run time (proxies, reflection accessors).
		cat "$2"/*.classlist | grep -v -e '^[#@]' -e '/\$Proxy[0-9]' -e '/Generated[A-Za-z]*Accessor[0-9]' |
			LC_ALL=C sort -u
	} >"$here/classlist.txt"
	;;
kafka-* | client-api-versions)
	class=$(main_class "$1") || { echo "kafkatools.sh: unknown tool $1" >&2; exit 2; }
	tool=$1
	shift
	# KAFKATOOLS_SKIP_FETCH=1: the caller ran fetch already (e2e tests
	# run it once, not once per tool).
	[[ -n ${KAFKATOOLS_SKIP_FETCH:-} ]] || fetch
	share=(-Xshare:auto)
	if [[ -n ${KAFKATOOLS_CLASSLIST_DIR:-} ]]; then
		# Recording what a run loads: every class, none from an archive.
		mkdir -p "$KAFKATOOLS_CLASSLIST_DIR"
		share=(-Xshare:off "-XX:DumpLoadedClassList=$KAFKATOOLS_CLASSLIST_DIR/$tool.$$.classlist")
	elif [[ -f $jsa ]]; then
		share+=("-XX:SharedArchiveFile=$jsa")
	fi
	# shellcheck disable=SC2086 # the options are word lists
	exec java ${KAFKA_HEAP_OPTS:--Xmx256M} ${KAFKA_JVM_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC} \
		"${share[@]}" -Djava.awt.headless=true -Dlog4j2.configurationFile="$here/log4j2.properties" \
		-cp "$(classpath)" "$class" "$@"
	;;
*) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
