package readme_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
)

// minKubeVersion is the Kubernetes version helm template renders for: helm
// built from its Go module has none stamped in (tests/chart does the same).
const minKubeVersion = "v1.34.0"

// docCommand is one command of a doc's console or indented code block and
// the lines the doc shows after it.
type docCommand struct {
	doc, command string
	want         []string
}

// offlineMinimum is, per doc, how many of its commands must run offline: a
// doc whose commands were all taken for live or placeholder ones (or whose
// blocks the parser no longer finds) fails instead of passing with nothing
// run.
var offlineMinimum = map[string]int{
	"README.md":             1,
	"docs/tour.md":          10,
	"docs/policy-verify.md": 1,
	"docs/webhook.md":       1,
	"docs/nodeagent.md":     1,
	"docs/policies.md":      0,
}

// TestDocCommands runs every command of the docs that needs no cluster
// (the command line on the repository's examples, helm template, the node
// agent on NVML's mock) from the repository's root, as written, and checks
// that it succeeds and prints what the doc shows after it (whitespace
// aside, "..." standing for anything). A command that ends in
// `; echo "exit $?"` (or is followed by `$ echo $?`) shows its exit status
// among its output; any other must exit 0.
func TestDocCommands(t *testing.T) {
	gpuadmit := filepath.Join(t.TempDir(), "gpuadmit")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", gpuadmit, "../../cmd/gpuadmit").CombinedOutput(); err != nil {
		t.Fatalf("building gpuadmit: %v\n%s", err, out)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("docs/tour.md examples table", func(t *testing.T) { tourExamples(t, root, gpuadmit) })
	for doc, minimum := range offlineMinimum {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		for _, c := range docCommands(doc, string(raw)) {
			if why := liveOrPlaceholder(root, c.command); why != "" {
				t.Logf("%s: not run (%s): %s", doc, why, c.command)
				continue
			}
			ran++
			t.Run(doc+"/"+c.command, func(t *testing.T) { runDocCommand(t, root, gpuadmit, c) })
		}
		if ran < minimum {
			t.Errorf("%s: %d of its commands run offline, want at least %d", doc, ran, minimum)
		}
	}
}

var exampleRow = regexp.MustCompile("(?m)^\\| `([\\w.-]+\\.yaml)` \\| (\\d+|unresolved|exit 2) \\| (.*) \\|$")

