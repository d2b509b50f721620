package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// CreatePartitions (key 37)
//
// v1: nothing new. v2: flexible. v3: nothing new. A raw topic grows: its
// records stay where they were produced, its offsets and epochs are kept,
// and the new partitions start empty. A table topic's partitions are its
// table's buckets and another table's a table property: both are refused.
// Assignments do not apply (the lake holds every partition).
func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(ctx context.Context, c *conn, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	var grown []string
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		switch {
		case c.s.produce == nil:
			err = produce.ErrReadOnly
		case len(t.Assignment) > 0:
			err = refuse(kerr.InvalidReplicaAssignment, "replica assignments do not apply: the lake stores every partition")
		default:
			err = c.s.produce.AddPartitions(ctx, t.Topic, t.Count, req.ValidateOnly)
		}
		if err != nil {
			code := kerr.InvalidRequest
			var be *batchError
			switch {
			case errors.As(err, &be):
				code = be.code
			case errors.Is(err, produce.ErrUnknownTopic):
				code = kerr.UnknownTopicOrPartition
			case errors.Is(err, produce.ErrInvalidPartitions):
				code = kerr.InvalidPartitions
			case errors.Is(err, produce.ErrReadOnly):
				code = kerr.PolicyViolation
			}
			rt.ErrorCode = code.Code
			msg := err.Error()
			rt.ErrorMessage = &msg
		} else if !req.ValidateOnly {
			grown = append(grown, t.Topic)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, name := range grown {
		c.s.reg.Kick(name) // the watcher sees the new count and reopens the topic
	}
	return resp, nil
}
