package images_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The parts of the OCI image layout and image specs the test reads.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type index struct {
	MediaType   string            `json:"mediaType"`
	Manifests   []descriptor      `json:"manifests"`
	Annotations map[string]string `json:"annotations"`
}

type manifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

type config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// image is one platform's image of the layout.
type image struct {
	ref, arch string
	manifest  manifest
	config    config
}

// readLayout returns the images of the layout at dir, by reference, each
// index's platforms in order.
func readLayout(t *testing.T, dir string) map[string][]image {
	t.Helper()
	var top index
	readJSON(t, filepath.Join(dir, "index.json"), &top)
	out := map[string][]image{}
	for _, d := range top.Manifests {
		ref := d.Annotations["org.opencontainers.image.ref.name"]
		var idx index
		readJSON(t, blob(dir, d.Digest), &idx)
		if idx.MediaType != "application/vnd.oci.image.index.v1+json" {
			t.Errorf("%s: media type %q, want an OCI image index", ref, idx.MediaType)
		}
		for _, p := range idx.Manifests {
			img := image{ref: ref}
			if p.Platform != nil {
				img.arch = p.Platform.OS + "/" + p.Platform.Architecture
			}
			readJSON(t, blob(dir, p.Digest), &img.manifest)
			readJSON(t, blob(dir, img.manifest.Config.Digest), &img.config)
			out[ref] = append(out[ref], img)
		}
	}
	return out
}

func blob(dir, digest string) string {
	return filepath.Join(dir, "blobs", strings.Replace(digest, ":", string(filepath.Separator), 1))
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	if err := json.Unmarshal(readFile(t, path), into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// unpack writes img's layers, in order, under root: directories, regular
// files and symbolic links; any other entry, or a path leaving root, fails.
func unpack(t *testing.T, dir string, img image, root string) {
	t.Helper()
	for _, l := range img.manifest.Layers {
		if err := unpackLayer(blob(dir, l.Digest), root); err != nil {
			t.Fatalf("%s %s: layer %s: %v", img.ref, img.arch, l.Digest, err)
		}
	}
}

func unpackLayer(path, root string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := unpackEntry(tr, h, root); err != nil {
			return err
		}
	}
}

func unpackEntry(tr *tar.Reader, h *tar.Header, root string) error {
	name := filepath.Clean(h.Name)
	if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("entry %q leaves the root", h.Name)
	}
	p := filepath.Join(root, name)
	switch h.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(p, 0o755)
	case tar.TypeSymlink:
		if filepath.IsAbs(h.Linkname) {
			return fmt.Errorf("%s links to the absolute %s", h.Name, h.Linkname)
		}
		return os.Symlink(h.Linkname, p)
	case tar.TypeReg:
		w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode&0o755))
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, tr); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}
	return fmt.Errorf("entry %q of type %c", h.Name, h.Typeflag)
}
