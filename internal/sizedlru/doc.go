// Package sizedlru is a least-recently-used cache bounded by the total size
// of its values rather than their count. topics/ keeps derived snapshots in
// one, fetch/ keeps encoded record batches in another and maintain/ what
// manifests list in a third: their values range from a few bytes to
// hundreds of megabytes, and memory is what they must stay within.
//
// It imports nothing of lakegw's.
package sizedlru
