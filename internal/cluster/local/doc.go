// Package local runs a Kubernetes control plane on this machine
// (kube-apiserver and etcd built from source, driven by controller-runtime's
// envtest) with gpuadmit's webhook server running in process through
// pkg/server, wired exactly as cmd/webhook wires it. The webhook
// configurations are manifests/webhook/webhooks.yaml with the Service
// reference replaced by the local server's URL. The API server serves the
// PodGroup API (scheduling.k8s.io/v1beta1). On request
// (Config.ControllerManager) the real kube-controller-manager, built from
// source too, runs the workload controllers, so that Deployments, Jobs and
// CronJobs create their pods through the webhooks. The integration suites
// and `make demo` use it, and play the scheduler and the kubelet (binding,
// container statuses) because neither runs here. ForTest and the functions
// beside it are what a suite's tests share (fortest.go).
package local
