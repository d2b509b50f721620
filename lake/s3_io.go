package lake

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	s3io "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// s3Schemes are the location schemes iceberg-go's S3 FileIO serves.
var s3Schemes = []string{"s3", "s3a", "s3n", "oss"}

// isS3Location reports whether loc is read through the S3 FileIO.
func isS3Location(loc string) bool {
	scheme, _, ok := strings.Cut(loc, "://")
	return ok && slices.Contains(s3Schemes, strings.ToLower(scheme))
}

// s3Configs holds one AWS configuration per set of catalog properties
// (keyed by all of them: any may shape the configuration).
//
// iceberg-go builds a new S3 FileIO on every Table.FS call: without a
// configuration in the context it loads the AWS defaults (environment,
// shared config files, a fresh credentials chain) and a new HTTP
// transport each time, about 5 ms per call and one set of connections per
// call, which lakegw makes for every snapshot it derives. With this one
// in the context (utils.WithAwsConfig) the FileIO takes it as its base, so
// a call costs tens of microseconds and every call shares the same
// connections and cached credentials. Explicit s3.* keys and region in the
// properties still override it, as iceberg-go documents.
var s3Configs sync.Map // string -> *aws.Config

// s3Transport tuning, as iceberg-go's own S3 client has it: many files of
// one bucket are read at once, and Go's default keeps 2 idle connections
// per host.
const (
	s3MaxIdleConns    = 256
	s3IdleConnTimeout = 90 * time.Second
)

// withS3Config returns ctx carrying the shared AWS configuration of props,
// unless it carries one already.
func withS3Config(ctx context.Context, props map[string]string) (context.Context, error) {
	if utils.GetAwsConfig(ctx) != nil {
		return ctx, nil
	}
	key := propsKey(props)
	if cfg, ok := s3Configs.Load(key); ok {
		return utils.WithAwsConfig(ctx, cfg.(*aws.Config)), nil
	}
	// Not the caller's deadline: the configuration outlives this call.
	cfg, err := s3io.ParseAWSConfig(context.WithoutCancel(ctx), props)
	if err != nil {
		return nil, fmt.Errorf("S3 configuration: %w", err)
	}
	if cfg.HTTPClient == nil { // else the properties asked for a proxy or timeout: keep that client
		cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = s3MaxIdleConns
			t.MaxIdleConnsPerHost = s3MaxIdleConns
			t.IdleConnTimeout = s3IdleConnTimeout
		})
	}
	actual, _ := s3Configs.LoadOrStore(key, cfg)
	return utils.WithAwsConfig(ctx, actual.(*aws.Config)), nil
}

func propsKey(props map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(props[k])
		b.WriteByte(0)
	}
	return b.String()
}

// loadFS is iceberg-go's io.LoadFS, but that an S3 FileIO is built on
// the shared configuration of props. Other locations (local files above
// all) are left to iceberg-go unchanged.
func loadFS(ctx context.Context, props map[string]string, location string) (icebergio.IO, error) {
	if isS3Location(location) {
		var err error
		if ctx, err = withS3Config(ctx, props); err != nil {
			return nil, err
		}
	}
	return icebergio.LoadFS(ctx, props, location)
}

// loadFSFunc is iceberg-go's io.LoadFSFunc on loadFS: the FileIOs of the
// tables lake loads itself.
func loadFSFunc(props map[string]string, location string) table.FSysF {
	if !isS3Location(location) {
		return icebergio.LoadFSFunc(props, location)
	}
	return func(ctx context.Context) (icebergio.IO, error) {
		fs, err := loadFS(ctx, props, location)
		if err != nil {
			return nil, fmt.Errorf("file IO for %s: %w", location, err)
		}
		return fs, nil
	}
}

// LoadTable is the SQL catalog's LoadTable, but that a table on S3 gets
// its FileIOs from loadFSFunc: lakegw's writers load their table before
// each commit and read it through many FS calls after.
func (c *sqlCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	if isS3Location(c.props["warehouse"]) {
		var err error
		if ctx, err = withS3Config(ctx, c.props); err != nil {
			return nil, fmt.Errorf("load table %v: %w", ident, err)
		}
	}
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil || !isS3Location(tbl.MetadataLocation()) {
		return tbl, err
	}
	// c, not the SQL catalog within: a commit that must retry refreshes
	// the table through this LoadTable.
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), loadFSFunc(c.props, tbl.MetadataLocation()),
		c, table.WithMetricsReporter(tbl.MetricsReporter())), nil
}
