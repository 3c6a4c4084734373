"""`veracity check-text`: extract the claims of any text (`veracity.claims`), check each with a claim pipeline,
and show the verdicts on the text.

    run.py       check_text(): extraction, then each checkable claim through run_check, with workers and a budget
    report.py    the Markdown and the HTML report (the text with each claim's span coloured by its verdict)
    commands.py  the CLI subcommand

Above the shared parts and the systems (it runs any registered pipeline), like `eval/`.
"""
