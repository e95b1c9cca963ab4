//go:build tools

// Package tools pins the Kubernetes v1.27 components: version N+1 of the control plane, which
// tests/real/components.sh builds and packs into the kubeadm sandbox's images, and the kubelet and
// kubeadm, pinned for the runs that will join a node at 1.27 (not built until then).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
