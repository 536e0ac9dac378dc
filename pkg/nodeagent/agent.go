package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// DeviceSource lists the GPU devices of this node.
type DeviceSource interface {
	Devices(ctx context.Context) ([]devices.Device, error)
}

// NodePatcher reads and writes one annotation of a Node.
type NodePatcher interface {
	// NodeAnnotation returns the value of annotation key on node, and
	// whether it is set.
	NodeAnnotation(ctx context.Context, node, key string) (value string, ok bool, err error)
	// PatchNodeAnnotation sets annotation key of node to value, leaving
	// everything else of the Node untouched.
	PatchNodeAnnotation(ctx context.Context, node, key, value string) error
}

// DefaultInterval is the refresh interval when Agent.Interval is not set.
const DefaultInterval = time.Minute

// minRetry is the first wait after a failed sync; it doubles up to Interval.
const minRetry = time.Second

// Agent writes the devices of Source onto the Node named NodeName.
type Agent struct {
	NodeName string
	Source   DeviceSource
	Nodes    NodePatcher
	// Interval between refreshes; DefaultInterval when zero.
	Interval time.Duration
	// Clock times the waits between syncs (nil: the wall clock).
	Clock clock.WithTicker
}

// Value is the annotation value for the devices Source lists now.
func (a *Agent) Value(ctx context.Context) (string, error) {
	devs, err := a.Source.Devices(ctx)
	if err != nil {
		return "", fmt.Errorf("discovering GPU devices: %w", err)
	}
	value, err := devices.EncodeNodeDevices(devs)
	if err != nil {
		return "", fmt.Errorf("encoding GPU devices: %w", err)
	}
	return value, nil
}

// Sync discovers the devices and, when the Node's annotation differs from
// them, patches it. It reports whether it patched.
func (a *Agent) Sync(ctx context.Context) (bool, error) {
	if a.NodeName == "" {
		return false, errors.New("node name is empty (set it from the downward API: spec.nodeName)")
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", a.NodeName)
	value, err := a.Value(ctx)
	if err != nil {
		return false, err
	}
	current, ok, err := a.Nodes.NodeAnnotation(ctx, a.NodeName, devices.NodeDevicesAnnotation)
	if err != nil {
		return false, fmt.Errorf("reading annotation %s of node %s: %w", devices.NodeDevicesAnnotation, a.NodeName, err)
	}
	if ok && current == value {
		log.V(1).Info("GPU devices unchanged")
		return false, nil
	}
	if err := a.Nodes.PatchNodeAnnotation(ctx, a.NodeName, devices.NodeDevicesAnnotation, value); err != nil {
		return false, fmt.Errorf("patching annotation %s of node %s: %w", devices.NodeDevicesAnnotation, a.NodeName, err)
	}
	log.Info("GPU devices written", "annotation", devices.NodeDevicesAnnotation, "value", value)
	return true, nil
}

// Run syncs now and then every Interval until ctx ends, and returns nil
// then. A failed sync is logged and retried sooner (1 s, doubling up to
// Interval): the Node may not be registered yet or the API server may be
// briefly unreachable.
func (a *Agent) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("node", a.NodeName)
	interval := a.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	retry := min(minRetry, interval)
	var clk clock.WithTicker = clock.RealClock{}
	if a.Clock != nil {
		clk = a.Clock
	}
	for {
		wait := interval
		_, err := a.Sync(ctx)
		switch {
		case err == nil:
			retry = min(minRetry, interval)
		case ctx.Err() == nil:
			log.Error(err, "GPU device sync failed", "retryIn", retry.String())
			wait = retry
			retry = min(2*retry, interval)
		}
		timer := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			log.Info("stopping GPU device sync", "reason", context.Cause(ctx).Error())
			return nil
		case <-timer.C():
		}
	}
}
