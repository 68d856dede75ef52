# Kubernetes test control plane binaries (kube-apiserver, kube-controller-manager,
# etcd) and helm, built from the Go module proxy into .cache/. Included by the
# top-level Makefile. The work is done by hack/k8s-bin/build.sh; see
# hack/k8s-bin/README.md.
#
# Exported for other targets and the processes they start:
#   K8S_VERSION, K8S_BIN_DIR, ETCD_BIN, KUBE_APISERVER_BIN,
#   KUBE_CONTROLLER_MANAGER_BIN, HELM_VERSION, HELM_BIN
# The test harness reads the same paths from .cache/k8s/current.env.

K8S_MK_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
K8S_BIN_SRC := $(K8S_MK_ROOT)/hack/k8s-bin

# K8S_VERSION and HELM_VERSION (plain KEY=value lines, shared with the scripts).
include $(K8S_BIN_SRC)/versions.env

K8S_BIN_DIR := $(K8S_MK_ROOT)/.cache/k8s/$(K8S_VERSION)/bin
KUBE_APISERVER_BIN := $(K8S_BIN_DIR)/kube-apiserver
KUBE_CONTROLLER_MANAGER_BIN := $(K8S_BIN_DIR)/kube-controller-manager
ETCD_BIN := $(K8S_BIN_DIR)/etcd
HELM_BIN := $(K8S_MK_ROOT)/.cache/helm/$(HELM_VERSION)/bin/helm
K8S_CURRENT_ENV := $(K8S_MK_ROOT)/.cache/k8s/current.env

export K8S_VERSION K8S_BIN_DIR ETCD_BIN KUBE_APISERVER_BIN KUBE_CONTROLLER_MANAGER_BIN HELM_VERSION HELM_BIN

.PHONY: k8s-bin k8s-bin-regen
# Build (once) and cache the binaries; a no-op when they are up to date.
k8s-bin:
	@bash $(K8S_BIN_SRC)/build.sh

# After changing K8S_VERSION in hack/k8s-bin/versions.env: regenerate go.mod/go.sum.
k8s-bin-regen:
	@bash $(K8S_BIN_SRC)/gen-replaces.sh

.PHONY: k8s-crds
# The enforcement points' CRDs for the k8s tiers (hack/crds/enforcement-points.ts), fetched once from the
# Go module proxy into .cache/crds/; a no-op when present.
k8s-crds: deps
	@node $(K8S_MK_ROOT)/hack/crds/fetch.ts
