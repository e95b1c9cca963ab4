//go:build tools

// Package tools pins the Kubernetes v1.27 components: version N+1 of the control plane, which
// tests/real/components.sh builds and packs into the kubeadm sandbox's images, kubeadm (it upgrades
// and joins nodes after the move), and the kubelet a moved worker runs.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
