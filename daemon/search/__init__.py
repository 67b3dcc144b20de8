"""Finding knowledge beyond the SPINE: a derived search index of the store, kept in distilld's
state folder (never in the store), and the answers `find`, `bundle` and `serve` give.

* ``fingerprint``: which files are knowledge, their stamps, HEAD, and the store's fingerprint;
* ``documents``: what of each file is indexed, and its binding rules (pure, no I/O);
* ``index``: the SQLite FTS5 index: built, checked, updated in increments, rebuilt when foreign;
* ``query``: a query made safe, ranked by fused SPINE-line and body ranks, honest not-found;
* ``bundle``: a budgeted bundle of knowledge for a task;
* ``reader``: read_knowledge, which serves knowledge files and nothing else;
* ``answers``: the one JSON answer per tool, shared by the CLI and the MCP server.
"""
