package changelog

// Format turns change events into Kafka record keys and values. Each event
// becomes exactly one Kafka record in every format, so offsets do not depend
// on the format a topic is configured with.
type Format interface {
	// Name is the format's configuration name (debezium-json, ...).
	Name() string
	// AppendKey appends the record key to dst. ok is false when the record
	// has no key (the table has no key fields).
	AppendKey(dst []byte, c *Changes, rec *Record) (out []byte, ok bool)
	// AppendValue appends the record value to dst. ok is false for a
	// tombstone (the upsert format's delete).
	AppendValue(dst []byte, c *Changes, rec *Record) (out []byte, ok bool)
}
