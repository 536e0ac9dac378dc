package main

import (
	"debug/elf"
	"fmt"
	"runtime"
)

// imageSpec is one of gpuadmit's images.
type imageSpec struct {
	// name is the binary's name, its path in the image (/name) and the
	// entrypoint.
	name string
	// pkg is the main package, relative to the module.
	pkg string
	// cgo: linked against glibc, which the image then holds.
	cgo                bool
	title, description string
	// ref is the image's reference as the chart names it.
	ref func(chartImages) string
}

var images = []imageSpec{
	{
		name: "webhook", pkg: "./cmd/webhook",
		title: "gpuadmit-webhook", description: "gpuadmit's admission webhook: exact GPU quotas for pods",
		ref: func(c chartImages) string { return c.Webhook },
	},
	{
		name: "nvml-agent", pkg: "./cmd/nvml-agent", cgo: true,
		title:       "gpuadmit-nvml-agent",
		description: "gpuadmit's node agent: NVML devices to the Node's gpuadmit.io/gpu-devices annotation",
		ref:         func(c chartImages) string { return c.Agent },
	},
}

// arch is one architecture the images are built for.
type arch struct {
	name    string // GOARCH and the OCI platform's architecture
	machine elf.Machine
	// cc is the C compiler of the agent's cgo for this architecture.
	cc    string
	glibc glibc
}

// knownArches are the architectures build knows, with the defaults of a
// Debian build machine of the running architecture: its own gcc and libc6,
// and the other's cross compiler and libc6-<arch>-cross.
func knownArches() map[string]*arch {
	amd64 := arch{name: "amd64", machine: elf.EM_X86_64, cc: "gcc", glibc: glibc{
		from: "/lib/x86_64-linux-gnu", libDir: "/lib/x86_64-linux-gnu",
		copyright: "/usr/share/doc/libc6/copyright", machine: elf.EM_X86_64,
	}}
	arm64 := arch{name: "arm64", machine: elf.EM_AARCH64, cc: "gcc", glibc: glibc{
		from: "/lib/aarch64-linux-gnu", libDir: "/lib/aarch64-linux-gnu",
		copyright: "/usr/share/doc/libc6/copyright", machine: elf.EM_AARCH64,
	}}
	if runtime.GOARCH != "amd64" {
		amd64.cc = "x86_64-linux-gnu-gcc"
		amd64.glibc.from, amd64.glibc.copyright = "/usr/x86_64-linux-gnu/lib", "/usr/share/doc/libc6-amd64-cross/copyright"
	}
	if runtime.GOARCH != "arm64" {
		arm64.cc = "aarch64-linux-gnu-gcc"
		arm64.glibc.from, arm64.glibc.copyright = "/usr/aarch64-linux-gnu/lib", "/usr/share/doc/libc6-arm64-cross/copyright"
	}
	return map[string]*arch{"amd64": &amd64, "arm64": &arm64}
}

// nonroot is the user the images run as, the chart's securityContext's.
const nonroot = 65532

// baseEntries are every image's files besides its binary (and the agent's
// glibc): the nonroot user and group, its home, /tmp, and nsswitch.conf
// saying that host names are looked up in /etc/hosts, then DNS (what Go's
// resolver does without it, said for any other reader).
func baseEntries() []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonroot, nonroot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonroot)
	return []entry{
		fileEntry("/etc/passwd", 0o644, []byte(passwd)),
		fileEntry("/etc/group", 0o644, []byte(group)),
		fileEntry("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		dirEntry("/home/nonroot", 0o700, nonroot),
		dirEntry("/root", 0o700, 0),
		dirEntry("/tmp", 0o1777, 0),
	}
}
