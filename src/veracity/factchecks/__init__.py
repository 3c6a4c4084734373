"""Published fact-checks: a store of them (store.py) imported from the formats fact-checkers publish (formats.py,
google.py), matching a claim or post against it (matcher.py, trained by training.py), and what every front end
calls to show the matches before veracity's own verdict (lookup.py; verdict.py when a match may decide)."""
