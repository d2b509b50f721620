package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/txn"
)

// txnCode maps what the transaction coordinator says to Kafka's error
// code. fencedCode is PRODUCER_FENCED where the request's version knows
// it, INVALID_PRODUCER_EPOCH before (as Kafka's brokers answer).
func txnCode(err error, fencedCode *kerr.Error) *kerr.Error {
	if code := coordinatorCode(err, fencedCode); code != nil {
		return code
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Retriable: the client asks again.
		return kerr.CoordinatorNotAvailable
	case errors.Is(err, produce.ErrUnknownTopic), errors.Is(err, produce.ErrUnknownPartition), errors.Is(err, produce.ErrReadOnly),
		errors.Is(err, produce.ErrInvalidRecord):
		return produceCode(err)
	}
	return kerr.UnknownServerError
}

// coordinatorCode is the Kafka code of one of txn/'s errors, or nil when
// err is none of them (produceCode asks it first).
func coordinatorCode(err error, fencedCode *kerr.Error) *kerr.Error {
	switch {
	case errors.Is(err, txn.ErrProducerFenced):
		return fencedCode
	case errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping
	case errors.Is(err, txn.ErrInvalidTxnState):
		return kerr.InvalidTxnState
	case errors.Is(err, txn.ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions
	case errors.Is(err, txn.ErrInvalidTimeout):
		return kerr.InvalidTransactionTimeout
	case errors.Is(err, txn.ErrNotAttempted):
		return kerr.OperationNotAttempted
	case errors.Is(err, txn.ErrTransactionTooLarge):
		// Not MESSAGE_TOO_LARGE: the Java producer splits the batch and
		// tries again on that, where nothing smaller fits either.
		return kerr.PolicyViolation
	case errors.Is(err, txn.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber
	case errors.Is(err, txn.ErrDuplicateSequence):
		return kerr.DuplicateSequenceNumber
	case errors.Is(err, txn.ErrInvalidID), errors.Is(err, txn.ErrTooManyGroups):
		return kerr.InvalidRequest
	case errors.Is(err, txn.ErrStore), errors.Is(err, txn.ErrClosed), errors.Is(err, txn.ErrTooManyTransactionalIDs):
		// Retriable: the client asks again.
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// fencedFrom is the fencing code of a coordinator API whose versions from
// v know PRODUCER_FENCED.
func fencedFrom(version, v int16) *kerr.Error {
	if version >= v {
		return kerr.ProducerFenced
	}
	return kerr.InvalidProducerEpoch
}

// transactionsOff answers every transactional request of a gateway that
// takes no writes: Kafka clients treat it as fatal and say so.
var transactionsOff = kerr.TransactionalIDAuthorizationFailed
