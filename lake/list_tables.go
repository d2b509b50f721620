package lake

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// ListAllTables lists the tables of every namespace of the catalog, walking
// nested namespaces.
func ListAllTables(ctx context.Context, cat catalog.Catalog) ([]table.Identifier, error) {
	var out []table.Identifier
	seenNS := map[string]bool{}
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		nss, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return fmt.Errorf("list namespaces under %v: %w", parent, err)
		}
		for _, ns := range nss {
			key := TopicName(ns)
			if seenNS[key] {
				continue
			}
			seenNS[key] = true
			for ident, err := range cat.ListTables(ctx, ns) {
				if err != nil {
					return fmt.Errorf("list tables of %v: %w", ns, err)
				}
				out = append(out, ident)
			}
			if len(ns) > len(parent) {
				if err := walk(ns); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	return out, nil
}
