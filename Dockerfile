# resume-run as a container entrypoint.
#   docker build -t resume-run .            (or: podman build -t resume-run .)
#   docker run --rm -e RESUME_RUN_STORE=s3://bucket/runs -e RESUME_RUN_ID=exp1 \
#       resume-run python3 train.py          (ENTRYPOINT adds "resume-run --")
# Into an image of your own (Debian bookworm based; add the runtime libraries below):
#   COPY --from=resume-run /usr/bin/resume-run /usr/bin/resume-run
#   COPY --from=resume-run /usr/lib/python3/dist-packages/resume_run /usr/lib/python3/dist-packages/resume_run

FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
# No .git in the build context: the commit for --version comes in as a build argument.
ARG RR_GIT_COMMIT=""
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DRR_GIT_COMMIT="$RR_GIT_COMMIT" \
    && cmake --build /build -j"$(nproc)" --target resume-run \
    && DESTDIR=/out cmake --install /build --prefix /usr --strip

FROM debian:bookworm-slim
# Only what the binary links (the .deb's Depends) and CA certificates for HTTPS stores.
RUN apt-get update \
    && apt-get install -y -q --no-install-recommends libcurl4 libssl3 libzstd1 libcjson1 \
       libxxhash0 libexpat1 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/bin/resume-run /usr/bin/resume-run
COPY --from=build /out/usr/lib/python3/dist-packages/resume_run /usr/lib/python3/dist-packages/resume_run
# As PID 1 the agent reaps every zombie and turns `docker stop`'s SIGTERM into a notice.
ENTRYPOINT ["resume-run", "--"]
