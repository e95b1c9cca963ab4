//go:build tools

// Package tools pins the AWS cloud-controller-manager that tests/real/components.sh builds.
package tools

import _ "k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager"
