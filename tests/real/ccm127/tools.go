//go:build tools

// Package tools pins the AWS cloud-controller-manager and the ECR credential provider that
// tests/real/components.sh builds.
package tools

import (
	_ "k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager"
	_ "k8s.io/cloud-provider-aws/cmd/ecr-credential-provider"
)
