// Command demo plays the seed's four scenarios on a real, local control
// plane: kube-apiserver and etcd built from source (bin/k8s-*), gpuadmit's
// webhook server (the wiring of cmd/webhook) and the kubectl built from
// source. It prints one line per scenario and stops everything it started.
// `make demo` builds what it needs and runs it.
package main
