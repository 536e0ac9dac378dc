package source

import (
	"encoding/json"
	"testing"
)

// TestDryRunBody: a workload is dry-run in the namespace decided in, under
// a name generated from its own (one of that name may exist), without
// what the API server set on an object read from it.
func TestDryRunBody(t *testing.T) {
	raw := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"train","namespace":"other","uid":"u","resourceVersion":"7",
		"labels":{"a":"b"}},"spec":{"replicas":4},"status":{"replicas":4}}`)
	body, err := dryRunBody(raw, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata map[string]any `json:"metadata"`
		Spec     map[string]any `json:"spec"`
		Status   any            `json:"status"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	m := got.Metadata
	if m["name"] != nil || m["uid"] != nil || m["resourceVersion"] != nil || m["generateName"] != "train-" || m["namespace"] != "team-a" ||
		m["labels"] == nil || got.Status != nil || got.Spec["replicas"] != float64(4) {
		t.Fatalf("body %s", body)
	}
	if _, err := dryRunBody([]byte(`[1]`), "team-a"); err == nil {
		t.Fatal("a list was dry-run as a workload")
	}
}
