FROM denoland/deno:2.9.6
WORKDIR /app
# Dependencies first, so a code change does not refetch them.
COPY deno.json deno.lock ./
COPY src/deps_cache.ts src/deps_cache.ts
RUN deno install --frozen --entrypoint src/deps_cache.ts
COPY . .
RUN deno cache src/main.ts && mkdir -p /app/data && chown -R deno:deno /app/data
USER deno
ENV DATA_DIR=/app/data PORT=8787
# The embedded store: mount a volume here, or balances and keys go with the container.
VOLUME /app/data
EXPOSE 8787
CMD ["task", "start"]
