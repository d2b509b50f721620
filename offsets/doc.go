// Package offsets owns the offset index: for every partition of every topic,
// the segments (snapshot id, sequence number, commit time, base offset, record
// count) that map dense Kafka offsets to snapshots and back; time lookups; log
// start and high watermark; leader epochs; and its persistence.
//
// It knows nothing of record formats, Kafka framing or Iceberg files, and must
// not import protocol/, fetch/, derive/, changelog/, topics/, lake/, lsm/ or
// state/. It owns its types (Index, Segment, TopicState) and persists through the
// Store interface it defines, which state/ implements.
package offsets
