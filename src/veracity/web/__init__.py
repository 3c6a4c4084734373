"""The web: search providers behind one interface, domain and date filters, and a guarded page scraper."""
