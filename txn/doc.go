// Package txn is the transaction coordinator: Kafka transactions
// (transactional.id, producer id and epoch, the partitions and groups a
// transaction touches, commit or abort) mapped onto Iceberg commits.
//
// A transactional producer's records are staged, durably and invisibly,
// in the state store (Store) as the record batches it sent: a raw topic's
// data files carry each record's offset, which only the commit decides,
// and files staged in a table's location would be removed by its orphan
// cleanup under a transaction that outlives the grace. EndTxn(commit)
// first makes the decision durable (PrepareCommit), then commits each
// table the transaction wrote in one Iceberg commit holding all its
// partitions' staged records (Tables.Commit), then applies the
// transaction's consumer group offsets (Offsets), then forgets what it
// staged (CompleteCommit). Each table's commit names the transaction
// (its marker) in its snapshot summary, so that completion after a
// crash or a lost answer commits every table exactly once. A transaction
// over several tables is atomic per table: once PrepareCommit is durable,
// every table it wrote is committed, but a reader may see one table's
// commit a moment before another's. Abort forgets the staged records.
//
// A transaction whose records were acknowledged survives a restart of the
// gateway (the state store holds them and the transaction's state), and
// its producer can still commit it with the same producer id and epoch,
// as Flink's committer does on recovery. One left open longer than its
// timeout is aborted, and its producer fenced by the next epoch.
//
// It knows Kafka's transaction model but not its wire format: protocol/
// decodes requests, maps the errors here to Kafka error codes and
// implements Tables (through produce/) and Offsets (through the group
// coordinator). It may import internal/kafkaseq alone; state/ implements
// its Store.
package txn
