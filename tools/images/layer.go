package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file, directory or symbolic link of a layer. Owners are
// root unless uid is set; every time is the build's.
type entry struct {
	path string // absolute, clean
	mode int64  // permission bits (and sticky)
	dir  bool
	link string // the target of a symbolic link
	data []byte
	uid  int
}

func fileEntry(p string, mode int64, data []byte) entry {
	return entry{path: p, mode: mode, data: data}
}

func dirEntry(p string, mode int64, uid int) entry {
	return entry{path: p, mode: mode, dir: true, uid: uid}
}

func linkEntry(p, target string) entry { return entry{path: p, mode: 0o777, link: target} }

// tarLayer is the layer of entries: a tar whose entries are sorted by path,
// every parent directory written before its children (0755, root, unless
// listed), owners numeric only, every time mtime: the same entries give the
// same bytes, hence the same digest.
func tarLayer(entries []entry, mtime time.Time) (v1.Layer, error) {
	all, err := withParents(entries)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range all {
		if err := writeEntry(tw, e, mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return layer, nil
}

// withParents adds the missing parent directories and sorts by path; two
// entries of one path are an error.
func withParents(entries []entry) ([]entry, error) {
	byPath := map[string]entry{}
	for _, e := range entries {
		if !path.IsAbs(e.path) || path.Clean(e.path) != e.path || e.path == "/" {
			return nil, fmt.Errorf("layer: path %q is not absolute and clean", e.path)
		}
		if _, dup := byPath[e.path]; dup {
			return nil, fmt.Errorf("layer: %s twice", e.path)
		}
		byPath[e.path] = e
	}
	for _, e := range entries {
		for p := path.Dir(e.path); p != "/"; p = path.Dir(p) {
			if _, ok := byPath[p]; !ok {
				byPath[p] = dirEntry(p, 0o755, 0)
			}
		}
	}
	keys := make([]string, 0, len(byPath))
	for k := range byPath {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, byPath[k])
	}
	return out, nil
}

func writeEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	h := &tar.Header{
		Name: strings.TrimPrefix(e.path, "/"), Mode: e.mode, Uid: e.uid, Gid: e.uid,
		ModTime: mtime, Format: tar.FormatPAX,
	}
	switch {
	case e.dir:
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
	case e.link != "":
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
	default:
		h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("layer: %s: %w", e.path, err)
	}
	if _, err := tw.Write(e.data); err != nil {
		return fmt.Errorf("layer: %s: %w", e.path, err)
	}
	return nil
}
