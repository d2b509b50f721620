// Package lake owns lakegw's access to Iceberg: opening the configured catalog
// (the embedded SQLite catalog plus a local warehouse by default, any iceberg-go
// catalog through properties), tables registered by metadata location, the
// file IO that maps a table's recorded locations to where its files lie now,
// and the cheap "has this table changed" of SQL catalogs (MetadataPointers:
// one row of the catalog database instead of a metadata JSON parse).
//
// It knows nothing of Kafka, offsets or record formats, and must not import
// protocol/, fetch/, offsets/, changelog/, topics/ or lsm/.
package lake