// tourExamples checks docs/tour.md's table of examples/pods: each file's
// effective gpumem as the table gives it (unresolved: the memory is a
// percentage of an unknown device; exit 2: an invalid request, with the
// message the table quotes).
func tourExamples(t *testing.T, root, gpuadmit string) {
	raw, err := os.ReadFile(filepath.Join(root, "docs/tour.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := exampleRow.FindAllStringSubmatch(string(raw), -1)
	if len(rows) < 5 {
		t.Fatalf("docs/tour.md's examples table has %d rows, want at least 5", len(rows))
	}
	for _, r := range rows {
		cmd := exec.CommandContext(t.Context(), gpuadmit, "effective", "-o", "json", "-f", filepath.Join("examples/pods", r[1]))
		cmd.Dir = root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if r[2] == "exit 2" {
			quoted := regexp.MustCompile("`([^`]+); \\.\\.\\.`").FindStringSubmatch(r[3])
			if code := exitCode(err); code != 2 || quoted == nil || !strings.Contains(stderr.String(), quoted[1]) {
				t.Errorf("docs/tour.md: %s: exit %d, stderr %q; the table says exit 2 with %q", r[1], code, stderr.String(), r[3])
			}
			continue
		}
		var out struct {
			Effective  struct{ Gpumem int64 }
			Unresolved []string
		}
		if err != nil || json.Unmarshal(stdout.Bytes(), &out) != nil {
			t.Errorf("docs/tour.md: %s: %v\n%s%s", r[1], err, stdout.String(), stderr.String())
			continue
		}
		got := strconv.FormatInt(out.Effective.Gpumem, 10)
		if len(out.Unresolved) > 0 {
			got = "unresolved"
		}
		if got != r[2] {
			t.Errorf("docs/tour.md: %s's effective gpumem is %s, the table says %s", r[1], got, r[2])
		}
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func runDocCommand(t *testing.T, root, gpuadmit string, c docCommand) {
	cmd := c.command
	env := os.Environ()
	if strings.HasPrefix(cmd, "helm ") {
		dir := t.TempDir()
		script := "#!/bin/sh\nexec '" + filepath.Join(envtestgate.Assets(t), "helm") + "' \"$@\" --kube-version " + minKubeVersion + "\n"
		if err := os.WriteFile(filepath.Join(dir, "helm"), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd = strings.ReplaceAll(cmd, "bin/gpuadmit ", gpuadmit+" ")
	sh := exec.CommandContext(t.Context(), "sh", "-c", cmd)
	sh.Dir, sh.Env = root, env
	var stdout, stderr bytes.Buffer
	sh.Stdout, sh.Stderr = &stdout, &stderr
	if err := sh.Run(); err != nil {
		t.Fatalf("%s: $ %s\nfailed: %v\n%s%s", c.doc, c.command, err, stdout.String(), stderr.String())
	}
	if got := stdout.String() + "\n" + stderr.String(); !showsLoosely(got, c.want) {
		t.Errorf("%s: $ %s\nshows\n%s\nit printed\n%s", c.doc, c.command, strings.Join(c.want, "\n"), got)
	}
}

var (
	fenced   = regexp.MustCompile("(?s)```(console|sh|bash)\n(.*?)```")
	indented = regexp.MustCompile(`(?m)^    ((?:bin/gpuadmit|helm|kubectl|make|go) .*)$`)
)

// docCommands returns the commands of doc's console blocks ("$ " lines,
// continued by a trailing backslash) and of its indented code lines.
func docCommands(doc, text string) []docCommand {
	var out []docCommand
	for _, m := range fenced.FindAllStringSubmatch(text, -1) {
		lines := strings.Split(strings.TrimRight(m[2], "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			cmd, ok := strings.CutPrefix(lines[i], "$ ")
			if !ok {
				if n := len(out); n > 0 && m[1] == "console" {
					out[n-1].want = append(out[n-1].want, lines[i])
				}
				continue
			}
			for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
			}
			cmd = stripComment(cmd)
			if n := len(out); cmd == "echo $?" && n > 0 { // the status of the command before
				out[n-1].command += "; echo $?"
				continue
			}
			out = append(out, docCommand{doc: doc, command: cmd})
		}
	}
	for _, m := range indented.FindAllStringSubmatch(text, -1) {
		out = append(out, docCommand{doc: doc, command: stripComment(m[1])})
	}
	return out
}

// stripComment drops a trailing "  # comment".
func stripComment(cmd string) string {
	if i := strings.Index(cmd, "  #"); i >= 0 {
		cmd = cmd[:i]
	}
	return strings.TrimSpace(cmd)
}

// liveOrPlaceholder says why a command cannot run here ("" when it can):
// it needs a cluster, a GPU or a build step, or it names a file that is a
// placeholder (pod.yaml, DIR).
func liveOrPlaceholder(root, cmd string) string {
	f := strings.Fields(cmd)
	switch {
	case f[0] == "kubectl" || f[0] == "make" || (f[0] == "helm" && f[1] != "template"):
		return "needs a cluster or builds"
	case f[0] == "go" && !strings.Contains(cmd, "mock:"):
		return "needs a GPU"
	case f[0] == "bin/gpuadmit" && f[1] != "effective" && f[1] != "policy" && !strings.Contains(cmd, "--state"):
		return "reads the live cluster"
	}
	for _, arg := range f[1:] {
		if arg == "DIR" || ((strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml")) && !exists(filepath.Join(root, arg))) {
			return "placeholder " + arg
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// showsLoosely reports whether got holds the text of want in order, with
// every blank left out on both sides (JSON printed indented or on one line,
// table columns aligned or not) and "..." in want standing for anything.
func showsLoosely(got string, want []string) bool {
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	g := squeeze(got)
	for _, part := range strings.Split(strings.Join(want, "\n"), "...") {
		p := squeeze(part)
		i := strings.Index(g, p)
		if i < 0 {
			return false
		}
		g = g[i+len(p):]
	}
	return true
}
