"""`uds report`'s static site: readers of every result kind -> one data model -> pages.

Standard library only (no torch, no metrics stack), so `uds report` starts in well under a second.
Modules: `readers` (files -> `Results`), `model` (the data model), `payload` (data model -> the
JSON the pages read), `writer` (the site folder), `serve` (optional localhost server).
"""
