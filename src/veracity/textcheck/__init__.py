"""`veracity check-text`: extract the claims of any text (`veracity.claims`), check each with a claim pipeline,
and show the verdicts on the text.

    run.py       check_text(): extraction, then each checkable claim through run_check, with workers and a budget
    outcomes.py  what each claim ends as, and the stretches of the text the claims colour (`marks`)
    steps.py     its steps (the text and its claims, each claim's result, the summary) and their view items
    stored.py    a checked text read back from its steps (the server's stored runs)
    report.py    the Markdown and the HTML report (the text with each claim's span coloured by its verdict)

Its command, `veracity check-text`, is veracity.cli.check_text.

Above the shared parts and the systems (it runs any registered pipeline), like `eval/`.
"""
