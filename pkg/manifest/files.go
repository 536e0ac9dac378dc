package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Extensions are the endings of the files a directory's manifests are read
// from, as kubectl reads them.
var Extensions = []string{".json", ".yaml", ".yml"}

// ReadFiles reads what kubectl's repeated -f names, in order, into one
// Objects: a file, "-" for standard input (once at most), or a directory,
// whose .json, .yaml and .yml files are read in lexical order, those of its
// subdirectories too when recursive.
func ReadFiles(paths []string, recursive bool, stdin io.Reader) (*Objects, error) {
	files, err := Files(paths, recursive)
	if err != nil {
		return nil, err
	}
	out := &Objects{}
	for _, f := range files {
		objs, err := ReadFile(f, stdin)
		if err != nil {
			return nil, err
		}
		out.Append(objs)
	}
	return out, nil
}

// Files expands paths as kubectl's -f does: a directory becomes its
// manifest files (see ReadFiles); any other path stays as it is, to be
// opened (a file of any name, or "-").
func Files(paths []string, recursive bool) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if p == "-" || err != nil || !st.IsDir() {
			if p == "-" && slices.Contains(files, "-") {
				return nil, errors.New("standard input (-) is named twice")
			}
			files = append(files, p) // opening it tells what is wrong
			continue
		}
		in, err := dirFiles(p, recursive)
		if err != nil {
			return nil, err
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("%s: %s", p, noManifests(recursive))
		}
		files = append(files, in...)
	}
	return files, nil
}

// dirFiles lists the manifest files of dir, lexically, descending into
// its subdirectories when recursive.
func dirFiles(dir string, recursive bool) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != dir && !recursive:
			return filepath.SkipDir
		case !d.IsDir() && slices.Contains(Extensions, filepath.Ext(p)):
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading directory %s: %w", dir, err)
	}
	return files, nil
}

func noManifests(recursive bool) string {
	if recursive {
		return "a directory without .json, .yaml or .yml files, in it or below"
	}
	return "a directory without .json, .yaml or .yml files (-R reads its subdirectories too)"
}

// Append adds the objects of more after those of o.
func (o *Objects) Append(more *Objects) {
	o.Pods = append(o.Pods, more.Pods...)
	o.Nodes = append(o.Nodes, more.Nodes...)
	o.Quotas = append(o.Quotas, more.Quotas...)
	o.Namespaces = append(o.Namespaces, more.Namespaces...)
	o.Claims = append(o.Claims, more.Claims...)
	o.ClaimTemplates = append(o.ClaimTemplates, more.ClaimTemplates...)
	o.Slices = append(o.Slices, more.Slices...)
	o.DeviceClasses = append(o.DeviceClasses, more.DeviceClasses...)
	o.Workloads = append(o.Workloads, more.Workloads...)
	o.Skipped += more.Skipped
	o.Other = append(o.Other, more.Other...)
}
