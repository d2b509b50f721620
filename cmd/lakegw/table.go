package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/state"
)

func cmdTable(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("table: want a subcommand: register, list")
	}
	switch args[0] {
	case "register":
		return cmdTableRegister(ctx, args[1:])
	case "list":
		return cmdTableList(ctx, args[1:])
	}
	return fmt.Errorf("table: unknown subcommand %q", args[0])
}

// cmdTableRegister registers a table by its metadata file. Flags may follow
// the positional arguments, as the usage line shows.
func cmdTableRegister(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("table register", flag.ContinueOnError)
	common := addCommonFlags(fs)
	var remaps listFlag
	fs.Var(&remaps, "remap-location", "OLD=NEW: read files recorded under OLD from NEW (repeatable)")
	var pos []string
	for len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		pos, args = append(pos, args[0]), args[1:]
	}
	if err := parseConfig(fs, args); err != nil {
		return err
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 2 {
		return fmt.Errorf("table register: want NS.TABLE METADATA-LOCATION, got %d arguments", len(pos))
	}
	ident, err := lake.ParseIdent(pos[0])
	if err != nil {
		return err
	}
	// Stored absolute: the server reading the registration need not run in
	// this command's working directory.
	metaLoc, err := lake.AbsLocation(pos[1])
	if err != nil {
		return err
	}
	var rms []lake.Remap
	var stored []string
	for _, r := range remaps {
		rm, err := lake.ParseRemap(r)
		if err != nil {
			return err
		}
		if rm, err = rm.Absolute(); err != nil {
			return err
		}
		rms, stored = append(rms, rm), append(stored, rm.String())
	}
	props, err := common.props()
	if err != nil {
		return err
	}
	// Open it now: a registration that cannot be read is refused at once,
	// with the reason, instead of failing later inside the server.
	tbl, err := lake.OpenTableAt(ctx, ident, metaLoc, props, rms)
	if err != nil {
		return err
	}
	// No data dir lock here: a registration is one state store transaction that a
	// running gateway picks up at its next listing, which is how tables are
	// added to (or re-registered on) a live server.
	store, err := common.openState(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.RegisterTable(ctx, state.RegisteredTable{Ident: lake.TopicName(ident), MetadataLocation: metaLoc, Remaps: stored}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "registered %s (%d snapshots) as topic %s\n", lake.TopicName(ident), len(tbl.Metadata().Snapshots()), lake.TopicName(ident))
	return nil
}

func cmdTableList(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("table list", flag.ContinueOnError)
	common := addCommonFlags(fs)
	if err := parseConfig(fs, args); err != nil {
		return err
	}
	props, err := common.props()
	if err != nil {
		return err
	}
	cat, err := lake.OpenCatalog(ctx, *common.dataDir, props)
	if err != nil {
		return err
	}
	idents, err := lake.ListAllTables(ctx, cat)
	if err != nil {
		return err
	}
	for _, id := range idents {
		fmt.Println(lake.TopicName(id))
	}
	store, err := common.openState(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	regs, err := store.RegisteredTables(ctx)
	if err != nil {
		return err
	}
	for _, r := range regs {
		fmt.Printf("%s (registered: %s)\n", r.Ident, r.MetadataLocation)
	}
	return nil
}
