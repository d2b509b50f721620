package protocol

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request at a version outside its API's range.
//
// Above the range: a client never sends one after ApiVersions told it our
// range (ApiVersions itself is answered in v0 form, request.go), so the
// connection is closed, as Kafka closes it.
//
// Below the range: a client that does not ask ApiVersions first, or
// ignores its answer, speaks the versions of the Kafka it was configured
// for (sarama with Version 0.10.2 sends Fetch v3). Closing the connection
// made such a client reconnect and send the same request again, forever,
// with nothing in its errors but an EOF. Kafka answers an API version it
// does not serve with UNSUPPORTED_VERSION, and so does this gateway: kmsg
// decodes the request at its version (kmsg knows every version, old ones
// too), and the answer, of the same version, carries UNSUPPORTED_VERSION
// in every error field that version has: the top-level one when it has
// one, else each partition's (each topic's where topics have the error).
// The client then reports an unsupported version and the connection stays
// open. An API whose response has no error field at that version cannot
// say it: that connection is closed. Both are logged as an unsupported
// version, rate-limited as other client errors are.

// unsupportedVersionError is a request at a version outside its API's
// range; kind says whether it is answered or its connection closed.
func unsupportedVersionError(kind string, key, version int16, h handler) error {
	return &clientError{kind: kind, err: fmt.Errorf("%s v%d is outside the supported versions %d-%d",
		kmsg.NameForKey(key), version, h.min, h.max)}
}

// unsupportedVersionAnswer is the answer to msg, a request below its API's
// range decoded at its version: a response of that version with
// UNSUPPORTED_VERSION in every error field it has. ok is false when the
// response has no error field at that version.
func unsupportedVersionAnswer(msg kmsg.Request) (resp kmsg.Response, ok bool) {
	code := kerr.UnsupportedVersion.Code
	resp = msg.ResponseKind()
	resp.SetVersion(msg.GetVersion())
	if setTopLevelErrorCode(resp, code) {
		return resp, true
	}
	switch req := msg.(type) {
	case *kmsg.FetchRequest:
		r := resp.(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, code
				p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
				p.RecordBatches = []byte{} // never null: some clients reject a null record set
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
	case *kmsg.ListOffsetsRequest:
		r := resp.(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewListOffsetsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewListOffsetsResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, code
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		r := resp.(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetForLeaderEpochResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, code
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
	case *kmsg.OffsetCommitRequest:
		r := resp.(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, code
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
	case *kmsg.OffsetFetchRequest:
		r := resp.(*kmsg.OffsetFetchResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = rt.Topic
			for _, partition := range rt.Partitions {
				p := kmsg.NewOffsetFetchResponseTopicPartition()
				p.Partition, p.ErrorCode, p.Offset = partition, code, -1
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
	default:
		return nil, false
	}
	return resp, true
}

// setTopLevelErrorCode sets resp's top-level ErrorCode to code when resp
// has one at its version, and says whether it does. kmsg structs carry
// every version's fields: a field is in a version when setting it changes
// the encoding.
func setTopLevelErrorCode(resp kmsg.Response, code int16) bool {
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 {
		return false
	}
	without := resp.AppendTo(nil)
	f.SetInt(int64(code))
	if bytes.Equal(without, resp.AppendTo(nil)) {
		f.SetInt(0)
		return false
	}
	return true
}
