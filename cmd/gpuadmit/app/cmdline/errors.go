package cmdline

import (
	"fmt"
)

// exitCode ends a command with a code and no message (what it had to say
// is on stdout already).
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// usageError is a command line that does not say what to do: a flag or an
// argument that is unknown, missing or malformed.
type UsageError struct{ err error }

func (e UsageError) Error() string { return e.err.Error() }

func (e UsageError) Unwrap() error { return e.err }

func UsageErrorf(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}
