// Package kafkaseq is the arithmetic of Kafka's producer sequence numbers,
// which wrap at MaxInt32: whether a batch follows the previous one, lies
// before it (a duplicate) or leaves a gap; and the producer ids they are
// counted under. produce/ checks idempotent producers' batches with it and
// txn/ transactional producers' staged ones.
//
// It imports nothing of lakegw's.
package kafkaseq
