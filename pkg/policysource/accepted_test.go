package policysource_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

func accepted(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policysource.AcceptedConfigMap, Namespace: "gpuadmit-system"}, Data: data}
}

// TestAcceptedRoundTrip: what a replica stores is what a starting replica
// reads back, source names and modules (only .rego keys) included.
func TestAcceptedRoundTrip(t *testing.T) {
	cm := configMap("team", "deny.rego", "deny_test.rego", "README")
	snap, err := policysource.Read(context.Background(), policysource.Sources("", []*corev1.ConfigMap{cm}))
	if err != nil {
		t.Fatal(err)
	}
	data, err := snap.Data("rev")
	if err != nil {
		t.Fatal(err)
	}
	got, err := policysource.Accepted(accepted(data))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != snap.Digest() || len(got.Sources) != 1 || got.Sources[0].Name != "configmap gpuadmit-system/team" ||
		len(got.Sources[0].Modules) != 2 || data[policysource.AcceptedRevisionKey] != "rev" {
		t.Errorf("read back %+v from %+v", got, data)
	}
	if names := got.PolicySources("accepted "); len(names) != 1 || names[0].Name() != "accepted configmap gpuadmit-system/team" {
		t.Errorf("sources %v", names)
	}
}

func TestAcceptedRefusesWhatItCannotTrust(t *testing.T) {
	good, err := policysource.Snapshot{Sources: []policysource.SnapshotSource{{Name: "s", Modules: map[string]string{"a.rego": "package x\n"}}}}.Data("r")
	if err != nil {
		t.Fatal(err)
	}
	with := func(k, v string) map[string]string {
		d := map[string]string{}
		for key, val := range good {
			d[key] = val
		}
		d[k] = v
		return d
	}
	tests := []struct {
		name string
		data map[string]string
		want string
	}{
		{name: "empty, as the chart creates it", data: nil, want: policysource.ErrNoAccepted.Error()},
		{name: "digest edited", data: with(policysource.AcceptedDigestKey, "x"), want: "(edited by hand?)"},
		{name: "a key that is no module", data: with(policysource.AcceptedSourcesKey, `{"sources":[{"name":"s","modules":{"a.sh":""}}]}`), want: `"a.sh" is not a .rego module`},
		{name: "a source without a name", data: with(policysource.AcceptedSourcesKey, `{"sources":[{"modules":{}}]}`), want: "source 0 has no name"},
		{name: "trailing data", data: with(policysource.AcceptedSourcesKey, `{"sources":[]} {}`), want: "data after the set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policysource.Accepted(accepted(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Accepted = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestAcceptedTooLarge(t *testing.T) {
	big := strings.Repeat("#", policysource.MaxAcceptedBytes)
	_, err := policysource.Snapshot{Sources: []policysource.SnapshotSource{{Name: "s", Modules: map[string]string{"a.rego": big}}}}.Data("r")
	if err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("Data = %v, want a size error", err)
	}
}

func TestReadFailureIsAReadError(t *testing.T) {
	_, err := policysource.Read(context.Background(), []policy.Source{policy.Dir("/nonexistent/policies")})
	if !errors.Is(err, policy.ErrRead) {
		t.Errorf("Read = %v, want policy.ErrRead", err)
	}
}
