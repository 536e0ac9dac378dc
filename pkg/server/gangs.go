package server

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuadmit/gpuadmit/pkg/gang"
)

// podGroups starts reading the PodGroups (pkg/gang) when the API server
// serves them (asked once, at start): a pod naming a PodGroup is refused
// where they are not read, which the log says and the gauge
// gpuadmit_podgroups_read (0) shows. It returns nil then.
func (s *Server) podGroups(kube kubernetes.Interface) (*gang.Groups, error) {
	read := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuadmit_podgroups_read",
		Help: "1 when this replica reads PodGroups (scheduling.k8s.io/v1beta1) for gangs; 0 when the API server did not serve them at start (pods naming a PodGroup are refused; the gang annotations still work)"})
	if err := s.opts.Registry.Register(read); err != nil {
		return nil, fmt.Errorf("registering gpuadmit_podgroups_read: %w", err)
	}
	served, err := gang.Served(kube.Discovery())
	if err != nil {
		return nil, err
	}
	if !served {
		s.opts.Log.Info("the API server does not serve " + gang.GroupVersion + " " + gang.Resource +
			": gangs are read from the annotations gpuadmit.io/gang and gpuadmit.io/gang-min-count only; a pod naming a PodGroup is refused (restart gpuadmit once the API is enabled)")
		return nil, nil
	}
	groups, err := gang.NewGroups(kube, s.opts.Clock.Now, 2*s.opts.Config.Admission.Gangs.HoldTimeout.Duration)
	if err != nil {
		return nil, err
	}
	read.Set(1)
	return groups, nil
}

// groupsRunnable runs the PodGroup informer.
func groupsRunnable(g *gang.Groups) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error { return g.Start(ctx) })
}
