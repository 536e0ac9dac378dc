package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"strings"
)

// Source provides Rego modules (policies and *_test.rego tests), keyed by
// slash-separated paths relative to the source.
type Source interface {
	// Name identifies the source in messages and module file names.
	Name() string
	// Modules returns the module texts by path.
	Modules(ctx context.Context) (map[string]string, error)
}

// FS returns a source reading every *.rego file of fsys (recursively).
func FS(name string, fsys fs.FS) Source { return fsSource{name: name, fsys: fsys} }

// Dir returns a source reading every *.rego file under the directory dir.
// Reading fails when dir does not exist.
func Dir(dir string) Source { return dirSource{dir: dir} }

// Map returns a source holding the given modules (a ConfigMap's data, say):
// keys ending in .rego are modules, other keys are ignored.
func Map(name string, modules map[string]string) Source {
	return mapSource{name: name, modules: maps.Clone(modules)}
}

type fsSource struct {
	name string
	fsys fs.FS
}

func (s fsSource) Name() string { return s.name }

func (s fsSource) Modules(ctx context.Context) (map[string]string, error) {
	return readFS(ctx, s.fsys)
}

type dirSource struct{ dir string }

func (s dirSource) Name() string { return s.dir }

func (s dirSource) Modules(ctx context.Context) (map[string]string, error) {
	st, err := os.Stat(s.dir)
	if err != nil {
		return nil, fmt.Errorf("policy directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("policy directory %s: not a directory", s.dir)
	}
	return readFS(ctx, os.DirFS(s.dir))
}

type mapSource struct {
	name    string
	modules map[string]string
}

func (s mapSource) Name() string { return s.name }

func (s mapSource) Modules(context.Context) (map[string]string, error) {
	out := make(map[string]string, len(s.modules))
	for k, v := range s.modules {
		if strings.HasSuffix(k, ".rego") {
			out[path.Clean(k)] = v
		}
	}
	return out, nil
}

func readFS(ctx context.Context, fsys fs.FS) (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Skip hidden entries: ConfigMap volumes hold ..data links and timestamped directories.
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = string(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no .rego files found")
	}
	return out, nil
}
