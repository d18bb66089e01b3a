"""Example harvestman plugins, one module an extension point (see pyproject.toml's entry points)."""
