// Package offsetstest opens partition indexes for the tests of the packages
// that read them (fetch/, protocol/), each on a fresh state store.
//
// It may import offsets/ and state/ only, and only tests import it.
package offsetstest
