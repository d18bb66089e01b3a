"""What a crawl keeps: the frontier and crawl database behind one factory, WARC files, the run journal."""
