package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// policySuite is a verify suite: tests, each loading some policies on top
// of the built-in ones and deciding its cases.
type policySuite struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Tests      []suiteTest `json:"tests"`
	// dir is the suite file's directory: paths in it are relative to it.
	dir string
}

type suiteTest struct {
	Name string `json:"name"`
	// Policies are Rego files or directories, added to (or, by file name,
	// replacing) the built-in policies, their tests run as the webhook runs
	// them.
	Policies []string `json:"policies"`
	// Config is a gpuadmit configuration file (default: the defaults).
	Config string `json:"config,omitempty"`
	// State is the cases' default cluster state ('kubectl get -o yaml' of
	// Namespaces, Nodes, ResourceQuotas and Pods).
	State string      `json:"state,omitempty"`
	Cases []suiteCase `json:"cases"`
}

type suiteCase struct {
	Name string `json:"name"`
	// Pod is an inline manifest; File a manifest file (exactly one).
	Pod  map[string]any `json:"pod,omitempty"`
	File string         `json:"file,omitempty"`
	// State replaces the test's state for this case.
	State string `json:"state,omitempty"`
	// Namespace is the request's namespace (default: the pod's).
	Namespace string `json:"namespace,omitempty"`
	// User is input.userInfo as written (no group is added).
	User   *suiteUser  `json:"user,omitempty"`
	Expect suiteExpect `json:"expect"`
}

type suiteUser struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

func (u *suiteUser) info() *decision.UserInfo {
	if u == nil {
		return &decision.UserInfo{}
	}
	return &decision.UserInfo{Username: u.Username, Groups: u.Groups}
}

// suiteExpect is what a case must get: allowed or not, and substrings each
// of which some denial (warning) contains.
type suiteExpect struct {
	Allowed  *bool    `json:"allowed"`
	Denials  []string `json:"denials,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// readSuite reads and checks a suite file: unknown fields, a wrong version,
// a case without a pod or an expectation are errors naming the test and
// case.
func readSuite(path string) (*policySuite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := cmdline.NotASuite(path, data); err != nil {
		return nil, err
	}
	s := &policySuite{dir: filepath.Dir(path)}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (s *policySuite) validate() error {
	if s.APIVersion != cmdline.SuiteAPIVersion || s.Kind != cmdline.SuiteKind {
		return fmt.Errorf("apiVersion %q, kind %q: want %s %s", s.APIVersion, s.Kind, cmdline.SuiteAPIVersion, cmdline.SuiteKind)
	}
	if len(s.Tests) == 0 {
		return errors.New("tests: none given")
	}
	names := map[string]bool{}
	for i, t := range s.Tests {
		where := fmt.Sprintf("tests[%d] (%s)", i, t.Name)
		if t.Name == "" || names[t.Name] {
			return fmt.Errorf("%s: name: empty or given twice", where)
		}
		names[t.Name] = true
		if err := t.validateCases(where); err != nil {
			return err
		}
	}
	return nil
}

// validateCases checks t's cases; where names t in the error.
func (t *suiteTest) validateCases(where string) error {
	if len(t.Cases) == 0 {
		return fmt.Errorf("%s: cases: none given", where)
	}
	caseNames := map[string]bool{}
	for j, c := range t.Cases {
		where := fmt.Sprintf("%s.cases[%d] (%s)", where, j, c.Name)
		switch {
		case c.Name == "" || caseNames[c.Name]:
			return fmt.Errorf("%s: name: empty or given twice in the test", where)
		case (c.Pod == nil) == (c.File == ""):
			return fmt.Errorf("%s: give exactly one of pod (inline) and file", where)
		case c.State == "" && t.State == "":
			return fmt.Errorf("%s: state: none for the case or its test", where)
		case c.Expect.Allowed == nil:
			return fmt.Errorf("%s: expect.allowed: required", where)
		case *c.Expect.Allowed && len(c.Expect.Denials) > 0:
			return fmt.Errorf("%s: expect: an allowed pod has no denials", where)
		}
		caseNames[c.Name] = true
	}
	return nil
}

// path resolves a path of the suite file.
func (s *policySuite) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.dir, p)
}
