"""URLs and hosts: parsing and normalising URLs, host keys and name resolution, the address guard."""
