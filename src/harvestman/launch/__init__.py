"""Running a crawl or a step for a face (the command line, the server): settings merged, display, report."""
