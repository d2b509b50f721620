// Package procs owns the e2e harnesses' handling of server subprocesses
// (lakegw serve, the Kafka broker): starting one in its own process group
// with a bounded tail of its output, waiting until it answers a Kafka ping,
// stopping it, and reading its CPU time and memory from /proc. The
// benchmark (e2e/bench) and the soak (e2e/soak) are both main packages, so
// this is where the code they share lives.
//
// It is a test-harness leaf: it imports no lakegw product package (nor any
// other package of the module), only the standard library and franz-go.
package procs
