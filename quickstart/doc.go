// Package quickstart writes the demo table of `lakegw quickstart`: demo.orders,
// which commits a realistic mix of inserts, updates and deletes (merge-on-read
// position deletes) every second through iceberg-go.
//
// It writes through an iceberg-go catalog only; it must not import protocol/,
// fetch/, topics/ or offsets/.
package quickstart
