"""Rendering a check as Markdown and HTML (for `--report` and downloads) and as terminal text.

Everything is rendered from the check's trace, the one record of what happened, folded once into view items
(`veracity.steps.view_items`): the terminal printer (`terminal.TerminalPrinter`, as the steps arrive) and the report
(`check.to_markdown`, `check.to_html`) render those items; DEFAME's part of the report (defame.py) renders its record
(`defame.record.Record`, read from the same steps).

The pieces below a check's report import no pipeline, and a text's report (textcheck/report.py) is made of them too:
markdown.py (untrusted text as safe Markdown, links and images), evidence.py (evidence as lines, snippets) and
page.py (Markdown to one self-contained HTML page; a report written to a file).
"""
