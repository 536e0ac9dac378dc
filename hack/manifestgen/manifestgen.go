package manifestgen

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Header starts every generated file; a file under manifests/ that starts
// with it and is no longer generated is stale.
const Header = "# Generated from charts/gpuadmit by `make manifests`: edit the chart, not this file.\n"

// Namespace is the namespace the kustomize base installs into.
const Namespace = "gpuadmit-system"

// Doc is one rendered object and the chart template it came from (relative
// to the chart's templates/).
type Doc struct {
	Template string
	YAML     string
}

// Render runs `helm template` on the chart with args and returns its
// documents in order.
func Render(ctx context.Context, helm, chart string, args ...string) ([]Doc, error) {
	cmd := exec.CommandContext(ctx, helm, append([]string{"template", "gpuadmit", chart, "--namespace", Namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s %s: %w: %s", chart, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return split(stdout.String())
}

// split cuts helm's output at its document separators; each document starts
// with helm's "# Source: gpuadmit/templates/..." line.
func split(out string) ([]Doc, error) {
	var docs []Doc
	for _, part := range strings.Split(out, "\n---\n") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "---\n")
		if part == "" {
			continue
		}
		first, rest, _ := strings.Cut(part, "\n")
		src, ok := strings.CutPrefix(first, "# Source: gpuadmit/templates/")
		if !ok {
			return nil, fmt.Errorf("a rendered document does not start with helm's Source line: %q", first)
		}
		if strings.TrimSpace(rest) == "" {
			continue
		}
		docs = append(docs, Doc{Template: src, YAML: strings.TrimSpace(rest) + "\n"})
	}
	return docs, nil
}

// Files renders the kustomize base: the default values (with the namespace
// object) into crd/, webhook/ and nvml-agent/, and the objects that differ
// in cert-manager mode into the component webhook/cert-manager/. Keys are
// paths relative to manifests/.
func Files(ctx context.Context, helm, chart string) (map[string][]byte, error) {
	base, err := Render(ctx, helm, chart, "--set", "createNamespace=true")
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	dirs := map[string][]string{}
	for _, d := range base {
		dir, name := place(d)
		if dir == "" {
			return nil, fmt.Errorf("template %s has no place in manifests/", d.Template)
		}
		file := path.Join(dir, name)
		if _, ok := out[file]; !ok {
			dirs[dir] = append(dirs[dir], name)
		}
		out[file] = append(out[file], docOf(out[file], d.YAML)...)
	}
	cm, err := Render(ctx, helm, chart, "--set", "certificates.mode=cert-manager")
	if err != nil {
		return nil, err
	}
	for _, d := range cm {
		name := ""
		switch {
		case d.Template == "webhook/certificate.yaml":
			name = "certificate.yaml"
		case d.Template == "webhook/deployment.yaml":
			name = "deployment-patch.yaml"
		case d.Template == "webhook/webhooks.yaml" && strings.Contains(d.YAML, "\nkind: MutatingWebhookConfiguration\n"):
			name = "mutatingwebhook-patch.yaml"
		case d.Template == "webhook/webhooks.yaml":
			name = "validatingwebhook-patch.yaml"
		default:
			continue
		}
		file := path.Join("webhook/cert-manager", name)
		out[file] = append(out[file], docOf(out[file], d.YAML)...)
	}
	out["webhook/cert-manager/secret-delete-patch.yaml"] = []byte(Header +
		"# cert-manager's Secret replaces the self-managed one.\n$patch: delete\napiVersion: v1\nkind: Secret\n" +
		"metadata:\n  name: gpuadmit-webhook-tls\n  namespace: " + Namespace + "\n")
	for dir, names := range dirs {
		out[path.Join(dir, "kustomization.yaml")] = kustomization(dir, names)
	}
	out["kustomization.yaml"] = []byte(Header + "# Everything gpuadmit runs: the CRDs, the admission webhook and the\n" +
		"# NVML node agent.\n#\n#   kubectl apply -k manifests/\n" +
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - crd\n  - webhook\n  - nvml-agent\n")
	out["webhook/cert-manager/kustomization.yaml"] = []byte(Header +
		"# Optional: certificates from cert-manager instead of the self-managed CA: a\n" +
		"# self-signed Issuer and a Certificate for the Service, mounted into the\n" +
		"# replicas (--cert-dir), with cert-manager's CA injector filling the caBundles.\n" +
		"# Add it to a kustomization that uses the webhook base:\n#\n#   components:\n#     - ../webhook/cert-manager\n" +
		"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - certificate.yaml\n" +
		"patches:\n  - path: deployment-patch.yaml\n  - path: mutatingwebhook-patch.yaml\n" +
		"  - path: validatingwebhook-patch.yaml\n  - path: secret-delete-patch.yaml\n")
	return out, nil
}

// docOf returns doc to append to a file holding have: with the header
// first, or a separator.
func docOf(have []byte, doc string) []byte {
	if len(have) == 0 {
		return []byte(Header + doc)
	}
	return []byte("---\n" + doc)
}

// place maps a rendered object to its directory and file under manifests/:
// each CRD to its own file, named as controller-gen names it.
func place(d Doc) (dir, name string) {
	switch template := d.Template; {
	case template == "crd.yaml":
		var crd struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d.YAML), &crd); err != nil || crd.Metadata.Name == "" {
			return "", ""
		}
		plural, group, _ := strings.Cut(crd.Metadata.Name, ".")
		return "crd", group + "_" + plural + ".yaml"
	case template == "namespace.yaml":
		return "webhook", "namespace.yaml"
	case strings.HasPrefix(template, "webhook/"):
		return "webhook", path.Base(template)
	case strings.HasPrefix(template, "agent/"):
		return "nvml-agent", path.Base(template)
	}
	return "", ""
}

func kustomization(dir string, names []string) []byte {
	var b strings.Builder
	b.WriteString(Header)
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if dir != "crd" {
		b.WriteString("namespace: " + Namespace + "\n")
	}
	b.WriteString("resources:\n")
	for _, n := range names {
		b.WriteString("  - " + n + "\n")
	}
	return []byte(b.String())
}

// Write writes files under dir and removes the generated files there that
// files no longer has; it returns the paths it changed.
func Write(dir string, files map[string][]byte) ([]string, error) {
	stale, err := Generated(dir)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, p := range stale {
		if _, ok := files[p]; !ok {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				return changed, err
			}
			changed = append(changed, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		full := filepath.Join(dir, p)
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return changed, err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return changed, err
		}
		changed = append(changed, p)
	}
	return changed, nil
}

// Generated lists the files under dir that start with Header.
func Generated(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		head := make([]byte, len(Header))
		if n, _ := f.Read(head); n == len(Header) && string(head) == Header {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}
