package setup

import (
	"fmt"
	"io"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// LoadConfig reads the configuration file (every default when path is
// empty) exactly as the webhook does, and warns once on stderr about the
// keys it does not read and the families it reads but does not govern.
func LoadConfig(path string, stderr io.Writer) (*config.Configuration, error) {
	if path == "" {
		return config.Default(), nil
	}
	cfg, ignored, err := config.Load(path)
	if w := config.IgnoredWarning(ignored); w != "" {
		fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", path, w)
	}
	if err == nil {
		if w := config.SwitchedOffWarning(cfg); w != "" {
			fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", path, w)
		}
	}
	return cfg, err
}
