package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// hamiReadTimeout bounds the read of HAMi's device config at start-up.
const hamiReadTimeout = 30 * time.Second

// readHAMiConfigMap reads HAMi's device config from the ConfigMap that the
// configuration's devices.hamiConfigMap names (a plain name: in namespace),
// with the webhook's own client, once, when the webhook starts. The webhook
// does not start without it: the error (naming the ConfigMap) ends the
// process, and the chart's container keeps it as its termination message,
// in the pod's status.
func readHAMiConfigMap(ctx context.Context, cfg *config.Configuration, namespace string, restCfg *rest.Config, log logr.Logger) error {
	ns, name, ok := config.HAMiConfigMapRef(cfg, namespace)
	if !ok {
		return nil
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, hamiReadTimeout)
	defer cancel()
	ignored, err := config.ReadHAMiConfigMap(ctx, cfg, namespace, func(ctx context.Context, ns, name string) (map[string]string, error) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	})
	if err != nil {
		return err
	}
	if w := config.IgnoredWarning(ignored); w != "" {
		log.Info(w, "configMap", ns+"/"+name)
	}
	if w := config.SwitchedOffWarning(cfg); w != "" {
		log.Info(w, "configMap", ns+"/"+name)
	}
	log.Info("read HAMi's device config", "configMap", ns+"/"+name)
	return nil
}
