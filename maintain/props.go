package maintain

import (
	"context"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// CappedMetadataProperties are the table properties that make every commit
// delete metadata files beyond the newest DefaultPreviousVersionsMax:
// without them a table committing every second keeps every metadata file
// it ever wrote, each holding every snapshot so far. iceberg-go's commit
// path deletes the files that fall out of the metadata log
// (table.deleteOldMetadata).
func CappedMetadataProperties() iceberg.Properties {
	return iceberg.Properties{
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      strconv.Itoa(DefaultPreviousVersionsMax),
	}
}

// CreateProperties are the properties a table lakegw writes is created with:
// the metadata cap, and the marker that serve maintains it.
func CreateProperties() iceberg.Properties {
	props := CappedMetadataProperties()
	props[changelog.PropMaintenanceEnabled] = "true"
	return props
}

// capMetadata sets the metadata cap on a table that has none of its
// properties; a value the user set, even "false", is kept.
func (p *pass) capMetadata(ctx context.Context, rep *Report) error {
	_, _, err := p.commitStep(ctx, "cap metadata files", func(_ context.Context, tbl *table.Table, tx *table.Transaction) (bool, error) {
		missing := iceberg.Properties{}
		for k, v := range CappedMetadataProperties() {
			if _, set := tbl.Properties()[k]; !set {
				missing[k] = v
			}
		}
		if len(missing) == 0 {
			return false, nil
		}
		rep.PropertiesSet = missing
		return true, tx.SetProperties(missing)
	})
	return err
}
