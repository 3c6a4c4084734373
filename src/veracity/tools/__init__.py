"""DEFAME's actions behind one interface (see base.py): web search, image search, reverse image search,
image metadata and geolocation."""
