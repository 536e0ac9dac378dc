package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("images push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("layout", "bin/images", "the OCI image layout `images build` wrote")
	registry := fs.String("registry", "", "where to push: HOST[/PREFIX], e.g. ghcr.io/my-org")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *registry == "" {
		return fmt.Errorf("%w: --registry is required (make push REGISTRY=host/prefix)", errUsage)
	}
	return push(ctx, *dir, *registry, stdout, remote.WithAuthFromKeychain(authn.DefaultKeychain))
}

// push writes every index of the layout at dir to
// registry/<last element of its repository>:<its tag>, and prints each
// reference pushed with its digest.
func push(ctx context.Context, dir, registry string, stdout io.Writer, opts ...remote.Option) error {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return fmt.Errorf("reading %s (run make images first): %w", dir, err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if len(m.Manifests) == 0 {
		return fmt.Errorf("%s holds no image", dir)
	}
	opts = append(opts, remote.WithContext(ctx))
	for _, d := range m.Manifests {
		src, err := name.NewTag(d.Annotations[refAnnotation])
		if err != nil {
			return fmt.Errorf("%s: an index named %q: %w", dir, d.Annotations[refAnnotation], err)
		}
		dst, err := name.NewTag(strings.TrimSuffix(registry, "/") + "/" + path.Base(src.RepositoryStr()) + ":" + src.TagStr())
		if err != nil {
			return fmt.Errorf("--registry %q: %w", registry, err)
		}
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", dir, src, err)
		}
		if err := remote.WriteIndex(dst, idx, opts...); err != nil {
			return fmt.Errorf("pushing %s: %w", dst, err)
		}
		fmt.Fprintf(stdout, "%s@%s\n", dst, d.Digest)
	}
	return nil
}
