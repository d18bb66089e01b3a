"""What is done with a crawl once fetched: page features, classification, search, structured data."""
