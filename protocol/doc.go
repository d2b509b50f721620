// Package protocol is lakegw's Kafka front end: the listener, request framing,
// kmsg decoding and encoding, and one file per API key (as franz-go's kfake
// does), each registering its version range beside its handler.
//
// Kafka error codes are chosen here and in fetch/ only. protocol/ may import
// fetch/, topics/, offsets/, state/ and protocol/groups/; nothing below it
// imports protocol/.
package protocol
