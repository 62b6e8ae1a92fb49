"""The built-in drafters, one strategy per module; each registers itself when imported, which the
registry does when the drafter is first named (``lookup.registry.BUILTINS``)."""
