// Package state is the gateway's embedded state store (SQLite through the
// pure-Go modernc driver): offset index segments, committed group offsets and
// registered tables, persisted so that a restart serves identical offsets.
//
// It is a leaf: it must not import any other lakegw package.
package state
