package main

import (
	"bytes"
	"context"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// buildOptions is build's command line.
type buildOptions struct {
	chart, out, module, goBin string
	version, revision         string
	created                   time.Time
	arches                    []*arch
}

// word is what a version or revision may be: it goes into -ldflags and labels.
var word = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

func parseBuild(args []string, stderr io.Writer) (buildOptions, error) {
	fs := flag.NewFlagSet("images build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := buildOptions{}
	known := knownArches()
	fs.StringVar(&o.chart, "chart", "charts/gpuadmit", "the chart whose values.yaml names the images")
	fs.StringVar(&o.out, "out", "bin/images", "the OCI image layout to write (replaced)")
	fs.StringVar(&o.module, "module", ".", "gpuadmit's module directory")
	fs.StringVar(&o.goBin, "go", "go", "the go command")
	fs.StringVar(&o.version, "version", "", "the release (default v and the chart's appVersion)")
	fs.StringVar(&o.revision, "revision", "unknown", "the commit")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970: every time in the images (default $SOURCE_DATE_EPOCH, else 0)")
	archList := fs.String("arch", "amd64,arm64", "comma-separated architectures")
	for name, a := range known {
		fs.StringVar(&a.cc, "cc-"+name, a.cc, "C compiler of the agent for "+name)
		fs.StringVar(&a.glibc.from, "glibc-"+name, a.glibc.from, "directory of the build machine's glibc for "+name)
		fs.StringVar(&a.glibc.copyright, "glibc-copyright-"+name, a.glibc.copyright, "glibc's copyright file for "+name)
	}
	if err := parse(fs, args); err != nil {
		return o, err
	}
	secs := int64(0)
	if *epoch != "" {
		var err error
		if secs, err = strconv.ParseInt(*epoch, 10, 64); err != nil || secs < 0 {
			return o, fmt.Errorf("%w: --source-date-epoch %q: want seconds since 1970", errUsage, *epoch)
		}
	}
	o.created = time.Unix(secs, 0).UTC()
	for _, name := range strings.Split(*archList, ",") {
		a, ok := known[name]
		if !ok {
			return o, fmt.Errorf("%w: --arch: unknown architecture %q (amd64, arm64)", errUsage, name)
		}
		o.arches = append(o.arches, a)
	}
	for _, v := range []string{o.version, o.revision} {
		if v != "" && !word.MatchString(v) {
			return o, fmt.Errorf("%w: version or revision %q: letters, digits and ._+- only", errUsage, v)
		}
	}
	return o, nil
}

// goBuild compiles spec's binary for a: -trimpath, no VCS stamp, stripped,
// version and commit set; static (CGO_ENABLED=0) unless spec.cgo, then with
// Go's own resolver and user lookups (netgo, osusergo).
func goBuild(ctx context.Context, o buildOptions, spec imageSpec, a *arch, work string, stderr io.Writer) ([]byte, error) {
	out := filepath.Join(work, spec.name+"-"+a.name)
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", o.version, o.revision)
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out}
	if spec.cgo {
		// The image's glibc has no NSS modules: names and users are
		// resolved in Go (/etc/hosts, DNS; /etc/passwd), never by glibc.
		args = append(args, "-tags", "netgo,osusergo")
	}
	cmd := exec.CommandContext(ctx, o.goBin, append(args, spec.pkg)...)
	cmd.Dir = o.module
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+a.name, "CGO_ENABLED=0")
	if spec.cgo {
		if _, err := exec.LookPath(a.cc); err != nil {
			return nil, fmt.Errorf("%s for %s needs the C compiler %s (Debian: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross for arm64): %w", spec.name, a.name, a.cc, err)
		}
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1", "CC="+a.cc)
	}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for linux/%s: %w", spec.pkg, a.name, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("go build %s: %w", spec.pkg, err)
	}
	if err := checkLinking(b, spec, a); err != nil {
		return nil, err
	}
	return b, nil
}

// checkLinking refuses a binary of another machine, a webhook that is not
// static, an agent that is.
func checkLinking(b []byte, spec imageSpec, a *arch) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s for %s: %w", spec.name, a.name, err)
	}
	if f.Machine != a.machine {
		return fmt.Errorf("%s for %s is an ELF for %s", spec.name, a.name, f.Machine)
	}
	_, err = interpreter(f)
	switch dynamic := err == nil; {
	case dynamic && !spec.cgo:
		return fmt.Errorf("%s for %s is dynamically linked; it must be static (CGO_ENABLED=0)", spec.name, a.name)
	case !dynamic && spec.cgo:
		return fmt.Errorf("%s for %s: %w", spec.name, a.name, err)
	}
	return nil
}
