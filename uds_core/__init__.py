"""The foundation: the patching engine and the model plumbing every other package stands on.

Hook points and activation capture (`arch`, `hooks`, `capture`, `suffix`, `packing`), the engine
and its formula (`engine`, `formula`), the S1 cache (`s1_cache`), model and tokenizer loading
(`loading`, `adapters`), prompts and entity spans (`prompts`, `chat`, `data`), generation, and the
small shared pieces (`errors`, `numbers`, `paths`, `parity`, `fingerprint`), atomic writes and
content digests of cached files (`atomic`, `digests`, `sealed`, `manifest`). Imports nothing of
the project outside this package.
"""
