package main

import (
	"context"
	"os"
	"os/signal"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// The release, its commit and build time, set when building (make build
// and make release set them):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse --short HEAD) \
//	  -X main.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/gpuadmit
//
// Without them, commit and buildDate are the build's VCS stamp (the
// commit and its time) when Go recorded one, else "unknown".
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	name, args := app.Invocation(os.Args[0], os.Args[1:])
	build := cmdline.Build{Version: version, Commit: commit, BuildDate: buildDate}
	code := app.Run(ctx, build, name, args, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
