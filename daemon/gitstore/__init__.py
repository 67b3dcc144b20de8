"""The git-backed store: the only package that imports pygit2.

* ``repo``: adopt or create the store's repository (attributes, allow-list ignore, config);
* ``commit``: one commit per operation through a private index, the branch moved by CAS;
* ``sync``: fetch, fast-forward or merge in memory, verify the bytes, push, back off;
* ``merge``: the git side of a diverged sync (the rules themselves are in store.merge);
* ``verify``: byte-exactness of the work tree and the archive after a pull;
* ``auth``: timeouts, bounded credential attempts, host keys checked;
* ``gitcli``: the one place the (optional) git command line runs; ``cli_join`` and
  ``maintenance`` its uses: a joining machine's fetch and first checkout, packing.
"""
