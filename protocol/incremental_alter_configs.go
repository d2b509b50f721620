package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/topics"
)

// IncrementalAlterConfigs (key 44)
//
// v1: flexible. SET and DELETE of the configs of a topic whose table
// lakegw writes (raw and table topics: format, compression, batch records,
// commit interval, schema evolution, retention), kept as table properties
// and checked by the same parser as every table's (topics.CheckTableProps);
// the topic is reopened with them. APPEND and SUBTRACT (list configs) do not
// apply; other resources and other tables' topics are refused.
func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(ctx context.Context, c *conn, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := alterConfigs(ctx, c, req, r)
		if err != nil {
			code := kerr.InvalidConfig
			var be *batchError
			switch {
			case errors.As(err, &be):
				code = be.code
			case errors.Is(err, produce.ErrUnknownTopic):
				code = kerr.UnknownTopicOrPartition
			case errors.Is(err, produce.ErrReadOnly):
				code = kerr.PolicyViolation
			}
			rr.ErrorCode = code.Code
			msg := err.Error()
			rr.ErrorMessage = &msg
		} else if !req.ValidateOnly {
			c.s.reg.Kick(r.ResourceName) // its watcher sees the new properties
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func alterConfigs(ctx context.Context, c *conn, req *kmsg.IncrementalAlterConfigsRequest, r kmsg.IncrementalAlterConfigsRequestResource) error {
	if r.ResourceType != kmsg.ConfigResourceTypeTopic {
		return refuse(kerr.InvalidRequest, "lakegw alters topic configs only")
	}
	if c.s.produce == nil {
		return produce.ErrReadOnly
	}
	set, del := map[string]string{}, []string(nil)
	for _, cfg := range r.Configs {
		switch cfg.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if cfg.Value == nil {
				return refuse(kerr.InvalidConfig, "config %s: SET without a value", cfg.Name)
			}
			set[cfg.Name] = *cfg.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			del = append(del, cfg.Name)
		default:
			return refuse(kerr.InvalidConfig, "config %s: APPEND and SUBTRACT apply to list configs, which lakegw topics have none of", cfg.Name)
		}
	}
	return c.s.produce.AlterTopicConfigs(ctx, r.ResourceName, set, del, topics.CheckTableProps, req.ValidateOnly)
}
