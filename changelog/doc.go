// Package changelog owns the change-record model of lakegw (an event per row
// change: op, before-image, after-image, key, snapshot, sequence number), the
// derivation of those events from any Iceberg snapshot (appends, position
// deletes, deletion vectors, equality deletes, copy-on-write rewrites), the
// changelog file schema that lsm/ writes, and the record formats
// (debezium-json, canal-json, upsert, json).
//
// It knows nothing of Kafka framing, offsets or error codes, and must not
// import protocol/, fetch/, offsets/, topics/ or lsm/ (lsm/ writes the schema
// defined here, never the other way round). It may import lake/.
package changelog
