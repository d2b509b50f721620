package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// listFlag is a repeatable flag (--catalog-prop a=b --catalog-prop c=d).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// envName is the environment variable of a flag: --poll-interval is
// LAKEGW_POLL_INTERVAL.
func envName(flagName string) string {
	return "LAKEGW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig parses args into fs, then fills every flag not given on the
// command line from its LAKEGW_* environment variable, then from the config
// file (--config, YAML, keys named as the flags). Command line beats
// environment beats file beats default.
func parseConfig(fs *flag.FlagSet, args []string) error {
	configPath := fs.String("config", "", "YAML config file; keys are flag names (env LAKEGW_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["config"] {
		*configPath = os.Getenv(envName("config"))
	}
	var file map[string]any
	if *configPath != "" {
		data, err := os.ReadFile(*configPath)
		if err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		if err := yaml.Unmarshal(data, &file); err != nil {
			return fmt.Errorf("config file %s: %w", *configPath, err)
		}
		for k := range file {
			if fs.Lookup(k) == nil {
				return fmt.Errorf("config file %s: unknown setting %q (settings are named as the flags of %s)", *configPath, k, fs.Name())
			}
		}
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if _, isList := f.Value.(*listFlag); isList {
				for _, item := range strings.Split(v, ",") {
					if item != "" {
						errs = appendErr(errs, f.Value.Set(item), "env "+envName(f.Name))
					}
				}
				return
			}
			errs = appendErr(errs, f.Value.Set(v), "env "+envName(f.Name))
			return
		}
		v, ok := file[f.Name]
		if !ok {
			return
		}
		switch vv := v.(type) {
		case []any:
			for _, item := range vv {
				errs = appendErr(errs, f.Value.Set(fmt.Sprint(item)), "config "+f.Name)
			}
		case map[string]any:
			// catalog-prop may be written as a map.
			for k, item := range vv {
				errs = appendErr(errs, f.Value.Set(k+"="+fmt.Sprint(item)), "config "+f.Name)
			}
		default:
			errs = appendErr(errs, f.Value.Set(fmt.Sprint(vv)), "config "+f.Name)
		}
	})
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func appendErr(errs []error, err error, where string) []error {
	if err != nil {
		return append(errs, fmt.Errorf("%s: %w", where, err))
	}
	return errs
}
