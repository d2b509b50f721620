// Package lake owns lakegw's access to Iceberg: opening the configured catalog
// (the embedded SQLite catalog plus a local warehouse by default, any iceberg-go
// catalog through properties: the drivers and FileIOs those may name are
// linked here, PostgreSQL's pgx for a SQL catalog and S3 for a warehouse on
// S3-compatible storage, whose FileIOs share one AWS configuration and
// connection pool per set of properties), tables registered by metadata
// location, the file IO that maps a table's recorded locations to where its
// files lie now,
// the cheap "has this table changed" of SQL and REST catalogs (MetadataPointers:
// one row of the catalog database, or a load of the referenced snapshots only,
// instead of a metadata JSON parse), the parse of a table's successive
// metadata files in time proportional to what each adds (MetadataReader,
// LoadTableAt), what a commit conflict looks like
// (IsCommitConflict) and the cleanup of a lost one (CommitOrClean), the
// removal of files through a table's IO (RemoveFiles), and the compaction
// lease by which a compaction holds lakegw's own writers of a table
// (PropCompactionLease).
//
// It knows nothing of Kafka, offsets or record formats, and must not import
// protocol/, fetch/, offsets/, derive/, changelog/, topics/ or lsm/.
package lake
