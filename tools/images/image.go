package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refAnnotation names an index of the layout (its image's reference).
const refAnnotation = "org.opencontainers.image.ref.name"

// namedIndex is one image: its reference and its multi-architecture index.
type namedIndex struct {
	ref string
	idx v1.ImageIndex
}

func runBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBuild(args, stderr)
	if err != nil {
		return err
	}
	c, err := readChart(o.chart)
	if err != nil {
		return err
	}
	if o.version == "" {
		o.version = "v" + c.AppVersion
	}
	work, err := os.MkdirTemp("", "gpuadmit-images-")
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	defer os.RemoveAll(work)
	var all []namedIndex
	for _, spec := range images {
		idx, err := buildIndex(ctx, o, c, spec, work, stderr)
		if err != nil {
			return err
		}
		all = append(all, namedIndex{ref: spec.ref(c), idx: idx})
	}
	if err := writeLayout(o.out, all); err != nil {
		return err
	}
	for _, n := range all {
		d, err := n.idx.Digest()
		if err != nil {
			return fmt.Errorf("%s: %w", n.ref, err)
		}
		fmt.Fprintf(stdout, "%s@%s\n", n.ref, d)
	}
	return nil
}

// labels are an image's OCI labels (and its index's annotations).
func labels(o buildOptions, c chartImages, spec imageSpec) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       spec.title,
		"org.opencontainers.image.description": spec.description,
		"org.opencontainers.image.source":      c.Source,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	}
}

// buildIndex builds spec for every architecture of o into one index.
func buildIndex(ctx context.Context, o buildOptions, c chartImages, spec imageSpec, work string, stderr io.Writer) (v1.ImageIndex, error) {
	l := labels(o, c, spec)
	var adds []mutate.IndexAddendum
	for _, a := range o.arches {
		bin, err := goBuild(ctx, o, spec, a, work, stderr)
		if err != nil {
			return nil, err
		}
		img, err := assemble(o, spec, a, bin, l)
		if err != nil {
			return nil, fmt.Errorf("%s for %s: %w", spec.name, a.name, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: a.name},
		}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	withLabels, ok := mutate.Annotations(idx, l).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("%s: annotating the index", spec.name)
	}
	return withLabels, nil
}

// assemble is one image: a base layer (the nonroot user, and for a cgo
// binary the glibc it needs) and the binary's layer; run as 65532:65532,
// the binary as entrypoint.
func assemble(o buildOptions, spec imageSpec, a *arch, bin []byte, l map[string]string) (v1.Image, error) {
	base := baseEntries()
	what := "/etc/passwd and /etc/group (nonroot 65532), /home/nonroot, /tmp"
	if spec.cgo {
		libs, err := glibcEntries(bin, a.glibc)
		if err != nil {
			return nil, err
		}
		base = append(base, libs...)
		what += ", glibc from " + a.glibc.from + " of the build machine"
	}
	baseLayer, err := tarLayer(base, o.created)
	if err != nil {
		return nil, err
	}
	binLayer, err := tarLayer([]entry{fileEntry("/"+spec.name, 0o755, bin)}, o.created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.created}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: baseLayer, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "gpuadmit images: " + what}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "gpuadmit images: /" + spec.name + " (go build " + spec.pkg + ")"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", a.name, created
	cf.Config = v1.Config{
		User: fmt.Sprintf("%d:%d", nonroot, nonroot), Entrypoint: []string{"/" + spec.name}, WorkingDir: "/",
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Labels: l,
	}
	return mutate.ConfigFile(img, cf)
}

// writeLayout writes all into a fresh OCI image layout at dir (built
// beside it, then moved in place), each index named by its reference.
func writeLayout(dir string, all []namedIndex) error {
	tmp := filepath.Clean(dir) + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	p, err := layout.Write(tmp, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	for _, n := range all {
		if err := p.AppendIndex(n.idx, layout.WithAnnotations(map[string]string{refAnnotation: n.ref})); err != nil {
			return fmt.Errorf("layout: %s: %w", n.ref, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	return nil
}
