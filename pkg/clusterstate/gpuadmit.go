package clusterstate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// The webhook's configuration in its namespace, as the chart installs it
// and the webhook's pod mounts it (--config=/etc/gpuadmit/config.yaml).
const (
	ConfigMapName = "gpuadmit-config"
	ConfigKey     = "config.yaml"
)

// Config returns the text of the webhook's configuration: key config.yaml
// of the ConfigMap gpuadmit-config in namespace. The API server's error
// is returned as it is (apierrors.IsNotFound: gpuadmit is not installed
// there; IsForbidden: the user may not read it); a ConfigMap without the
// key is an error, since the webhook would not start with it.
func Config(ctx context.Context, c kubernetes.Interface, namespace string) (string, error) {
	cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	text, ok := cm.Data[ConfigKey]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s/%s has no key %s", namespace, ConfigMapName, ConfigKey)
	}
	return text, nil
}

// PolicyConfigMaps lists the ConfigMaps of namespace that sel selects: the
// policy ConfigMaps the webhook loads (pkg/policysource). The API server's
// error is returned as it is.
func PolicyConfigMaps(ctx context.Context, c kubernetes.Interface, namespace string, sel labels.Selector) ([]*corev1.ConfigMap, error) {
	var out []*corev1.ConfigMap
	err := pages(ctx, func(opts metav1.ListOptions) (metav1.ListInterface, error) {
		opts.LabelSelector = sel.String()
		l, err := c.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return l, nil
	})
	return out, err
}
