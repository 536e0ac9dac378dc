// Package security_test attacks gpuadmit's webhook as a client on the
// network would, on a real kube-apiserver and etcd (internal/cluster/local)
// with the server wired by pkg/server as cmd/webhook wires it: forged
// AdmissionReviews posted straight to the webhook port (with and without
// client authentication), the forwarding header without the replicas'
// certificate, floods of forged reviews, slow clients, creates that fail
// after admission, and /metrics without a token. Every test asserts what
// the quota must keep (nothing reserved for a forged review that the
// server refused, genuine pods admitted, bounded memory and object size),
// never only that a request was answered.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package security_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

type ledgerView = ledger.NamespaceSnapshot

// authUser is who a forged review claims sent the pod.
func authUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
		Groups: []string{"system:serviceaccounts", "system:authenticated"}}
}

const manifests = "../../manifests/webhook"

// forgedReview is a validating AdmissionReview for the CREATE of a pod
// that does not exist: what any client reaching the port can post.
func forgedReview(ns, name, uid string, mem int64) []byte {
	pod := creates.GPUPod(ns, name, "", mem)
	pod.UID = types.UID(uid)
	raw, _ := json.Marshal(pod)
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("review-" + uid), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: ns, Name: name, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
			UserInfo: authUser()}}
	b, _ := json.Marshal(review)
	return b
}

// attacker is an HTTP client that trusts any server and presents cert
// (nil: none), from the loopback address from ("" for any).
func attacker(cert *tls.Certificate, from string) *http.Client {
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // an attacker does not check
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// post sends a review to the webhook's validating path.
func post(ctx context.Context, cl *http.Client, c *local.Cluster, body []byte, header map[string]string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("https://127.0.0.1:%d%s", c.Port, server.ValidatePath), bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// reviewAllowed reads the verdict of a review's answer.
func reviewAllowed(body string) (bool, string) {
	var r admissionv1.AdmissionReview
	if json.Unmarshal([]byte(body), &r) != nil || r.Response == nil {
		return false, body
	}
	msg := ""
	if r.Response.Result != nil {
		msg = r.Response.Result.Message
	}
	return r.Response.Allowed, msg
}

// usage reads the namespace's GPUReservationSet (its reservations; nil
// when there is none) and the size of its JSON.
func usage(ctx context.Context, t *testing.T, c *local.Cluster, ns string) (*gpuadmitv1.GPUReservationSet, int) {
	t.Helper()
	u, size, err := readUsage(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	return u, size
}

func readUsage(ctx context.Context, c *local.Cluster, ns string) (*gpuadmitv1.GPUReservationSet, int, error) {
	u, err := c.ReservationSet(ctx, ns)
	if err != nil || u == nil {
		return nil, 0, err
	}
	b, err := json.Marshal(u)
	return u, len(b), err
}

func reserved(u *gpuadmitv1.GPUReservationSet, uid string) bool {
	if u == nil {
		return false
	}
	for _, r := range u.Status.Reservations {
		if string(r.PodUID) == uid {
			return true
		}
	}
	return false
}

// seed creates ns with a gpumem limit of mem MiB and the 24 GiB node.
func seed(t *testing.T, c *local.Cluster, ns string, mem int64) {
	t.Helper()
	if mem >= 1e9 {
		// A memory limit of 10^9 or more is read as bytes (pkg/quotacheck): 1<<30 would be 1024 MiB.
		t.Fatalf("seed %s: a limit of %d MiB would be read as bytes; write one under 10^9 MiB", ns, mem)
	}
	if err := c.Seed(t.Context(), ns, fmt.Sprint(mem)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLedger(t.Context(), ns, func(s ledgerView) bool { return s.Limits["nvidia"].MemMiB != nil && s.LabelsKnown }); err != nil {
		t.Fatal(err)
	}
}

func createPod(ctx context.Context, c *local.Cluster, p *corev1.Pod) error {
	_, err := c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	return err
}
