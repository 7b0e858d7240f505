# hakaru as a static binary in a minimal image, built where a registry and the network are at hand: for
# `hakaru k8s job --image ...` and `hakaru swarm service --image ...` (docs/scale-out.md). The binary is hakaru's
# entrypoint; the manifests and services pass only arguments. Without a registry, scripts/image.sh builds the
# same kind of image from Dockerfile.scratch with nothing pulled (glibc static instead of musl).
#
#   docker build -t registry.example/hakaru:0.1.0 .
#   docker push registry.example/hakaru:0.1.0
#
# For arm64 nodes: docker build --build-arg TARGET=aarch64-unknown-linux-musl --platform linux/arm64 ...

# Stage 1: build with the musl target, so the binary needs no libc from the image it runs in.
# Rust 1.89 or later (edition 2024, serde-saphyr); pinned so builds repeat.
FROM rust:1.95-bookworm AS build
ARG TARGET=x86_64-unknown-linux-musl
# musl-tools: the C compiler (musl-gcc) that ring's C and assembly need for a musl target.
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add "$TARGET"
WORKDIR /src
COPY . .
# --locked: the dependency versions of Cargo.lock, as tested. The binary lands at a fixed path for stage 2.
RUN cargo build --release --locked --target "$TARGET" \
 && cp "target/$TARGET/release/hakaru" /hakaru

# Stage 2: distroless static: no shell, no package manager; CA certificates and /etc/passwd only. It runs as
# root by default, so the agents can write to a freshly provisioned results volume (owned by root).
FROM gcr.io/distroless/static-debian12
COPY --from=build /hakaru /hakaru
ENTRYPOINT ["/hakaru"]
