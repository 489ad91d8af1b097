"""Models: the algorithm registry (:mod:`.algorithms`), what a saved checkpoint says (:mod:`.saved`), the torch-only
networks copied into submissions (:mod:`.nets`) and the SB3 features extractors around them (:mod:`.extractors`).

Nothing is imported here, so that reading the registry (``sb3_realm.models.algorithms``) never loads torch."""
