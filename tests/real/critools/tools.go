//go:build tools

// Package tools pins the crictl that tests/real/components.sh builds for the kubeadm sandbox
// (kubeadm runs it for its preflight, images and reset).
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
