package protocol

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/topics"
)

// DescribeConfigs (key 32)
//
// v1: synonyms, config source. v2: nothing new. v3: config type and
// documentation. v4: flexible. Topics report how lakegw serves them (format,
// compression, partitions) and the Kafka configs clients and tools look for.
func init() { register(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(_ context.Context, c *conn, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		var configs [][2]string
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := c.s.reg.Topic(rr.ResourceName)
			if !ok {
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			configs = topicConfigs(t)
		case kmsg.ConfigResourceTypeBroker:
			configs = [][2]string{
				{"advertised.listeners", "PLAINTEXT://" + c.s.advertHost + ":" + strconv.Itoa(int(c.s.advertPort))},
				{"socket.request.max.bytes", strconv.Itoa(int(c.s.cfg.MaxRequestBytes))},
			}
		default:
			out.ErrorCode = kerr.InvalidRequest.Code
			m := "lakegw describes topic and broker configs only"
			out.ErrorMessage = &m
		}
		for _, kv := range configs {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, kv[0]) {
				continue
			}
			cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
			cfg.Name = kv[0]
			v := kv[1]
			cfg.Value = &v
			cfg.ReadOnly = true
			cfg.Source = kmsg.ConfigSourceDefaultConfig
			out.Configs = append(out.Configs, cfg)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

func topicConfigs(t *topics.Topic) [][2]string {
	return [][2]string{
		{"cleanup.policy", "delete"},
		{"compression.type", t.Config.Compression},
		{"retention.ms", "-1"},
		{"message.timestamp.type", "CreateTime"},
		{"lakegw.format", t.Config.Format},
		{"lakegw.partitions", strconv.Itoa(int(t.Config.Partitions))},
	}
}
