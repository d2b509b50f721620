package topics

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// encodingOf names everything that shapes the records a topic of tbl
// serves with cfg at the offsets its index holds: the table, its current
// schema (records speak it), the format, the key and the partitioning.
// The caches of derived and encoded records are keyed by it, and the
// index starts a new leader epoch when it changes (offsets.SetEncoding).
// Compression and batch size are not in it: they change the bytes of a
// batch, not the records, and the batch cache keys them on their own.
func encodingOf(tbl *table.Table, cfg TopicConfig) string {
	meta := tbl.Metadata()
	return fmt.Sprintf("table=%s schema=%d format=%s key=%s partitions=%d",
		meta.TableUUID(), meta.CurrentSchema().ID, cfg.Format, strings.Join(cfg.KeyColumns, ","), cfg.Partitions)
}
