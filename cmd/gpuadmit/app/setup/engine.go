package setup

import (
	"context"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/policy"
)

// LoadEngine loads the policies the webhook loads from the configuration's
// directory, then the command line's sources.
func LoadEngine(ctx context.Context, cfg *config.Configuration, sources []policy.Source) (*policy.Engine, error) {
	var dir []policy.Source
	if *cfg.Policy.Directory != "" {
		dir = append(dir, policy.Dir(*cfg.Policy.Directory))
	}
	return loadSources(ctx, cfg, append(dir, sources...))
}

// loadSources loads the built-in policies, then sources, as one set.
func loadSources(ctx context.Context, cfg *config.Configuration, sources []policy.Source) (*policy.Engine, error) {
	engine := policy.New(policy.Options{EvalTimeout: cfg.Admission.PolicyEvaluationTimeout.Duration})
	if err := engine.Load(ctx, sources...); err != nil {
		return nil, err
	}
	return engine, nil
}
