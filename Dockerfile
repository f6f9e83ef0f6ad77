# syntax=docker/dockerfile:1
# One image, three roles: the command picks api, runner, bridge (or all; or topics to create the topics and exit).
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci patches kafkajs (postinstall): its read_committed filter, see src/kafka/patches/.
COPY src/kafka/patches ./src/kafka/patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY consumers ./consumers
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
# No Java here: without KAFKA_BROKERS the service says to set it rather than to install Java.
ENV NODE_ENV=production EMBEDDED_KAFKA=false
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "dist/scripts/healthcheck.js"]
ENTRYPOINT ["node", "dist/src/main.js"]
CMD ["all"]
