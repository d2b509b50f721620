package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// DeleteTopics (key 20)
//
// v1: throttle time. v2-v3: nothing new. v4: flexible. v5: error messages.
// v6: topics by name or id. Off unless the gateway runs with
// --allow-delete-topics (TOPIC_DELETION_DISABLED, as Kafka's
// delete.topic.enable=false answers); then only the tables lakegw writes
// (raw and table topics) are dropped. Topic ids are not kept: a topic named
// by id alone is UNKNOWN_TOPIC_ID.
func init() { register(kmsg.DeleteTopics, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(ctx context.Context, c *conn, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := req.TopicNames
	var byID int
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		} else {
			byID++
		}
	}
	var deleted bool
	for _, name := range names {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		err := deleteTopic(ctx, c, name)
		if err != nil {
			code := kerr.PolicyViolation
			var be *batchError
			switch {
			case errors.As(err, &be):
				code = be.code
			case errors.Is(err, produce.ErrUnknownTopic):
				code = kerr.UnknownTopicOrPartition
			case errors.Is(err, produce.ErrReadOnly):
				code = kerr.PolicyViolation
			}
			rt.ErrorCode = code.Code
			msg := err.Error()
			rt.ErrorMessage = &msg
		} else {
			deleted = true
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for range byID {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.ErrorCode = kerr.UnknownTopicID.Code
		resp.Topics = append(resp.Topics, rt)
	}
	if deleted {
		c.s.reg.Relist()
	}
	return resp, nil
}

func deleteTopic(ctx context.Context, c *conn, name string) error {
	if c.s.produce == nil || !c.s.cfg.AllowDeleteTopics {
		return refuse(kerr.TopicDeletionDisabled, "topic deletion is off: start lakegw with --allow-delete-topics")
	}
	return c.s.produce.DeleteTopic(ctx, name)
}
