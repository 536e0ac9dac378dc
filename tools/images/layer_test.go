package main

import (
	"archive/tar"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

var epoch = time.Unix(1700000000, 0).UTC()

// TestLayerIsReproducible: the same files give the same digest whatever
// the order they are listed in; every header is the build's time, numeric
// owners, no names; parents come before children; a changed time or mode
// is a changed digest.
func TestLayerIsReproducible(t *testing.T) {
	a := []entry{fileEntry("/etc/passwd", 0o644, []byte("x")), fileEntry("/bin/x", 0o755, []byte("y")), dirEntry("/tmp", 0o1777, 0)}
	b := []entry{a[2], a[1], a[0]}
	da, db := digest(t, a, epoch), digest(t, b, epoch)
	if da != db {
		t.Errorf("order changes the digest: %s, %s", da, db)
	}
	if d := digest(t, a, epoch.Add(time.Second)); d == da {
		t.Error("the time does not change the digest")
	}
	if d := digest(t, []entry{fileEntry("/etc/passwd", 0o600, []byte("x")), a[1], a[2]}, epoch); d == da {
		t.Error("a mode does not change the digest")
	}
	var names []string
	for _, h := range headers(t, b) {
		names = append(names, h.Name)
		if !h.ModTime.Equal(epoch) || h.Uname != "" || h.Gname != "" || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v owner %d:%d (%q:%q)", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
	}
	if want := []string{"bin/", "bin/x", "etc/", "etc/passwd", "tmp/"}; !slices.Equal(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
}

// TestLayerRefusesBadPaths: a path twice, relative or unclean is an error,
// not a layer that unpacks differently from what was listed.
func TestLayerRefusesBadPaths(t *testing.T) {
	for _, es := range [][]entry{
		{fileEntry("/a", 0o644, nil), fileEntry("/a", 0o600, nil)},
		{fileEntry("a", 0o644, nil)},
		{fileEntry("/a/../b", 0o644, nil)},
		{fileEntry("/", 0o644, nil)},
	} {
		if _, err := tarLayer(es, epoch); err == nil {
			t.Errorf("%v: no error", es)
		}
	}
}

func digest(t *testing.T, es []entry, mtime time.Time) string {
	t.Helper()
	l, err := tarLayer(es, mtime)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func headers(t *testing.T, es []entry) []*tar.Header {
	t.Helper()
	l, err := tarLayer(es, epoch)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var out []*tar.Header
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(h.Name, "/") {
			t.Errorf("absolute name %s", h.Name)
		}
		out = append(out, h)
	}
}
