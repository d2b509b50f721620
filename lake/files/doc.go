// Package files is the one home of Iceberg file kinds that lakegw reads or
// writes itself rather than through iceberg-go: position delete files
// (their reserved field ids, a file-scoped writer, a fast reader, the data
// file a file-scoped one targets). Derivation (derive/), the LSM tables
// (lsm/), the quickstart demo and the benchmarks use it, so no Iceberg file
// constant or reader is defined twice.
//
// It knows nothing of Kafka, offsets, topics or record formats; it imports
// no other lakegw package.
package files
