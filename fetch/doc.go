// Package fetch turns a Fetch request's partitions into Kafka record batches:
// offset lookup, reading a snapshot's change records, encoding them in the
// topic's format into RecordBatch v2 with lakegw's headers, compression, byte
// limits, a bounded LRU cache of encoded batches shared by all consumers, and
// the MinBytes/MaxWait long-poll woken by new snapshots.
//
// It chooses Kafka error codes for fetched partitions (with protocol/, the
// only package that does). It may import topics/, offsets/ and changelog/;
// it must not import protocol/ or lsm/.
package fetch
