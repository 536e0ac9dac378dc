package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// glibc says where one architecture's glibc comes from on the build
// machine (a Debian package's files) and where it goes in the image.
type glibc struct {
	// from is the directory holding the libraries on the build machine:
	// /lib/x86_64-linux-gnu (libc6) or /usr/aarch64-linux-gnu/lib
	// (libc6-arm64-cross).
	from string
	// libDir is their directory in the image: /lib/<triplet>, where a
	// Debian or Ubuntu system keeps them (and where the NVIDIA container
	// toolkit mounts libnvidia-ml beside them).
	libDir string
	// copyright is the package's copyright file, shipped with the
	// libraries as /usr/share/doc/libc6/copyright.
	copyright string
	machine   elf.Machine
}

// glibcBase are the libraries an agent image holds whatever its binary
// links: libnvidia-ml, which the agent dlopens, links libc, libdl,
// libpthread, libm and librt.
var glibcBase = []string{"libc.so.6", "libdl.so.2", "libpthread.so.0", "libm.so.6", "librt.so.1"}

// glibcEntries are the files that let binary run: its loader (PT_INTERP),
// glibcBase and every library they and binary need (DT_NEEDED, closed),
// each read from g.from; a symbolic link at the loader's path when it is
// not in libDir; ld.so.conf naming libDir; the copyright file. A needed
// library missing from g.from, or of another machine, is an error.
func glibcEntries(binary []byte, g glibc) ([]entry, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return nil, fmt.Errorf("the agent binary: %w", err)
	}
	if f.Machine != g.machine {
		return nil, fmt.Errorf("the agent binary is for %s, want %s", f.Machine, g.machine)
	}
	interp, err := interpreter(f)
	if err != nil {
		return nil, err
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("the agent binary: %w", err)
	}
	queue := append(append([]string{path.Base(interp)}, glibcBase...), needed...)
	libs, err := closure(queue, g)
	if err != nil {
		return nil, err
	}
	loader := path.Join(g.libDir, path.Base(interp))
	if interp != loader {
		target, err := filepath.Rel(path.Dir(interp), loader)
		if err != nil {
			return nil, fmt.Errorf("loader %s: %w", interp, err)
		}
		libs = append(libs, linkEntry(interp, filepath.ToSlash(target)))
	}
	copyright, err := os.ReadFile(g.copyright)
	if err != nil {
		return nil, fmt.Errorf("glibc's copyright file: %w", err)
	}
	return append(libs,
		fileEntry("/etc/ld.so.conf", 0o644, []byte("include /etc/ld.so.conf.d/*.conf\n")),
		fileEntry("/etc/ld.so.conf.d/"+path.Base(g.libDir)+".conf", 0o644, []byte("/usr/local/lib/"+path.Base(g.libDir)+"\n"+g.libDir+"\n/usr"+g.libDir+"\n")),
		fileEntry("/usr/share/doc/libc6/copyright", 0o644, copyright)), nil
}

// closure reads each library of queue and those they need from g.from.
func closure(queue []string, g glibc) ([]entry, error) {
	seen := map[string]bool{}
	var out []entry
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		b, err := os.ReadFile(filepath.Join(g.from, name))
		if err != nil {
			return nil, fmt.Errorf("glibc for %s: %w", g.machine, err)
		}
		lib, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(g.from, name), err)
		}
		if lib.Machine != g.machine {
			return nil, fmt.Errorf("%s is for %s, want %s", filepath.Join(g.from, name), lib.Machine, g.machine)
		}
		more, err := lib.ImportedLibraries()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(g.from, name), err)
		}
		queue = append(queue, more...)
		out = append(out, fileEntry(path.Join(g.libDir, name), 0o755, b))
	}
	return out, nil
}

// interpreter is f's PT_INTERP: the dynamic loader's absolute path.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("the agent binary's loader: %w", err)
		}
		interp := string(bytes.TrimRight(b, "\x00"))
		if !path.IsAbs(interp) || path.Clean(interp) != interp {
			return "", fmt.Errorf("the agent binary's loader %q is not an absolute path", interp)
		}
		return interp, nil
	}
	return "", fmt.Errorf("the agent binary is not dynamically linked (no PT_INTERP): built without cgo?")
}
