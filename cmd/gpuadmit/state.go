package main

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/cache"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// loadState reads a cluster dump ('kubectl get -o yaml' of Pods, Nodes and
// ResourceQuotas) and builds the usage ledger from it: nodes first (their
// devices resolve memory percentages), then quotas, then pods.
func loadState(path string, stdin io.Reader, s effective.Settings, log logr.Logger) (*cache.Ledger, error) {
	objs, err := manifest.ReadFile(path, stdin)
	if err != nil {
		return nil, err
	}
	if len(objs.Pods)+len(objs.Nodes)+len(objs.Quotas) == 0 {
		return nil, fmt.Errorf("%s: no Pod, Node or ResourceQuota found (%d other objects)", path, objs.Skipped)
	}
	l := cache.New(cache.Options{Settings: s, Log: log})
	for _, n := range objs.Nodes {
		l.UpsertNode(n)
	}
	for _, q := range objs.Quotas {
		l.UpsertQuota(q)
	}
	for _, p := range objs.Pods {
		l.UpsertPod(p)
	}
	return l, nil
}
