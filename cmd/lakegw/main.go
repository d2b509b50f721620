// Command lakegw serves the changes of Apache Iceberg tables over the Kafka
// protocol.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `lakegw serves the changes of Iceberg tables as Kafka topics.

Usage:
  lakegw serve [flags]                   run the gateway
  lakegw quickstart [flags]              run the gateway with a live demo table (demo.orders)
  lakegw table register NS.TABLE METADATA-LOCATION [--remap-location OLD=NEW ...] [flags]
  lakegw table list [flags]
  lakegw table create NS.TABLE --schema 'id long, name string' --primary-key id [--buckets N]
                      [--merge-engine deduplicate|partial-update|aggregation|first-row] [--agg COL=FUNC ...]
                      [--format-version 2|3]
                                         create a lakegw primary-key (LSM) table
  lakegw load NS.TABLE FILE.jsonl|FILE.csv   upsert rows into an LSM table ("_op":"delete" deletes)
  lakegw compact NS.TABLE                merge an LSM table's sorted runs
  lakegw maintain NS.TABLE [--dry-run]   one maintenance pass: expire snapshots, remove their files and
                                         orphans, cap metadata files, merge manifests, compact small files
  lakegw get NS.TABLE KEY                point lookup of a key (JSON object, or the value of a one-column key)

Every flag can also be set by a LAKEGW_* environment variable (--poll-interval
is LAKEGW_POLL_INTERVAL) or in a YAML file given by --config, with the same names.
Run "lakegw COMMAND -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lakegw:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("missing command")
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], false)
	case "quickstart":
		return cmdServe(ctx, args[1:], true)
	case "table":
		if len(args) > 1 && args[1] == "create" {
			return cmdLsmCreate(ctx, args[2:])
		}
		return cmdTable(ctx, args[1:])
	case "load":
		return cmdLsmLoad(ctx, args[1:])
	case "compact":
		return cmdLsmCompact(ctx, args[1:])
	case "get":
		return cmdLsmGet(ctx, args[1:])
	case "maintain":
		return cmdMaintain(ctx, args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(os.Stdout, usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
