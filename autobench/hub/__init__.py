"""Hub references: pin revisions to commit shas, fingerprint configs, diff them, work offline.

    client.py       HubSettings (env read at call time), Hub (bounded HfApi calls), translate()
    resolve.py      revision -> sha and config.json, online or from the local HF cache
    fingerprint.py  architecture fingerprint of a config.json
    trust.py        trust facts of a repo at a commit
    diff.py         field-by-field config diff, breaking geometry changes flagged
    lockfile.py     ``autobench lock``: in-place recipe pins + <recipe>.lock.json
    outdated.py     ``autobench outdated``: moved branches and what changed
    info.py         ``autobench hub info``

Nothing here is imported by ``autobench.compile``: compiling never touches the network.
huggingface_hub is imported lazily, inside the functions that call it.
"""
