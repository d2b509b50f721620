package topics

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// Encoding is how a topic's records are written at one moment. Name keys
// every cache of them (derived snapshots, encoded batches), and the offset
// index records it: when it changes, the index starts a new leader epoch
// (offsets.Index.SetEncoding). A read takes the topic's Encoding once and
// derives, encodes and caches under it, so that records written in one
// schema are never cached under another's name.
type Encoding struct {
	Name string
	// schema is the schema records are written in (nil: each snapshot's
	// own, lakegw.schema-mode=as-written).
	schema *iceberg.Schema
}

// encodingOf names everything that shapes the records a topic of tbl
// serves with cfg at the offsets its index holds: the table, the format,
// the key and the partitioning (its layout: which record sits at an
// offset), then the schema mode and the current schema (how its values are
// written). Compression and batch size are not in it: they change the
// bytes of a batch, not the records, and the batch cache keys them on
// their own.
func encodingOf(tbl *table.Table, cfg TopicConfig) *Encoding {
	meta := tbl.Metadata()
	partitions := strconv.Itoa(int(cfg.Partitions))
	if changelog.IsRawTable(meta.Properties()) {
		// A raw record stays in the partition it was produced to: added
		// partitions move none (offsets.OpenGrowing).
		partitions = "raw"
	}
	enc := &Encoding{Name: fmt.Sprintf("table=%s format=%s key=%s partitions=%s schema-mode=%s",
		meta.TableUUID(), cfg.Format, strings.Join(cfg.KeyColumns, ","), partitions, cfg.SchemaMode)}
	if cfg.SchemaMode != SchemaAsWritten {
		enc.schema = meta.CurrentSchema()
		enc.Name += fmt.Sprintf(" schema=%d", enc.schema.ID)
	}
	return enc
}

// layoutFields are the parts of an encoding's name that decide which
// record sits at an offset; the others only decide how it is written.
var layoutFields = []string{"table", "format", "key", "partitions"}

// sameLayout says whether encodings a and b (names, as encodingOf writes
// them now or wrote them before schema modes existed) put the same
// records at the same offsets, written alike or not: then a consumer's
// position stays valid across the change, which re-encodes values only.
func sameLayout(a, b string) bool {
	fa, fb := encodingFields(a), encodingFields(b)
	for _, k := range layoutFields {
		va, oka := fa[k]
		vb, okb := fb[k]
		if !oka || !okb || va != vb {
			return false
		}
	}
	return true
}

// encodingFields splits an encoding name into its key=value fields.
func encodingFields(name string) map[string]string {
	fields := map[string]string{}
	for _, f := range strings.Fields(name) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	return fields
}
