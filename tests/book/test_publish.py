"""The publishing workflow: it builds with the README's commands, deploys the built book, and refuses to publish
a fork whose _config.yml still names another repository. (`make test` also validates it against GitHub's schema.)"""

import subprocess
import sys

import yaml
from bookfiles import ROOT, config

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
CHECK_URL = ROOT / "scripts" / "check_repository_url.py"


def steps() -> list[dict]:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["build"]["steps"]


def test_workflow_tests_builds_and_uploads_the_book():
    runs = [step.get("run", "") for step in steps()]
    assert "make test" in runs and "make book" in runs, f"the workflow must run the README's commands, runs: {runs}"
    assert runs.index("make test") < runs.index("make book")
    upload = [s for s in steps() if s.get("uses", "").startswith("actions/upload-pages-artifact")]
    assert upload and upload[0]["with"]["path"] == "_build/html"


def test_workflow_checks_the_repository_address_first():
    first_run = next(step["run"] for step in steps() if "run" in step)
    assert "check_repository_url.py" in first_run


def check_url(address: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK_URL), address], capture_output=True, text=True)


def test_repository_address_check():
    url = config()["repository"]["url"]
    assert check_url(url).returncode == 0
    assert check_url(url.upper() + "/").returncode == 0  # GitHub addresses are case-insensitive
    fork = check_url("https://github.com/someone/a-fork")
    assert fork.returncode == 1 and "set repository.url to https://github.com/someone/a-fork" in fork.stderr
