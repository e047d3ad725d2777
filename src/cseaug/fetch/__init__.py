"""``cseaug data fetch``: download the public inputs the shipped configs name (docs/data.md)."""
