package version

import (
	"testing"
)

func TestWithVCSNoStamp(t *testing.T) {
	if got := withVCS(versionInfo{}, nil); got.Commit != "" || got.BuildDate != "" {
		t.Errorf("no VCS stamp: %+v", got)
	}
}
