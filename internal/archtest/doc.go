// Package archtest enforces lakegw's package layering: its test lists every
// package of the module with `go list` and checks each one's imports of the
// others against the rules stated in their doc.go files (protocol -> fetch
// -> topics -> offsets/derive -> changelog -> lake, state a leaf, nothing
// importing cmd/ or e2e/). A doc.go that changes a rule changes the table
// in imports_test.go with it.
//
// It has no code of its own and imports nothing of lakegw's.
package archtest
