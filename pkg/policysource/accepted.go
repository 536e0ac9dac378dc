package policysource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/policy"
)

// AcceptedConfigMap is the ConfigMap of the webhook's namespace that holds
// the accepted policy set: the operator sources of the last set a replica
// activated from the cluster's sources. The chart creates it empty; the
// replicas fill it. A replica that starts while the cluster's set is
// rejected runs this set (compiled and tested like any other) rather than
// fewer rules than its peers.
const AcceptedConfigMap = "gpuadmit-policy-accepted"

// Keys of the accepted ConfigMap's data.
const (
	// AcceptedRevisionKey is the revision the writer activated (informational:
	// the built-in policies of another version give another revision).
	AcceptedRevisionKey = "revision"
	// AcceptedDigestKey is Snapshot.Digest of the sources.
	AcceptedDigestKey = "digest"
	// AcceptedSourcesKey holds the Snapshot as JSON.
	AcceptedSourcesKey = "sources.json"
)

// MaxAcceptedBytes bounds the encoded snapshot, under the API server's
// 1 MiB object limit.
const MaxAcceptedBytes = 900 << 10

// Snapshot is the operator sources of a policy set, as read once: what a
// replica activated, exactly.
type Snapshot struct {
	Sources []SnapshotSource `json:"sources"`
}

// SnapshotSource is one source's modules by path.
type SnapshotSource struct {
	Name    string            `json:"name"`
	Modules map[string]string `json:"modules"`
}

// Read reads every source once; a failure wraps policy.ErrRead.
func Read(ctx context.Context, sources []policy.Source) (Snapshot, error) {
	snap := Snapshot{Sources: make([]SnapshotSource, 0, len(sources))}
	for _, s := range sources {
		mods, err := s.Modules(ctx)
		if err != nil {
			return Snapshot{}, fmt.Errorf("%w: source %s: %w", policy.ErrRead, s.Name(), err)
		}
		snap.Sources = append(snap.Sources, SnapshotSource{Name: s.Name(), Modules: mods})
	}
	return snap, nil
}

// PolicySources are the snapshot's sources for policy.Engine.Load, each
// named prefix + its name.
func (s Snapshot) PolicySources(prefix string) []policy.Source {
	out := make([]policy.Source, 0, len(s.Sources))
	for _, src := range s.Sources {
		out = append(out, policy.Map(prefix+src.Name, src.Modules))
	}
	return out
}

// Digest identifies the snapshot's content (a SHA-256 of its JSON, whose
// map keys are sorted).
func (s Snapshot) Digest() string {
	b, _ := json.Marshal(s) // strings and maps of strings only
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Data is the accepted ConfigMap's data for the snapshot activated as
// revision; an error when it is too large to store.
func (s Snapshot) Data(revision string) (map[string]string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the accepted policy set: %w", err)
	}
	if len(b) > MaxAcceptedBytes {
		return nil, fmt.Errorf("the accepted policy set takes %d bytes, over the %d a ConfigMap can hold", len(b), MaxAcceptedBytes)
	}
	return map[string]string{AcceptedRevisionKey: revision, AcceptedDigestKey: s.Digest(), AcceptedSourcesKey: string(b)}, nil
}

// ErrNoAccepted says the accepted ConfigMap holds no set (created empty, or
// never written).
var ErrNoAccepted = errors.New("no accepted policy set is stored")

// Accepted decodes the accepted ConfigMap. Its content is only as trusted
// as a policy ConfigMap (administrators of the namespace can edit it): the
// caller compiles and tests it before activating it. A snapshot that does
// not decode strictly, or whose digest does not match, is an error.
func Accepted(cm *corev1.ConfigMap) (Snapshot, error) {
	raw, ok := cm.Data[AcceptedSourcesKey]
	if !ok {
		return Snapshot{}, ErrNoAccepted
	}
	var snap Snapshot
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&snap); err != nil {
		return Snapshot{}, fmt.Errorf("ConfigMap %s/%s: %s: %w", cm.Namespace, cm.Name, AcceptedSourcesKey, err)
	}
	if dec.More() {
		return Snapshot{}, fmt.Errorf("ConfigMap %s/%s: %s: data after the set", cm.Namespace, cm.Name, AcceptedSourcesKey)
	}
	for i, src := range snap.Sources {
		if src.Name == "" {
			return Snapshot{}, fmt.Errorf("ConfigMap %s/%s: %s: source %d has no name", cm.Namespace, cm.Name, AcceptedSourcesKey, i)
		}
		for p := range maps.Keys(src.Modules) {
			if !strings.HasSuffix(p, ".rego") {
				return Snapshot{}, fmt.Errorf("ConfigMap %s/%s: %s: source %s: %q is not a .rego module", cm.Namespace, cm.Name, AcceptedSourcesKey, src.Name, p)
			}
		}
	}
	if d := snap.Digest(); d != cm.Data[AcceptedDigestKey] {
		return Snapshot{}, fmt.Errorf("ConfigMap %s/%s: the sources' digest is %s, not the %q it records (edited by hand?)",
			cm.Namespace, cm.Name, d, cm.Data[AcceptedDigestKey])
	}
	return snap, nil
}
