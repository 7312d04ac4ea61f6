# The prompt-host image docs/deploy/kubernetes.yaml runs: the release binary
# on distroless's cc image (glibc, libgcc, CA certificates, a `nonroot` user
# 65532, no shell, no package manager), run as that user, with nothing
# written to the root file system (the compiled cache goes to the volume
# the manifest mounts at /cache), so readOnlyRootFilesystem holds.
#
#   docker build -t registry.example.com/prompt-host:0.1.0 .
#
# The binary links only libc, libm and libgcc_s (TLS is rustls'), which the
# cc image holds; tests/python/test_deploy_files.py checks that, and runs the
# binary as user 65532 in a root holding only those files.

FROM rust:1.95-bookworm AS build
RUN rustup target add wasm32-wasip2
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p prompt-host

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/prompt-host /usr/local/bin/prompt-host
USER 65532:65532
EXPOSE 8080 9464
ENTRYPOINT ["/usr/local/bin/prompt-host"]
# No default serving: serving remotely needs a token or [authorization],
# which the deployment gives (docs/deploy/kubernetes.yaml's args).
CMD ["--help"]
