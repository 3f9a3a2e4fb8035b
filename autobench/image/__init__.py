"""Container images pinned by digest: the registry client, resolution, local docker facts, pins.

Modules:
    credentials   registry credentials by name: the user's docker config (auths, credential
                  helpers) or environment variables named in AUTOBENCH_REGISTRY_CREDENTIALS
    registry      the OCI distribution client: anonymous/basic/bearer auth, bounded time and
                  size, every byte verified against its digest, translated errors
    resolve       tag -> index digest -> per-platform manifest digests, config creation dates
    local         `docker image inspect` RepoDigests and `docker pull` by digest
    pins          lock/outdated for `container.image`: in-place edit and the lock-file entry
"""
