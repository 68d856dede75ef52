# blockfeed — every target runs on a Node.js >= 22.12: the system one if new enough, else a project-local
# Node 24 fetched from the npm registry into .cache/node/ (scripts/ensure-node.sh).
SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

NODE_HOME := $(shell scripts/ensure-node.sh)
ifeq ($(NODE_HOME),)
  $(error could not find or install Node.js >= 22.12 (see scripts/ensure-node.sh output above))
endif
export PATH := $(NODE_HOME)/bin:$(PATH)
# Native add-ons must build against the Node that runs them, not a system-wide nodedir setting.
export npm_config_nodedir := $(NODE_HOME)
export npm_config_update_notifier := false
export npm_config_fund := false

-include mk/k8s.mk
-include mk/cluster.mk

.PHONY: help run deps system-deps sensor-venvs typecheck lint test test-unit test-integration test-k8s test-browser check clean crds bench-deps bench-controller bench-live bench-ingest bench-export bench-serve bench-check bench-ship bench-web bench-scale chart-files test-chart test-e2e e2e-kind

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort | column -t -s $$'\t'

node_modules/.deps-stamp: package.json package-lock.json
	npm ci --no-audit --loglevel=error
	@touch $@

deps: node_modules/.deps-stamp ## install npm dependencies (npm ci)

system-deps: ## Debian tools the tests run (promtool, prometheus, nginx, ...); installs only what is missing, with sudo when not root
	.ci/system-deps

sensor-venvs: system-deps ## the honeypots the integration tier attacks (Cowrie, OpenCanary) from PyPI into virtualenvs under .cache/sensors/; a no-op when present
	hack/sensors/install.sh

bench-deps: ## Debian tools the benchmarks compare against (nginx, wrk, curl, psql, promtool)
	.ci/system-deps --bench

run: deps ## run the api-server on :8080 on the embedded PostgreSQL in ./.blockfeed (demo data on first run)
	bin/blockfeed serve --demo-if-empty

typecheck: deps ## tsc --noEmit over the whole package
	npx tsc -p tsconfig.json

lint: deps ## eslint (typescript-eslint, type-aware), and dependency-cruiser: imports run only the allowed ways (docs/design.md "Which way imports run")
	npx eslint --max-warnings=0 .
	npx depcruise --config .dependency-cruiser.js --output-type err-long .

test-unit: deps system-deps ## unit tier only
	npx vitest run --project unit

test-integration: deps system-deps sensor-venvs ## integration tier only (real embedded PostgreSQL, real honeypots)
	npx vitest run --project integration

test-k8s: deps system-deps k8s-bin k8s-crds ## k8s tier only (real etcd, kube-apiserver, kube-controller-manager, the enforcement points' CRDs)
	npx vitest run --project k8s

test-browser: deps system-deps ## browser tier only: the website in Debian's Chromium (screenshots in test/browser/artifacts/)
	npx vitest run --project browser

test: deps system-deps sensor-venvs k8s-bin k8s-crds cluster-bin cluster-images ## everything CI runs: typecheck, lint, every test tier, the cluster tier last (installs and builds what they run once)
	$(MAKE) --no-print-directory typecheck lint
	npx vitest run --project '!cluster'
	npx vitest run --project cluster

check: typecheck lint ## static checks only

bench-export: deps bench-deps ## benchmark: uncached /api/export of 1,000,000 addresses vs PostgreSQL's COPY, without and with 1,000 exclusions (needs psql, curl)
	node bench/export.ts

bench-scale: deps bench-deps ## benchmark: a month of 30,000,000 events from 1,000,000 addresses; uncached stats and lists at 24/168/720 h vs COPY, 200 identical cold pulls, gzip and plain (ADDRESSES EVENTS ROUNDS HERD HERD_FORMAT HERD_CODINGS)
	node bench/scale.ts

bench-serve: deps bench-deps ## benchmark: cached list vs nginx, cached stats vs bare fastify under wrk (needs nginx, wrk)
	node bench/serve.ts

bench-check: deps bench-deps ## benchmark: /api/check of random addresses from PostgreSQL under wrk, unmetered, metered and with 1,000 exclusions (target >= 1,000 req/s)
	node bench/check.ts

bench-ingest: deps bench-deps ## ingest benchmark: 1,000,000 Cowrie events vs PostgreSQL's COPY of the same rows, median of RUNS pairs (EVENTS=n RUNS=n)
	node bench/ingest.ts --events $${EVENTS:-1000000} --runs $${RUNS:-7}

bench-ship: deps ## shipper benchmark: append-to-stored latency of single lines, a backlog of 200,000 Cowrie lines vs blockfeed ingest of the same file (LINES=n)
	node bench/ship.ts --lines $${LINES:-200000}

bench-web: deps bench-deps ## Lighthouse performance and accessibility of the home and download pages in Chromium (RUNS=n), target >= 95
	node bench/web.ts

clean: ## remove installed dependencies and caches (keeps ./.blockfeed data)
	rm -rf node_modules .cache

crds: ## regenerate crds/ from api/v1alpha1/ (and the chart's copy)
	node hack/generate-crd.ts
	node hack/generate-chart-files.ts

bench-live: deps k8s-bin k8s-crds ## time to block: a line in a Cowrie log to the NetworkPolicy of a live subscription, by stage (RUNS=n ADDRESSES=n)
	node bench/time-to-block.ts

bench-controller: deps bench-deps k8s-bin k8s-crds ## controller benchmark: the 1M-address apply path per kind of target vs its floor, aggregation vs sort, 200 subscriptions
	node --expose-gc bench/controller.ts

# --- Helm chart and container image -------------------------------------------------------------------------
chart-files: ## regenerate the chart's RBAC rules (controller/rbac.ts), crds/ copy and appVersion
	node hack/generate-chart-files.ts

test-chart: deps system-deps k8s-bin ## chart tier: helm lint/template, values schema, promtool on the alerts (needs helm, promtool)
	npx vitest run --project chart

test-e2e: deps system-deps k8s-bin k8s-crds ## e2e tier: control plane, api-server, controller and a real Prometheus (needs prometheus)
	npx vitest run --project e2e

e2e-kind: ## build the image, install the chart in a kind cluster, apply an example subscription (needs docker, kind, kubectl, helm)
	hack/kind/e2e.sh
