package source

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
)

// DryRunWorkload asks the API server to create a built-in workload
// (apps/v1 Deployment, ReplicaSet, StatefulSet; batch/v1 Job, CronJob),
// raw as its manifest wrote it, with dryRun=All in namespace ns, under a
// name generated from its own, as the user of the kubeconfig: the
// workloads webhook's verdict on it as a whole. An error for another kind,
// when the user may not create it there, or when no verdict came back.
func (l live) DryRunWorkload(ctx context.Context, apiVersion, kind, ns string, raw []byte) (Verdict, error) {
	var v Verdict
	body, err := dryRunBody(raw, ns)
	if err != nil {
		return v, err
	}
	kc, err := l.warningClient(&v)
	if err != nil {
		return v, err
	}
	var rc rest.Interface
	switch apiVersion {
	case "apps/v1":
		rc = kc.AppsV1().RESTClient()
	case "batch/v1":
		rc = kc.BatchV1().RESTClient()
	default:
		return v, fmt.Errorf("a server dry run of %s %s is not made: only the built-in workloads are", apiVersion, kind)
	}
	resource := strings.ToLower(kind) + "s"
	err = rc.Post().Namespace(ns).Resource(resource).Param("dryRun", "All").SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx).Error()
	if err == nil {
		v.Allowed = true
		return v, nil
	}
	return v, refusal(&v, resource, ns, err)
}

// dryRunBody is the object of raw in namespace ns under a name generated
// from its own (a workload of that name may exist), without what the
// API server set on an object read from it.
func dryRunBody(raw []byte, ns string) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("the workload: %w", err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	name, _ := meta["name"].(string)
	for _, k := range []string{"name", "uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
		delete(meta, k)
	}
	meta["namespace"], meta["generateName"] = ns, cmpOr(name, "gpuadmit-eval")+"-"
	obj["metadata"] = meta
	delete(obj, "status")
	return json.Marshal(obj)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
