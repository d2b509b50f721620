// Package quickstart writes the demo table of `lakegw quickstart`: demo.orders,
// which commits a realistic mix of inserts, updates and deletes (merge-on-read
// position deletes) every second through iceberg-go.
//
// It is also the table writer of end-to-end tests: Demo.Step commits one
// deterministic snapshot (fixed DemoOptions.Seed and Now), Demo.Expected is the
// in-memory oracle of the live rows, and Demo.LiveRows computes the same from
// an iceberg-go scan.
//
// It writes through an iceberg-go catalog only; it must not import protocol/,
// fetch/, topics/ or offsets/.
package quickstart
