// Package fetch turns a Fetch request's partitions into Kafka record batches:
// offset lookup, reading a snapshot's change records, encoding them in the
// topic's format into RecordBatch v2 with lakegw's headers, compression, byte
// limits, a bounded LRU cache of encoded batches shared by all consumers (in
// memory, then in files on local disk), and the MinBytes/MaxWait long-poll
// woken by new snapshots. A response (Response) carries its batches as
// spans of memory and of the disk cache's files, which it keeps open until
// released, so that the connection can send them with sendfile.
//
// It chooses Kafka error codes for fetched partitions (with protocol/, the
// only package that does). It may import topics/, offsets/ and changelog/;
// it must not import protocol/ or lsm/.
package fetch
