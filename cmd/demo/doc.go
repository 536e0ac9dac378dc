// Command demo plays the seed's four scenarios on a real, local control
// plane: kube-apiserver, etcd and kube-controller-manager built from source
// (bin/k8s-*), gpuadmit's webhook server (the wiring of cmd/webhook) and
// the kubectl built from source; then a fifth, on Deployments whose pods
// the real ReplicaSet controller creates: one refused as a whole, scaled
// within its quota, and `gpuadmit why` on a stalled one. It prints what
// each scenario showed and stops everything it started. `make demo`
// builds what it needs and runs it.
package main
