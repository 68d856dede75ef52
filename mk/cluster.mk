# The cluster tier: a single-node Kubernetes cluster on the local host (kubelet, containerd, kube-proxy,
# kube-router, CoreDNS) running the chart with the image built from the Dockerfile; and, for people, that
# cluster or the k8s tier's control plane alone. Included by the top-level Makefile; see docs/testing.md
# "The real cluster".

CLUSTER_STATE_DIR := .cache/cluster/run
DEV_CLUSTER_DIR := .cache/dev-cluster

.PHONY: cluster-deps cluster-bin cluster-images test-cluster cluster cluster-down dev-cluster dev-cluster-down bench-attack-to-block

cluster-deps: ## Debian packages of the cluster tier (containerd, runc, CNI plugins, iptables, ipset, nftables, buildah, ...)
	@.ci/system-deps --cluster

cluster-bin: k8s-bin ## build kube-scheduler, kubelet, kube-proxy, kube-router, CoreDNS and CloudNativePG's operator into .cache/ (once)
	@bash $(K8S_BIN_SRC)/build.sh --cluster

cluster-images: cluster-deps cluster-bin ## build the blockfeed image from the Dockerfile (and database, CloudNativePG, busybox, pause images) with buildah
	@bash hack/images/build.sh

test-cluster: deps cluster-deps k8s-crds cluster-bin cluster-images ## cluster tier: the chart on a real node, packets from listed addresses refused (root)
	npx vitest run --project cluster

bench-attack-to-block: deps cluster-deps k8s-crds cluster-bin cluster-images ## benchmark: on the cluster tier's node, attackers' time from a failed login on Cowrie to a refused connection, by stage (ATTACKERS=n MIN_INTERVAL=s; root)
	node bench/attack-to-block.ts --attackers $${ATTACKERS:-5} $${MIN_INTERVAL:+--min-interval $$MIN_INTERVAL}

# $(call start-for-people,STATE DIR,ARGUMENTS,WHAT,STOP TARGET): `node test/support/dev-cluster.ts ARGUMENTS` in
# the background (pid, log and the kubeconfig's path in STATE DIR) unless one runs; prints its KUBECONFIG.
define start-for-people
	@mkdir -p $(1); \
	if [ -f $(1)/pid ] && kill -0 $$(cat $(1)/pid) 2>/dev/null; then \
	  echo "export KUBECONFIG=$$(cat $(1)/kubeconfig-path)"; exit 0; fi; \
	rm -f $(1)/kubeconfig-path; \
	BLOCKFEED_DEV_CLUSTER_STATE=$(1) nohup node test/support/dev-cluster.ts $(2) > $(1)/log 2>&1 & echo $$! > $(1)/pid; \
	for i in $$(seq 1 1500); do \
	  [ -s $(1)/kubeconfig-path ] && break; \
	  kill -0 $$(cat $(1)/pid) 2>/dev/null || { cat $(1)/log; exit 1; }; sleep 0.2; done; \
	[ -s $(1)/kubeconfig-path ] || { echo "not ready after 5 minutes; see $(1)/log"; exit 1; }; \
	echo "# $(3) running (pid $$(cat $(1)/pid), log $(1)/log); stop it with: make $(4)"; \
	echo "export KUBECONFIG=$$(cat $(1)/kubeconfig-path)"
endef

# $(call stop-for-people,STATE DIR,WHAT)
define stop-for-people
	@if [ -f $(1)/pid ]; then kill $$(cat $(1)/pid) 2>/dev/null || true; \
	  while kill -0 $$(cat $(1)/pid) 2>/dev/null; do sleep 0.2; done; rm -f $(1)/pid; echo stopped; \
	else echo "no $(2) running"; fi
endef

dev-cluster: deps k8s-bin k8s-crds ## start etcd + kube-apiserver + kube-controller-manager on loopback, print KUBECONFIG
	$(call start-for-people,$(DEV_CLUSTER_DIR),,control plane,dev-cluster-down)

dev-cluster-down: ## stop the control plane started by make dev-cluster
	$(call stop-for-people,$(DEV_CLUSTER_DIR),dev cluster)

cluster: deps cluster-deps k8s-crds cluster-bin cluster-images ## start the cluster tier's single-node cluster (no chart), print KUBECONFIG (root)
	$(call start-for-people,$(CLUSTER_STATE_DIR),--node,single-node cluster,cluster-down)

cluster-down: ## stop the cluster started by make cluster
	$(call stop-for-people,$(CLUSTER_STATE_DIR),cluster)
