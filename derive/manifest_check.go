package derive

import (
	"context"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// iceberg-go's planner reads a snapshot's manifests in goroutines it
// starts (Scan.PlanFiles), where a panic of the Avro decoder on a damaged
// manifest could not be recovered and would end the process. So, as with
// data files (file_check.go), the manifest list and every manifest are
// decoded here first, in the derivation's goroutine and under recover,
// each once per process: a manifest is immutable, its location and length
// decode the same way every time. No panic was found in some 200,000
// single-byte mutations of real manifests (the decoder returns errors);
// this makes the containment hold by construction, not by that search.

// Manifest lists and manifests share checkedSet with data files; these
// counts mark their keys apart.
const (
	checkedManifestList = -2
	checkedManifest     = -3
)

// checkManifests decodes the manifest list and the manifests of snap
// that have not been decoded before, turning a panic into an error that
// names the file. A list is marked checked only once every manifest it
// names passed, so a list seen before is not decoded again.
func checkManifests(ctx context.Context, fs icebergio.IO, snap *table.Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	listKey := checkedKey{location: hashLocation(locationOf(fs, snap.ManifestList)), size: -1, count: checkedManifestList, blobOffset: -1}
	if filesChecked.has(listKey) {
		return nil
	}
	var manifests []iceberg.ManifestFile
	err := contained("manifest list "+snap.ManifestList, func() (err error) {
		manifests, err = readManifestList(fs, snap)
		return err
	})
	if err != nil {
		return err
	}
	for _, m := range manifests {
		key := checkedKey{location: hashLocation(locationOf(fs, m.FilePath())), size: m.Length(), count: checkedManifest, blobOffset: -1}
		if filesChecked.has(key) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := contained("manifest "+m.FilePath(), func() error {
			_, err := readManifest(fs, m)
			return err
		})
		if err != nil {
			return err
		}
		filesChecked.add(key)
	}
	filesChecked.add(listKey)
	return nil
}

// contained runs read under recoverRead, so that a panic is an error
// naming what was read.
func contained(what string, read func() error) (err error) {
	defer recoverRead(&err, func() string { return what + " is damaged: decoding it" })
	return read()
}
