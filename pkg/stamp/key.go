package stamp

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

const (
	// KeySecret is the Secret of gpuadmit's namespace holding the key.
	KeySecret = "gpuadmit-stamp-key"
	// KeyField is the Secret's data field holding the key.
	KeyField = "key"
)

// LoadKey returns the stamp key from the Secret KeySecret of namespace ns,
// creating the Secret with a new random key when there is none (a replica
// that loses the race to create it reads the winner's). A Secret without
// a key of at least MinKeyBytes is an error naming it; the key itself is
// never in an error.
func LoadKey(ctx context.Context, secrets corev1client.SecretsGetter, ns string) ([]byte, error) {
	client := secrets.Secrets(ns)
	sec, err := client.Get(ctx, KeySecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sec, err = create(ctx, client, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the stamp key Secret %s/%s: %w", ns, KeySecret, err)
	}
	key := sec.Data[KeyField]
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the stamp key Secret %s/%s: data %q has %d bytes, fewer than %d (delete the Secret to have a new key made)",
			ns, KeySecret, KeyField, len(key), MinKeyBytes)
	}
	return append([]byte(nil), key...), nil
}

// create makes the Secret with a new key, or reads the one another replica
// created first.
func create(ctx context.Context, client corev1client.SecretInterface, ns string) (*corev1.Secret, error) {
	key := make([]byte, MinKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("making a key: %w", err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: KeySecret, Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/part-of": "gpuadmit"}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{KeyField: key}}
	made, err := client.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return client.Get(ctx, KeySecret, metav1.GetOptions{})
	}
	return made, err
}
