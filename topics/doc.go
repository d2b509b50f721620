// Package topics owns the set of topics lakegw serves: it watches the catalog
// (and the registered tables) for tables and new snapshots, derives each new
// snapshot's change records once to extend the offset index, follows how a
// topic's records are written (its Encoding: format, key, schema mode and
// the table's current schema), and wakes the fetches waiting for data.
// It keeps the derived records fetches read (a bounded cache shared by all
// topics), and reads a large append or compacted prefix of a
// single-partition topic chunk by chunk through a few streams per topic
// (ChangesAt, streamSet) rather than whole.
//
// It sits between fetch/ and the lake: it may import offsets/, derive/
// (the changes of a snapshot), changelog/, lake/ and state/; it must not
// import protocol/, fetch/ or lsm/ (lakegw tables are indexed from their
// snapshot summaries, through changelog/).
package topics
