"""Where gfx906 files come from: manifests, apt indexes, downloads into a sha256-keyed cache,
and safe extraction of only the selected archive members.

    manifest.py   Manifest, Component, Source: what a manifest is; Manifest.select(name); Source pins
    manifest_load.py  load_manifests(dir) -> [Manifest]: the schema checked, errors with file:line
    tomllines.py  TomlLines: the line of a TOML key path (tomllib reports none)
    apt.py        the host's apt sources, InRelease (gpgv, pinned fingerprint), Packages indexes
    http.py       Downloader: Range resume, retries with backoff on transient errors, timeouts
    cache.py      Cache: <cache>/sha256/<hex>, partial downloads, resolutions of signed indexes
    fetch.py      fetch_source(source, cache, ...) -> FetchResult (path-like); exports for fleets
    unpack.py     extract_selected(artifact, select, staging, member_prefix=...) -> [StagedFile]

Nothing here prints or exits; errors are RevError values.
"""
