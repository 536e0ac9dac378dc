package local

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/certs"
)

// APIServerCommonName is the common name of the client certificate the
// API server presents to the webhook (Config.APIServerClientCert).
const APIServerCommonName = "kube-apiserver"

// presentClientCert makes the API server present a client certificate to
// the webhooks at 127.0.0.1:Port, as an administrator sets a cluster up for
// gpuadmit's client authentication: a CA (ClientCA, its certificate in
// ClientCAFile for the webhook's --client-ca-file), a certificate it signs
// for the API server, a kubeconfig naming the webhook's host and port, and
// an AdmissionConfiguration giving that kubeconfig to both webhook
// admission plugins.
func (c *Cluster) presentClientCert() error {
	ca, err := certs.Generate([]string{"gpuadmit-client-ca"}, nil, time.Now(), 24*time.Hour, 24*time.Hour)
	if err != nil {
		return err
	}
	cert, key, err := ca.ClientCertificate(APIServerCommonName, time.Now(), 24*time.Hour)
	if err != nil {
		return err
	}
	c.ClientCA, c.ClientCAFile = ca, filepath.Join(c.dir, "client-ca.crt")
	kubeconfig := filepath.Join(c.dir, "admission-kubeconfig")
	admission := filepath.Join(c.dir, "admission-configuration.yaml")
	enc := base64.StdEncoding.EncodeToString
	files := map[string]string{
		c.ClientCAFile: string(ca.CACert),
		kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: "127.0.0.1:%d"
  user:
    client-certificate-data: %s
    client-key-data: %s
`, c.Port, enc(cert), enc(key)),
		admission: fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`, kubeconfig),
	}
	for path, data := range files {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	c.env.ControlPlane.APIServer.Configure().Set("admission-control-config-file", admission)
	return nil
}
