// Package protocol is lakegw's Kafka front end: the listener, request framing,
// kmsg decoding and encoding, and one file per API key (as franz-go's kfake
// does), each registering its version range beside its handler.
//
// protocol/ knows Kafka: each handler owns its API's request, response and
// error codes, and nothing below protocol/ (and its protocol/groups/) picks
// an error code or builds a kmsg response. Fetch is answered here end to
// end (epoch checks, byte limits, the MinBytes/MaxWait long poll) from the
// record batches fetch/ reads for a partition, which the connection writes
// from fetch's buffers and disk cache files without copying them.
//
// Produce, InitProducerId and CreateTopics are decoded and answered here
// and carried out by produce/ (Server.AcceptWrites), which maps nothing
// to Kafka codes itself. The transaction APIs (AddPartitionsToTxn,
// AddOffsetsToTxn, TxnOffsetCommit, EndTxn, DescribeTransactions,
// ListTransactions, and InitProducerId and Produce with a transactional
// id) are carried out by txn/ (Server.AcceptTransactions), which commits
// through produce/ by TxnTables.
//
// protocol/ may import fetch/, topics/, offsets/, state/, produce/, txn/, cluster/,
// protocol/groups/ and internal/kafkaseq; nothing below it imports
// protocol/.
package protocol
