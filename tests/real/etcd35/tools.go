//go:build tools

// Package tools pins the etcd that tests/real/components.sh builds for the kubeadm sandbox: the
// version kubeadm v1.26.13 pins (registry.k8s.io/etcd:3.5.10-0).
package tools

import _ "go.etcd.io/etcd/server/v3"
