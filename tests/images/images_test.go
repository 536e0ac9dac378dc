package images_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
)

// binaries are the images' entrypoints; each image holds one.
var binaries = []string{"/webhook", "/nvml-agent"}

// TestImages: make images on this daemonless machine, then what a node
// would pull and run.
func TestImages(t *testing.T) {
	helm := filepath.Join(envtestgate.Assets(t), "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm is not built: run `make helm` (make integration builds it): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "images")
	makeImages(t, dir)
	byRef := readLayout(t, dir)
	byBinary := map[string][]image{}
	for ref, imgs := range byRef {
		byBinary[imgs[0].config.Config.Entrypoint[0]] = imgs
		if len(imgs) != 2 || imgs[0].arch != "linux/amd64" || imgs[1].arch != "linux/arm64" {
			t.Errorf("%s: platforms %v, want linux/amd64 and linux/arm64", ref, imgs)
		}
	}
	if len(byRef) != len(binaries) {
		t.Fatalf("the layout holds %d images, want %d: %v", len(byRef), len(binaries), byRef)
	}
	t.Run("config", func(t *testing.T) { checkConfigs(t, byBinary) })
	t.Run("binaries", func(t *testing.T) { checkBinaries(t, dir, byBinary) })
	t.Run("the chart deploys them", func(t *testing.T) { checkChart(t, helm, byBinary) })
	t.Run("reproducible", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "images")
		makeImages(t, again)
		if a, b := readFile(t, filepath.Join(dir, "index.json")), readFile(t, filepath.Join(again, "index.json")); string(a) != string(b) {
			t.Errorf("two builds of one commit differ:\n%s\n%s", a, b)
		}
	})
}

