// Package lake owns lakegw's access to Iceberg: opening the configured catalog
// (the embedded SQLite catalog plus a local warehouse by default, any iceberg-go
// catalog through properties), tables registered by metadata location, and the
// file IO that maps a table's recorded locations to where its files lie now.
//
// It knows nothing of Kafka, offsets or record formats, and must not import
// protocol/, fetch/, offsets/, changelog/, topics/ or lsm/.
package lake
