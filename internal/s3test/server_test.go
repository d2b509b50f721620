package s3test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestStartServesObjectsAndSeparatesServers(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Endpoint() == b.Endpoint() || a.AccessKey() == b.AccessKey() {
		t.Fatalf("two servers share endpoint %s or key %s", a.Endpoint(), a.AccessKey())
	}
	ctx := context.Background()
	a.CreateBucket(t, "lake")
	body := []byte("0123456789")
	if _, err := a.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/x/f.bin"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	out, err := a.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String("wh/x/f.bin"), Range: aws.String("bytes=3-5")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || string(got) != "345" {
		t.Fatalf("ranged GET: %q, %v; want \"345\"", got, err)
	}
	// The second server has its own directory: no bucket of the first.
	if _, err := b.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("lake")}); err == nil {
		t.Fatal("the second server sees the first one's bucket")
	}
	// A wrong key is refused: the server checks signatures.
	wrong := *a
	wrong.secretKey = "not-" + a.secretKey
	if _, err := wrong.newClient().ListBuckets(ctx, &s3.ListBucketsInput{}); err == nil {
		t.Fatal("a request signed with a wrong secret was accepted")
	}
}
