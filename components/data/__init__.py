"""Stage 0, data: what the platform knows before reading any stack file. The GPU and machine catalog
(``catalog``), list prices (``prices``, ``prices.json``) and every pinned chart (``versions``).

May import: nothing of ``components`` (the standard library only)."""
