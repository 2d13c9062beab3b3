# Vexil in a container (docs/operations.md "Containers", design record 028).
#   build    every dependency, `npm run release`: the built server, engine and console
#   install  `npm ci --omit=dev` in the release directory (native addons built with the tools here)
#   runtime  node:24 slim, the installed directory only, a non-root user
# CI runs the same release, install and start steps on the machine itself (production-install
# test); it does not build this file (no container engine there).
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm AS build
WORKDIR /src
# Manifests first: the dependency layer is rebuilt only when they change.
COPY package.json package-lock.json ./
COPY packages/engine/package.json packages/engine/
COPY packages/server/package.json packages/server/
COPY packages/server/bin packages/server/bin
COPY packages/sdk-node/package.json packages/sdk-node/
COPY packages/openfeature-provider/package.json packages/openfeature-provider/
COPY packages/bench/package.json packages/bench/
COPY packages/console/package.json packages/console/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run release

FROM node:${NODE_VERSION}-bookworm AS install
WORKDIR /app
COPY --from=build /src/release/ ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    VEXIL_HOST=0.0.0.0 \
    VEXIL_PORT=8080 \
    VEXIL_DATABASE_URL=/var/lib/vexil/vexil.db \
    VEXIL_SNAPSHOT_CACHE_DIR=/var/lib/vexil/snapshots
WORKDIR /app
# Owned by root, so the service cannot change its own code; it writes only to /var/lib/vexil.
COPY --from=install /app/ ./
RUN mkdir -p /var/lib/vexil && chown node:node /var/lib/vexil
USER node
VOLUME ["/var/lib/vexil"]
EXPOSE 8080
# The slim image has no curl: Node's fetch asks /healthz (liveness).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.VEXIL_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node itself as PID 1's child-less main process: SIGTERM reaches Vexil, which drains and exits.
CMD ["node", "packages/server/bin/vexil.js", "serve"]
