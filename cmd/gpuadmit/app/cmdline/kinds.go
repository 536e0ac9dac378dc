package cmdline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// kindsIn are the kinds of the objects of a YAML or JSON stream (a List's
// items included), each once, in order; reading stops at the first
// document that is not an object.
func kindsIn(data []byte) []string {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 64*1024)
	var kinds []string
	add := func(k string) {
		if k != "" && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for {
		var h struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := dec.Decode(&h); err != nil {
			return kinds
		}
		add(h.Kind)
		for _, item := range h.Items {
			var ih struct {
				Kind string `json:"kind"`
			}
			if json.Unmarshal(item, &ih) == nil {
				add(ih.Kind)
			}
		}
	}
}

// NotASuite is the error of a suite file whose objects are of other
// kinds (nil when it names no kind or is a PolicySuite: the suite's own
// checks say what is wrong then).
func NotASuite(path string, data []byte) error {
	kinds := kindsIn(data)
	if len(kinds) == 0 || slices.Contains(kinds, SuiteKind) {
		return nil
	}
	return fmt.Errorf("%s is a %s manifest, not a policy suite (kind %s, apiVersion %s; docs/policy-verify.md)",
		path, strings.Join(kinds, ", "), SuiteKind, SuiteAPIVersion)
}

// IsSuite reports whether data holds a policy suite (an object of kind
// PolicySuite).
func IsSuite(data []byte) bool { return slices.Contains(kindsIn(data), SuiteKind) }

// KindsHint says, for manifests in which a command found nothing it
// reads, what they hold: that one is a policy suite (to run with policy
// verify), or the kinds they hold ("" when none could be read). stdin is
// what was read from standard input.
func KindsHint(files []string, stdin []byte) string {
	var kinds []string
	for _, f := range files {
		data := stdin
		if f != "-" {
			var err error
			if data, err = os.ReadFile(f); err != nil {
				continue
			}
		}
		fk := kindsIn(data)
		if slices.Contains(fk, SuiteKind) {
			return fmt.Sprintf("; %s is a policy suite (kind %s): run it with 'gpuadmit policy verify %s'", f, SuiteKind, f)
		}
		for _, k := range fk {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return ""
	}
	return "; they hold only " + strings.Join(kinds, ", ")
}

// TeeStdin returns the reader to read standard input from and the buffer
// that keeps what it read, when one of files is "-" (stdin as it is
// otherwise).
func TeeStdin(files []string, stdin io.Reader) (io.Reader, *bytes.Buffer) {
	var seen bytes.Buffer
	if !slices.Contains(files, "-") || stdin == nil {
		return stdin, &seen
	}
	return io.TeeReader(stdin, &seen), &seen
}

// Suite file version: `gpuadmit policy verify` reads gpuadmit.io/v1alpha1
// PolicySuite files (docs/policy-verify.md).
const (
	SuiteAPIVersion = "gpuadmit.io/v1alpha1"
	SuiteKind       = "PolicySuite"
)
