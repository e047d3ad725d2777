"""The Prefect glue of cseaug: flows (``flows/``) compose tasks (``tasks/``), which call the
library. The library never imports it (docs/architecture.md)."""
