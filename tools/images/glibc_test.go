package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGlibcEntries: a dynamically linked binary of the build machine gets
// its loader (and a link at its PT_INTERP path), glibcBase and what they
// need, ld.so.conf and the copyright; a binary of another machine, a glibc
// directory missing a library, no copyright are errors naming what is
// wrong.
func TestGlibcEntries(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("reads the amd64 build machine's libc6")
	}
	g := knownArches()["amd64"].glibc
	bin := readFile(t, "/bin/true")
	es, err := glibcEntries(bin, g)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]entry{}
	for _, e := range es {
		got[e.path] = e
	}
	for _, p := range []string{"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libdl.so.2",
		"/lib/x86_64-linux-gnu/libpthread.so.0", "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/librt.so.1",
		"/etc/ld.so.conf", "/etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/usr/share/doc/libc6/copyright"} {
		if _, ok := got[p]; !ok {
			t.Errorf("no %s", p)
		}
	}
	if l := got["/lib64/ld-linux-x86-64.so.2"]; l.link != "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" {
		t.Errorf("the loader's link: %+v", l.link)
	}

	bad := []struct {
		name string
		bin  []byte
		g    glibc
		want string
	}{
		{name: "another machine", bin: bin, g: knownArches()["arm64"].glibc, want: "is for EM_X86_64, want EM_AARCH64"},
		{name: "a library missing", bin: bin, g: glibc{from: t.TempDir(), libDir: g.libDir, copyright: g.copyright, machine: g.machine}, want: "ld-linux-x86-64.so.2"},
		{name: "no copyright", bin: bin, g: glibc{from: g.from, libDir: g.libDir, copyright: filepath.Join(t.TempDir(), "c"), machine: g.machine}, want: "copyright"},
		{name: "not an ELF", bin: []byte("#!/bin/sh\n"), g: g, want: "the agent binary"},
	}
	for _, tc := range bad {
		if _, err := glibcEntries(tc.bin, tc.g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckLinking: a dynamically linked webhook, a binary of another
// machine are refused (the webhook's image holds no loader; an arm64
// image of an amd64 binary does not start).
func TestCheckLinking(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("uses the amd64 build machine's /bin/true")
	}
	bin := readFile(t, "/bin/true")
	known := knownArches()
	for _, tc := range []struct {
		spec imageSpec
		a    *arch
		want string
	}{
		{spec: images[0], a: known["amd64"], want: "must be static"},
		{spec: images[1], a: known["arm64"], want: "is an ELF for EM_X86_64"},
	} {
		if err := checkLinking(bin, tc.spec, tc.a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s for %s: error %v, want %q", tc.spec.name, tc.a.name, err, tc.want)
		}
	}
	if err := checkLinking(bin, images[1], known["amd64"]); err != nil {
		t.Errorf("a dynamically linked agent: %v", err)
	}
}