// checkConfigs: every image runs as 65532:65532 its one binary, labelled
// with the release, the commit and the commit's time (also its creation
// time: the same commit, the same digests).
func checkConfigs(t *testing.T, byBinary map[string][]image) {
	wantVersion := "v" + appVersion(t)
	wantRevision := git(t, "rev-parse", "HEAD")
	secs, err := strconv.ParseInt(git(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	wantCreated := time.Unix(secs, 0).UTC().Format(time.RFC3339)
	for bin, imgs := range byBinary {
		for _, img := range imgs {
			c := img.config
			if c.OS+"/"+c.Architecture != img.arch || c.Config.User != "65532:65532" || !slices.Equal(c.Config.Entrypoint, []string{bin}) || len(c.Config.Cmd) != 0 {
				t.Errorf("%s %s: os/arch %s/%s user %q entrypoint %v cmd %v", img.ref, img.arch, c.OS, c.Architecture, c.Config.User, c.Config.Entrypoint, c.Config.Cmd)
			}
			if c.Created != wantCreated {
				t.Errorf("%s %s: created %s, want the commit's time %s", img.ref, img.arch, c.Created, wantCreated)
			}
			l := c.Config.Labels
			want := map[string]string{"version": wantVersion, "revision": wantRevision, "created": wantCreated, "source": "https://github.com/gpuadmit/gpuadmit"}
			for k, v := range want {
				if got := l["org.opencontainers.image."+k]; got != v {
					t.Errorf("%s %s: label %s %q, want %q", img.ref, img.arch, k, got, v)
				}
			}
			if !strings.Contains(l["org.opencontainers.image.title"], strings.TrimPrefix(bin, "/")) || l["org.opencontainers.image.description"] == "" {
				t.Errorf("%s %s: title %q description %q", img.ref, img.arch, l["org.opencontainers.image.title"], l["org.opencontainers.image.description"])
			}
		}
	}
}

// checkBinaries unpacks every image: each binary is an ELF of its
// platform's machine, the webhook static, the agent's loader present in
// the image; the amd64 ones print the labels' version and commit, the
// agent run by the image's loader on the image's glibc.
func checkBinaries(t *testing.T, dir string, byBinary map[string][]image) {
	machines := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	for bin, imgs := range byBinary {
		for _, img := range imgs {
			root := t.TempDir()
			unpack(t, dir, img, root)
			interp := checkELF(t, img, filepath.Join(root, bin), machines[img.arch])
			checkPasswd(t, img, root)
			switch {
			case bin == "/webhook" && interp != "":
				t.Errorf("%s %s: the webhook is dynamically linked (%s); the image holds no loader", img.ref, img.arch, interp)
			case bin == "/nvml-agent" && interp == "":
				t.Errorf("%s %s: the agent is static: it cannot dlopen libnvidia-ml", img.ref, img.arch)
			case interp != "":
				checkELF(t, img, filepath.Join(root, interp), machines[img.arch])
			}
			if img.arch != "linux/amd64" {
				continue
			}
			cmd := exec.Command(filepath.Join(root, bin), "--version")
			if interp != "" {
				cmd = exec.Command(filepath.Join(root, interp), "--library-path", filepath.Join(root, "lib/x86_64-linux-gnu"), filepath.Join(root, bin), "--version")
			}
			cmd.Env = []string{}
			out, err := cmd.CombinedOutput()
			l := img.config.Config.Labels
			want := strings.TrimPrefix(bin, "/") + " " + l["org.opencontainers.image.version"] + " commit " + l["org.opencontainers.image.revision"] + "\n"
			if err != nil || string(out) != want {
				t.Errorf("%s %s: %v --version: %v, output %q, want %q", img.ref, img.arch, cmd.Args, err, out, want)
			}
		}
	}
}

// checkELF returns the PT_INTERP of the ELF at path, failing unless it is
// an ELF for machine.
func checkELF(t *testing.T, img image, path string, machine elf.Machine) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s %s: %v", img.ref, img.arch, err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s %s: %s is an ELF for %s, want %s", img.ref, img.arch, path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}

func checkPasswd(t *testing.T, img image, root string) {
	t.Helper()
	passwd := string(readFile(t, filepath.Join(root, "etc/passwd")))
	group := string(readFile(t, filepath.Join(root, "etc/group")))
	if !strings.Contains(passwd, "\nnonroot:x:65532:65532:") || !strings.Contains(group, "\nnonroot:x:65532:") {
		t.Errorf("%s %s: /etc/passwd %q /etc/group %q do not name nonroot 65532", img.ref, img.arch, passwd, group)
	}
}

// checkChart: the chart with its default values deploys exactly the
// images built, as the user they are built to run as.
func checkChart(t *testing.T, helm string, byBinary map[string][]image) {
	out, err := exec.Command(helm, "template", "gpuadmit", abs(t, "charts/gpuadmit"), "--kube-version", "v1.37.0").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	found := 0
	for _, doc := range strings.Split(string(out), "\n---") {
		var o struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						SecurityContext struct{ RunAsUser, RunAsGroup *int64 } `json:"securityContext"`
						Containers      []struct{ Image string }               `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil || (o.Kind != "Deployment" && o.Kind != "DaemonSet") {
			continue
		}
		found++
		pod := o.Spec.Template.Spec
		bin := map[string]string{"Deployment": "/webhook", "DaemonSet": "/nvml-agent"}[o.Kind]
		img := byBinary[bin][0]
		if len(pod.Containers) == 0 || pod.Containers[0].Image != img.ref {
			t.Errorf("the chart's %s runs %+v, make images builds %s", o.Kind, pod.Containers, img.ref)
		}
		sc := pod.SecurityContext
		if sc.RunAsUser == nil || sc.RunAsGroup == nil || strconv.FormatInt(*sc.RunAsUser, 10)+":"+strconv.FormatInt(*sc.RunAsGroup, 10) != img.config.Config.User {
			t.Errorf("the chart's %s runs as %v:%v, the image as %s", o.Kind, sc.RunAsUser, sc.RunAsGroup, img.config.Config.User)
		}
	}
	if found != 2 {
		t.Errorf("the chart renders %d Deployments and DaemonSets, want the webhook's and the agent's", found)
	}
}

// appVersion is Chart.yaml's appVersion.
func appVersion(t *testing.T) string {
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?`).FindSubmatch(readFile(t, abs(t, "charts/gpuadmit/Chart.yaml")))
	if m == nil {
		t.Fatal("Chart.yaml: no appVersion")
	}
	return string(m[1])
}
