"""``cseaug data fetch``: download the public inputs the shipped configs name (docs/data.md).

``catalog`` says what can be fetched and from where, ``download`` does resumable HTTP,
``archive`` puts verified files in place, ``records`` keeps ``.fetched.json``, and
``fetcher`` ties them together per catalogue entry.
"""
