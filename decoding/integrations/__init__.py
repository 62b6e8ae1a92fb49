"""Our loop and drafters where people decode: transformers' ``generate()`` (:mod:`.hf`).

Each adapter imports the engine it adapts; importing this package imports none of them.
"""
