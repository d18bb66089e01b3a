"""Running a crawl: the engine, its worker processes, the robots gate, link extraction, download()."""
