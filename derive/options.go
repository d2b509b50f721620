package derive

import (
	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

// Options configures the derivation of change events.
type Options struct {
	// Partitions is the number of topic partitions; with more than one,
	// records are spread by the Kafka murmur2 hash of their key JSON.
	Partitions int32
	// KeyColumns names the key columns of a table without identifier
	// fields (ignored when the schema has identifier fields), as the
	// table's current schema names them.
	KeyColumns []string
	// Target is the schema records are written in, the table's current
	// one (changelog.Changes.Target); nil: each snapshot's own.
	Target *iceberg.Schema
	Log    zerolog.Logger
	// PlanCache, when set, keeps the plans of recently derived snapshots
	// so that deriving a snapshot after its parent reads only its own
	// manifests (see PlanCache).
	PlanCache *PlanCache
	// RowGroups, when set, keeps row groups decoded for the before-images
	// of position deletes, for the next snapshots that delete from them
	// (see RowGroupCache).
	RowGroups *RowGroupCache
	// Retained are the changelog logs of an LSM table (nil: none): their
	// snapshots are derived from their changelog files although they
	// expired from the table metadata.
	Retained changelog.LSMLogs
}
