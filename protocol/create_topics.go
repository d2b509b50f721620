package protocol

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// CreateTopics (key 19)
//
// v1: validate only, error messages. v2: nothing new. v3: nothing new.
// v4: default partitions and replication factor (-1). v5: flexible, and
// the created topic's configs in the answer. v6: nothing new. v7: topic
// ids. A topic created without lakegw.* configs is a raw topic
// (produce.CreateRawTopic): an Iceberg table holding each produced record
// as it came; one with lakegw.schema and lakegw.primary-key a table topic
// (produce.CreateTableTopic): a lakegw primary-key table its records are
// applied to. The replication factor is the lake's business: any is
// accepted and 1 reported.
func init() { register(kmsg.CreateTopics, 0, 7, handleCreateTopics) }

// createTopicWait bounds how long CreateTopics waits for the new topic to
// be served, so that the client's next Metadata finds it.
const createTopicWait = 10 * time.Second

func handleCreateTopics(ctx context.Context, c *conn, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	var created []string
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions = max(t.NumPartitions, 1)
		rt.ReplicationFactor = 1
		// Non-null from v5: the Java admin client streams over it. The
		// topic's configs are DescribeConfigs' to tell.
		rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		err := createTopic(ctx, c, req, t)
		if err != nil {
			var be *batchError
			code := kerr.InvalidRequest
			switch {
			case errors.As(err, &be):
				code = be.code
			case errors.Is(err, produce.ErrTopicExists):
				code = kerr.TopicAlreadyExists
			case errors.Is(err, produce.ErrInvalidTopic):
				code = kerr.InvalidTopicException
			case errors.Is(err, produce.ErrInvalidConfig):
				code = kerr.InvalidConfig
			case errors.Is(err, produce.ErrInvalidPartitions):
				code = kerr.InvalidPartitions
			}
			rt.ErrorCode = code.Code
			msg := err.Error()
			rt.ErrorMessage = &msg
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
		} else if !req.ValidateOnly {
			created = append(created, t.Topic)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(created) > 0 {
		c.s.awaitServed(ctx, created)
	}
	return resp, nil
}

func createTopic(ctx context.Context, c *conn, req *kmsg.CreateTopicsRequest, t kmsg.CreateTopicsRequestTopic) error {
	if c.s.produce == nil {
		return refuse(kerr.PolicyViolation, "this gateway takes no writes: topics are the tables of its catalog")
	}
	if len(t.ReplicaAssignment) > 0 {
		return refuse(kerr.InvalidReplicaAssignment, "replica assignments do not apply: the lake stores every partition")
	}
	configs := map[string]string{}
	table := false
	for _, cfg := range t.Configs {
		table = table || strings.HasPrefix(cfg.Name, "lakegw.")
		if cfg.Value != nil {
			configs[cfg.Name] = *cfg.Value
		}
	}
	partitions := t.NumPartitions
	if partitions == -1 {
		partitions = 1
	}
	if table {
		// lakegw.schema and lakegw.primary-key: a primary-key table.
		return c.s.produce.CreateTableTopic(ctx, t.Topic, partitions, configs, req.ValidateOnly)
	}
	return c.s.produce.CreateRawTopic(ctx, t.Topic, partitions, configs, req.ValidateOnly)
}

// awaitServed asks the registry to list the catalog now and waits, up to
// createTopicWait, until every topic of names is served.
func (s *Server) awaitServed(ctx context.Context, names []string) {
	s.reg.Relist()
	ctx, cancel := context.WithTimeout(ctx, createTopicWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		all := true
		for _, n := range names {
			if _, ok := s.reg.Topic(n); !ok {
				all = false
			}
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
