// Package fetch reads a partition's record batches from an offset: offset
// lookup in one view of the topic's index, reading a snapshot's change
// records, encoding them in the topic's format into RecordBatch v2 with
// lakegw's headers, compression, byte limits and read budgets, a bounded LRU
// cache of encoded batches shared by all consumers (in memory, then in files
// on local disk), and a read-ahead that encodes the batches after a cold
// read in the background. A read's batches (Batches, in a Spans) are spans
// of memory and of the disk cache's files, which the Spans keeps open until
// released, so that the connection can send them with sendfile.
//
// It knows nothing of Kafka requests, responses or error codes: protocol/
// answers Fetch from what it reads, mapping its errors (ErrOffsetOutOfRange,
// a failed read) to codes. It may import topics/, offsets/ and changelog/;
// it must not import protocol/ or lsm/.
package fetch
