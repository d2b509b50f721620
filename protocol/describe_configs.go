package protocol

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/topics"
)

// DescribeConfigs (key 32)
//
// v0: is_default (a config not set on the topic). v1: synonyms, config
// source (DYNAMIC_TOPIC_CONFIG for one its table's properties set). v2: nothing new. v3: config type and
// documentation. v4: flexible. Topics report how lakegw serves them (format,
// compression, partitions), their real retention (retention.ms,
// retention.bytes, cleanup.policy), how far consumers may hold history
// (lakegw.consumer.max-pin) and who does (lakegw.pinned-by). A topic is
// configured through its table's properties: the entries are read-only,
// but for the topics of tables lakegw writes, whose configs
// IncrementalAlterConfigs changes (produce.Alterable).
func init() { register(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

// PinReporter describes what holds a topic's table history in place: the
// committed group offsets that still need old snapshots. The gateway
// injects it (Config.Pins); the protocol layer only shows the answer.
type PinReporter interface {
	// PinnedBy returns a human description, "" when nothing pins the topic.
	PinnedBy(ctx context.Context, topic string) string
}

func handleDescribeConfigs(ctx context.Context, c *conn, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
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
			configs = topicConfigs(ctx, t, c.s.cfg.Pins)
			if c.s.produce != nil && t.Table() != nil {
				configs = append(configs, c.s.produce.WriterConfigs(t.Table().Properties())...)
			}
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
		var props map[string]string
		if rr.ResourceType == kmsg.ConfigResourceTypeTopic && out.ErrorCode == 0 {
			if t, ok := c.s.reg.Topic(rr.ResourceName); ok && t.Table() != nil {
				props = t.Table().Properties()
			}
		}
		for _, kv := range configs {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, kv[0]) {
				continue
			}
			cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
			cfg.Name = kv[0]
			v := kv[1]
			cfg.Value = &v
			// A topic lakegw writes takes IncrementalAlterConfigs.
			cfg.ReadOnly = props == nil || !produce.Alterable(props, kv[0])
			// Set on the topic (a table property) or lakegw's default,
			// as Kafka tells a topic override from a default: what
			// `kafka-configs --describe` lists.
			cfg.Source = kmsg.ConfigSourceDefaultConfig
			cfg.IsDefault = true
			if p := topics.ConfigProperty(kv[0]); p != "" && props != nil {
				if _, set := props[p]; set {
					cfg.Source = kmsg.ConfigSourceDynamicTopicConfig
					cfg.IsDefault = false
				}
			}
			out.Configs = append(out.Configs, cfg)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

func topicConfigs(ctx context.Context, t *topics.Topic, pins PinReporter) [][2]string {
	ret := t.Config.LogRetention(t.Table().Properties())
	configs := [][2]string{
		{"cleanup.policy", topics.CleanupPolicy},
		{"compression.type", t.Config.Compression},
		{"retention.ms", strconv.FormatInt(ret.Ms, 10)},
		{"retention.bytes", strconv.FormatInt(ret.Bytes, 10)},
		{"message.timestamp.type", "CreateTime"},
		{topics.PropFormat, t.Config.Format},
		{topics.PropPartitions, strconv.Itoa(int(t.Config.Partitions))},
		{topics.PropBatchRecords, strconv.Itoa(t.Config.BatchRecords)},
		{topics.PropMaxPinMs, strconv.FormatInt(t.Config.MaxPinMs, 10)},
		{topics.PropMaxPinSnapshots, strconv.FormatInt(t.Config.MaxPinSnapshots, 10)},
	}
	if pins != nil {
		by := pins.PinnedBy(ctx, t.Name)
		if by == "" {
			by = "none"
		}
		configs = append(configs, [2]string{topics.ConfigPinnedBy, by})
	}
	return configs
}
