// Package lsmmodel is the model the randomized tests of lakegw's
// primary-key tables check a table against: the table lsm/ tests write
// directly and e2e/ tests read through Kafka, with its schema and the
// partial-update semantics of its merge engine, kept once for both.
//
// It is test support; no product package imports it. It imports nothing of
// lakegw's.
package lsmmodel
