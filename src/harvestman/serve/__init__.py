"""`harvestman serve`: a REST API and a web page to start, watch and search crawls (FastAPI)."""
