//go:build tools

// Package tools pins the helm command so `go build helm.sh/helm/v3/cmd/helm` resolves inside this
// module.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
