package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// installWebhooks creates the webhook configurations of the manifest with
// each Service reference replaced by https://127.0.0.1:Port/<path>.
func (c *Cluster) installWebhooks(ctx context.Context) error {
	data, err := os.ReadFile(c.manifest)
	if err != nil {
		return fmt.Errorf("reading the webhook configurations: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var meta metav1.TypeMeta
		raw := map[string]any{}
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", c.manifest, err)
		}
		doc, err := jsonOf(raw)
		if err != nil {
			return err
		}
		if err := jsonInto(doc, &meta); err != nil {
			return err
		}
		adm := c.Kube.AdmissionregistrationV1()
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if err := jsonInto(doc, &m); err != nil {
				return err
			}
			for i := range m.Webhooks {
				c.local(&m.Webhooks[i].ClientConfig)
			}
			if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &m, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating mutatingwebhookconfiguration %s: %w", m.Name, err)
			}
		case "ValidatingWebhookConfiguration":
			var v admissionregistrationv1.ValidatingWebhookConfiguration
			if err := jsonInto(doc, &v); err != nil {
				return err
			}
			for i := range v.Webhooks {
				c.local(&v.Webhooks[i].ClientConfig)
			}
			if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, &v, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating validatingwebhookconfiguration %s: %w", v.Name, err)
			}
		}
	}
}

func (c *Cluster) local(cc *admissionregistrationv1.WebhookClientConfig) {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", c.Port, path)
	cc.Service, cc.URL = nil, &url
}

// SetCABundle sets the caBundle of every webhook of the installed
// configurations (certificates managed outside the server, --cert-dir).
func (c *Cluster) SetCABundle(ctx context.Context, ca []byte) error {
	adm := c.Kube.AdmissionregistrationV1()
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i := range m.Webhooks {
		m.Webhooks[i].ClientConfig.CABundle = ca
	}
	if _, err := adm.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		return err
	}
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, "gpuadmit", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig.CABundle = ca
	}
	_, err = adm.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{})
	return err
}
