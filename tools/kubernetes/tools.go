//go:build tools

// Package tools pins the Kubernetes servers the lab and the tests run, so `go build
// k8s.io/kubernetes/cmd/<name>` resolves inside this module at one release.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
