"""The release matrix: one corpus run per release of an engine, each in its own environment.

    envs.py    an engine release installed on demand into its own cached folder
    run.py     the corpus (or a selection) through one release, in a child process
    matrix.py  results per release -> per run the state in each release, "fixed in", "regressed in"
    bisect.py  the first release where one run's state changed
    page.py    the release matrix as an HTML page with a chart
    cli.py     `harness releases ENGINE V...` and `harness bisect RUN --engine ENGINE`
"""
