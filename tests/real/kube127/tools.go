//go:build tools

// Package tools pins the Kubernetes v1.27 components that tests/real/components.sh builds: version
// N+1 of the control plane (packed into the kubeadm sandbox's images), the kubelet and kubeadm.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
