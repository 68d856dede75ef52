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

.PHONY: help run deps typecheck lint test test-unit test-integration check clean bench-export bench-serve

help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort | column -t -s $$'\t'

node_modules/.deps-stamp: package.json package-lock.json
	npm ci --no-audit --loglevel=error
	@touch $@

deps: node_modules/.deps-stamp ## install npm dependencies (npm ci)

run: deps ## run the api-server on :8080 on the embedded PostgreSQL in ./.blockfeed
	bin/blockfeed serve

typecheck: deps ## tsc --noEmit over the whole package
	npx tsc -p tsconfig.json

lint: deps ## eslint (typescript-eslint, type-aware)
	npx eslint --max-warnings=0 .

test-unit: deps ## unit tier only
	npx vitest run --project unit

test-integration: deps ## integration tier only (real embedded PostgreSQL)
	npx vitest run --project integration

test: deps ## everything CI runs: typecheck, lint, every test tier
	$(MAKE) --no-print-directory typecheck lint
	npx vitest run

check: typecheck lint ## static checks only

bench-export: deps ## benchmark: uncached /api/export of 1,000,000 addresses vs PostgreSQL's COPY (needs psql, curl)
	node bench/export.ts

bench-serve: deps ## benchmark: cached list vs nginx, cached stats vs bare fastify under wrk (needs nginx, wrk)
	node bench/serve.ts

clean: ## remove installed dependencies and caches (keeps ./.blockfeed data)
	rm -rf node_modules .cache
