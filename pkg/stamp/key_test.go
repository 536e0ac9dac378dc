package stamp

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestLoadKeyCreatesOnceAndRereads(t *testing.T) {
	kube := fake.NewClientset()
	ctx := context.Background()
	first, err := LoadKey(ctx, kube.CoreV1(), "gpuadmit-system")
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != MinKeyBytes {
		t.Fatalf("key of %d bytes", len(first))
	}
	second, err := LoadKey(ctx, kube.CoreV1(), "gpuadmit-system")
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Error("a second replica got another key")
	}
}

// TestLoadKeyLosesTheRace: a replica whose create finds the Secret made by
// another meanwhile uses the other's key.
func TestLoadKeyLosesTheRace(t *testing.T) {
	winner := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: KeySecret, Namespace: "ns"},
		Data: map[string][]byte{KeyField: testKey(9)}}
	kube := fake.NewClientset()
	gets := 0
	kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets == 1 {
			return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), KeySecret)
		}
		return true, winner, nil
	})
	kube.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), KeySecret)
	})
	key, err := LoadKey(context.Background(), kube.CoreV1(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	if string(key) != string(testKey(9)) {
		t.Error("the loser kept its own key")
	}
}

// TestLoadKeyRefusesAShortKey: a Secret written by hand with a short key
// is refused with an error naming it, not the key.
func TestLoadKeyRefusesAShortKey(t *testing.T) {
	kube := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: KeySecret, Namespace: "ns"},
		Data: map[string][]byte{KeyField: []byte("hunter2")}})
	_, err := LoadKey(context.Background(), kube.CoreV1(), "ns")
	if err == nil {
		t.Fatal("a 7-byte key was accepted")
	}
	if !strings.Contains(err.Error(), KeySecret) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q should name the Secret and not the key", err)
	}
}
