# syntax=docker/dockerfile:1
# The dccm image: `dccm daemon` with the pulumi CLI and the gcp provider plugin at exactly the
# versions of package.json (test/unit/dockerfile.test.ts keeps them equal). Build:
#   docker build -t REGISTRY/dccm:VERSION .
# The only step that downloads anything but npm packages is the `pulumi` stage (get.pulumi.com and
# the plugin's release): at image build time, never when the daemon runs.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: @pulumi/gcp's would fetch its plugin here; the pulumi stage installs it pinned.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json index.ts ./
COPY adopt ./adopt
COPY bin ./bin
COPY components ./components
COPY controllers ./controllers
COPY daemon ./daemon
COPY deploy ./deploy
COPY drift ./drift
COPY gce ./gce
COPY leaks ./leaks
COPY model ./model
COPY preview ./preview
COPY program ./program
COPY runtime ./runtime
COPY stacks ./stacks
COPY watcher ./watcher
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE} AS pulumi
ARG PULUMI_VERSION=3.248.0
ARG PULUMI_GCP_VERSION=9.37.0
ARG TARGETARCH=amd64
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
RUN arch="$([ "$TARGETARCH" = arm64 ] && echo arm64 || echo x64)" \
 && curl -fsSL "https://get.pulumi.com/releases/sdk/pulumi-v${PULUMI_VERSION}-linux-${arch}.tar.gz" | tar -xz -C /opt \
 && PULUMI_HOME=/tmp/pulumi-home /opt/pulumi/pulumi plugin install resource gcp "v${PULUMI_GCP_VERSION}" \
 && mkdir -p /opt/pulumi-plugins \
 && cp "/tmp/pulumi-home/plugins/resource-gcp-v${PULUMI_GCP_VERSION}/pulumi-resource-gcp" /opt/pulumi-plugins/ \
 && /opt/pulumi/pulumi version | grep -qx "v${PULUMI_VERSION}"

FROM ${NODE_IMAGE}
# tini as PID 1: SIGTERM reaches node (which cancels its pulumi runs and releases the Lease), and
# the reaper's orphans are collected.
RUN apt-get update && apt-get install -y --no-install-recommends tini ca-certificates && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 dccm && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/dccm --shell /usr/sbin/nologin dccm
COPY --from=pulumi /opt/pulumi /opt/pulumi
COPY --from=pulumi /opt/pulumi-plugins /opt/pulumi-plugins
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# The gcp plugin is found on PATH (an "ambient" plugin): PULUMI_HOME can then be an emptyDir on a
# read-only root filesystem (deploy/manifests.ts sets it).
# MALLOC_ARENA_MAX=2: glibc gives each thread that allocates (V8's GC and compiler threads, libuv's
# pool) a malloc arena of its own, up to 8 per core, and keeps their freed pages. Measured by
# bench:soak (docs/development/benchmarks.md#soak): the daemon's RSS swung by 80 MB of anonymous
# memory outside V8's heap (334 to 254 MB between runs 50 and 100), and sat above the
# same daemon with two arenas, 20-31 MB lower from run 100 to 300 (its swing 11 MB), its heap the same.
ENV PATH=/opt/pulumi:/opt/pulumi-plugins:$PATH \
    NODE_ENV=production \
    PULUMI_SKIP_UPDATE_CHECK=true \
    PULUMI_HOME=/var/lib/dccm/pulumi-home \
    MALLOC_ARENA_MAX=2
USER 10001:10001
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/bin/dccm.js"]
CMD ["daemon"]
