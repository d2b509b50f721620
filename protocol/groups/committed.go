package groups

// CommittedOffsets returns every group's committed offset on topic, sorted
// by group and partition: what consumers will resume from, and so what
// table history they still need (the gateway's history pins read it).
// Nothing while the offsets are not loaded.
func (c *Coordinator) CommittedOffsets(topic string) []CommittedOffset {
	if c.statusCode() != 0 {
		return nil
	}
	return c.offsets.onTopic(topic)
}
