package lsm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Where an LSM table's files live under the table location. The bucket and
// level of a data file are in its path, so the LSM structure is recovered
// from Iceberg's own file list; changelog files and their manifests are
// outside Iceberg manifests.
//
//	data/bucket-00003/L0-000000000042-<uuid>.parquet      sorted run (level, sequence)
//	data/bucket-00003/000000000042-<uuid>-deletes.parquet position deletes (v2)
//	data/bucket-00003/000000000042-<uuid>-dv.puffin       deletion vectors (v3)
//	changelog/bucket-00003/000000000042-<uuid>.parquet    change events
//	metadata/lsm-changelog-000000000042-<uuid>.json       the snapshot's changelog files
//	metadata/lsm-changelog-log-000000000042-<uuid>.json   expired snapshots the topic keeps (changelog.LSMLog)
//	metadata/lsm-changelog-log-000000000042-<uuid>.seg.json  a sealed segment of it, named by its last sequence
type layout struct{ loc string }

func newLayout(tableLocation string) layout {
	return layout{loc: strings.TrimSuffix(tableLocation, "/")}
}

func (l layout) dataFile(bucket, level int, seq int64) string {
	return fmt.Sprintf("%s/data/bucket-%05d/L%d-%012d-%s.parquet", l.loc, bucket, level, seq, uuid.NewString())
}

func (l layout) deleteFile(bucket int, seq int64) string {
	return fmt.Sprintf("%s/data/bucket-%05d/%012d-%s-deletes.parquet", l.loc, bucket, seq, uuid.NewString())
}

func (l layout) dvFile(bucket int, seq int64) string {
	return fmt.Sprintf("%s/data/bucket-%05d/%012d-%s-dv.puffin", l.loc, bucket, seq, uuid.NewString())
}

func (l layout) changelogFile(bucket int, seq int64) string {
	return fmt.Sprintf("%s/changelog/bucket-%05d/%012d-%s.parquet", l.loc, bucket, seq, uuid.NewString())
}

func (l layout) changelogManifest(seq int64) string {
	return fmt.Sprintf("%s/metadata/lsm-changelog-%012d-%s.json", l.loc, seq, uuid.NewString())
}

func (l layout) changelogLog(seq int64) string {
	return fmt.Sprintf("%s/metadata/lsm-changelog-log-%012d-%s.json", l.loc, seq, uuid.NewString())
}

func (l layout) changelogLogSegment(lastSeq int64) string {
	return fmt.Sprintf("%s/metadata/lsm-changelog-log-%012d-%s.seg.json", l.loc, lastSeq, uuid.NewString())
}

var dataFileRE = regexp.MustCompile(`/bucket-(\d+)/L(\d+)-(\d+)-[^/]+\.parquet$`)

// parseDataPath returns the bucket, level and sequence of a data file path.
func parseDataPath(path string) (bucket, level int, seq int64, err error) {
	m := dataFileRE.FindStringSubmatch(path)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("data file %s is not in the lakegw LSM layout (written by another writer?)", path)
	}
	bucket, _ = strconv.Atoi(m[1])
	level, _ = strconv.Atoi(m[2])
	seq, _ = strconv.ParseInt(m[3], 10, 64)
	return bucket, level, seq, nil
}
