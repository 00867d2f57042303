"""Where gfx906 files come from: manifests, apt indexes, downloads into a sha256-keyed cache,
and safe extraction of only the selected archive members.

    manifest.py       Manifest, Component, Source: what a manifest is; Manifest.select(name)
    manifest_load.py  load_manifests(dir) -> [Manifest]: the schema checked, errors with file:line
    tomllines.py      TomlLines: the line of a TOML key path (tomllib reports none)
    apt.py            the host's apt sources, InRelease (gpgv, pinned fingerprint), Packages indexes
    http.py           Downloader: Range resume, retries with backoff on transient errors, timeouts
    cache.py          Cache: <cache>/sha256/<hex>, partial downloads, resolutions of signed indexes
    artifact.py       FetchResult (path-like), and the cache's record of a signed resolution
    resolve.py        resolve(base, source, ...): the package found in a (signed) apt index
    fetch.py          fetch_source(source, cache, ...) -> FetchResult; first_reachable(candidates, f)
    local.py          from_local: a --from file, folder, export or unpacked tree, checked against the pin
    export.py         export_artifacts: artifacts and their signed indexes for other hosts (fetch --to)
    fetch_run.py      run_fetch: a `fetch` run over manifests (then --extract, --to) and its outcome
    extract.py        extract_into: the selected files in DIR/<manifest>/<source>/ (fetch --extract)
    unpack/           extract_selected(artifact, select, staging, member_prefix=...) -> [StagedFile]:
                      the .deb's ar container, the decompressors, the tar reader, selection and staging

Nothing here prints or exits; errors are RevError values.
"""
