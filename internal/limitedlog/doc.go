// Package limitedlog writes the log line of one kind of repeated event (a
// client's malformed frame, a refused connection, a fetch failing on a
// damaged file) at most once per interval, with how many of that kind it
// left out since its last line and in all. One line per event let a client,
// or a consumer polling a damaged partition, flood the log. protocol/ and
// fetch/ keep one each.
//
// It imports nothing of lakegw's.
package limitedlog
