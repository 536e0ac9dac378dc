package cmdline

import (
	"fmt"
)

// ExitCode ends a command with a code and no message (what it had to say
// is on stdout already).
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// UsageError is a command line that does not say what to do: a flag or an
// argument that is unknown, missing or malformed.
type UsageError struct{ err error }

func (e UsageError) Error() string { return e.err.Error() }

func (e UsageError) Unwrap() error { return e.err }

// UsageErrorf is a UsageError with a formatted message.
func UsageErrorf(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}
