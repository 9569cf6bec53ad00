"""The bundled offline demo corpus (WARC, queries, simulated citation bundles) and its builder."""
