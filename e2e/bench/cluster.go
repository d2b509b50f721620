package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/e2e/internal/procs"
	"github.com/lakegw/lakegw/internal/pgtest"
	"github.com/lakegw/lakegw/lake"
)

// clusterPartitions is how many partitions the cluster pass spreads the
// table over: one per gateway.
const clusterPartitions = 3

// clusterPass reads the benchmark table, spread over three partitions,
// through one gateway and then through three gateways sharing a PostgreSQL
// state store (--cluster, issue 21), each cold (a restarted process with
// its index stored): the aggregate throughput of one reader of every
// partition, and the gateways' CPU. On a machine whose cores the three
// gateways and the client share, the figure shows the cost of the split,
// not a scale-out.
func clusterPass(ctx context.Context, c config, gw gatewayOpts, total int64) (one, three row, err error) {
	pg, stopPG, err := pgtest.StartServer()
	if err != nil {
		return one, three, fmt.Errorf("PostgreSQL for the cluster pass: %w", err)
	}
	defer stopPG()
	url, err := pg.CreateDatabase(ctx)
	if err != nil {
		return one, three, err
	}
	props, err := lake.EmbeddedProps(gw.dataDir)
	if err != nil {
		return one, three, err
	}
	var shared []string
	for k, v := range props {
		shared = append(shared, "--catalog-prop", k+"="+v)
	}
	shared = append(shared, "--partitions", strconv.Itoa(clusterPartitions))
	opts := func(dir string, extra ...string) gatewayOpts {
		o := gw
		o.dataDir = filepath.Join(c.work, dir)
		o.extra = append(append(append([]string(nil), gw.extra...), shared...), extra...)
		return o
	}

	lone := []gatewayOpts{opts("cluster-lone")}
	var nodes []gatewayOpts
	for i := range clusterPartitions {
		nodes = append(nodes, opts(fmt.Sprintf("cluster-%d", i), "--cluster", "--node-id", strconv.Itoa(i), "--state", url))
	}
	if one, err = coldAcross(ctx, lone, total); err != nil {
		return one, three, fmt.Errorf("one gateway: %w", err)
	}
	one.name = fmt.Sprintf("lakegw cold, %d partitions, one gateway", clusterPartitions)
	if three, err = coldAcross(ctx, nodes, total); err != nil {
		return one, three, fmt.Errorf("three gateways: %w", err)
	}
	three.name = fmt.Sprintf("lakegw cold, %d partitions, three gateways (--cluster on PostgreSQL)", clusterPartitions)
	return one, three, nil
}

// coldAcross starts the gateways, waits until they have indexed the table,
// restarts them (caches cold, index stored) and reads every partition
// through them.
func coldAcross(ctx context.Context, gws []gatewayOpts, total int64) (row, error) {
	start := func() ([]*procs.Proc, []string, error) {
		var ps []*procs.Proc
		var addrs []string
		for _, o := range gws {
			p, err := startGateway(ctx, o)
			if err != nil {
				stopAll(ps)
				return nil, nil, err
			}
			ps = append(ps, p)
			addrs = append(addrs, p.Addr)
		}
		return ps, addrs, nil
	}
	ps, addrs, err := start()
	if err != nil {
		return row{}, err
	}
	err = waitTotal(ctx, addrs, total, 30*time.Minute)
	stopAll(ps)
	if err != nil {
		return row{}, err
	}
	if ps, addrs, err = start(); err != nil {
		return row{}, err
	}
	defer stopAll(ps)
	if err := waitTotal(ctx, addrs, total, 5*time.Minute); err != nil {
		return row{}, err
	}
	cpu0 := 0.0
	for _, p := range ps {
		cpu0 += procs.CPUSeconds(p.Pid())
	}
	res, err := consumeAllPartitions(ctx, addrs, total)
	if err != nil {
		return row{}, err
	}
	cpu := -cpu0
	for _, p := range ps {
		cpu += procs.CPUSeconds(p.Pid())
	}
	return row{res: res, cpu: cpu}, nil
}

func stopAll(ps []*procs.Proc) {
	for _, p := range ps {
		p.Stop()
	}
}

// waitTotal waits until the main topic's partitions hold total records
// between them, as the gateways at addrs answer.
func waitTotal(ctx context.Context, addrs []string, total int64, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(timeout)
	var got int64
	for {
		ends, err := adm.ListEndOffsets(ctx, mainTopic)
		if err == nil {
			got = 0
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					got += o.Offset
				}
			})
			if got == total {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s holds %d of %d records after %v (%v)", mainTopic, got, total, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// consumeAllPartitions reads every partition of the main topic from its
// start with one client (which fetches from each partition's leader) until
// total records arrived.
func consumeAllPartitions(ctx context.Context, addrs []string, total int64) (consumeResult, error) {
	var res consumeResult
	parts := map[int32]kgo.Offset{}
	for p := range int32(clusterPartitions) {
		parts[p] = kgo.NewOffset().AtStart()
	}
	start := time.Now()
	cpu0 := procs.CPUSeconds(os.Getpid())
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{mainTopic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	for res.Records < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return res, fmt.Errorf("fetch %s/%d: %v", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			res.Records++
			res.Bytes += recordBytes(r)
		})
	}
	res.Elapsed = time.Since(start)
	res.ClientCPU = procs.CPUSeconds(os.Getpid()) - cpu0
	return res, nil
}
