"""The records, settings, error tree and events that every layer shares; imports nothing of harvestman's."""
