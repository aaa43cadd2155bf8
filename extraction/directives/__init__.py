"""Routing directives (`@tools …(output=…)`): parser and printer, typed specs, file-space paths, the manifest notice."""
