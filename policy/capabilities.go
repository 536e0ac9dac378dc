package policy

import (
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// removed reports the side doors policies do not get: the network (http.send,
// net.*), the runtime's environment and configuration, the clock and
// randomness. An admission decision must depend on its input alone.
func removed(name string) bool {
	switch name {
	case "http.send", "opa.runtime", "time.now_ns", "rand.intn", "uuid.rfc4122":
		return true
	}
	return strings.HasPrefix(name, "net.")
}

// capabilities returns OPA's capabilities without the removed builtins and
// without any net.* builtin, and allows no network host.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool { return removed(b.Name) })
	c.AllowNet = []string{}
	return c
}
