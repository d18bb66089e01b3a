"""Over what was crawled: page features, classification, search, structured extraction."""
