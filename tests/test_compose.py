"""compose.yaml: validated by Docker Compose itself (``config -q``; no engine needed), and its
services wired as documented (server, worker, PostgreSQL + pgvector, Redis)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML reads compose.yaml")

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose.yaml"


def compose_command() -> list[str]:
    """``docker compose`` (the v2 plugin), else the standalone ``docker-compose``; skip without either."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.skip("Docker Compose is not installed: neither the `docker compose` plugin nor `docker-compose` "
                "is on PATH (apt-get install docker-compose)")


def validate(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*compose_command(), "-f", str(path), "config", "-q"], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_docker_compose_validates_the_file() -> None:
    res = validate(COMPOSE, ROOT)
    assert res.returncode == 0, res.stderr


def test_docker_compose_rejects_a_broken_copy(tmp_path: Path) -> None:
    """The check above is not vacuous: the same tool refuses a file with a misspelt key."""
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace("    healthcheck:\n", "    healthchek:\n", 1))
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    res = validate(broken, tmp_path)
    assert res.returncode != 0 and "healthchek" in (res.stderr + res.stdout)


def test_services_are_wired_as_documented() -> None:
    doc = yaml.safe_load(COMPOSE.read_text())
    svc = doc["services"]
    assert set(svc) == {"server", "worker", "postgres", "redis"}
    assert svc["postgres"]["image"] == "pgvector/pgvector:pg16"
    assert svc["worker"]["command"] == ["worker"]
    assert svc["server"]["command"][0] == "serve"
    for name in ("server", "postgres", "redis"):
        assert svc[name]["healthcheck"]["test"], name
    for name in ("server", "worker"):
        env = svc[name]["environment"]
        assert env["CHRONOMEM_DB"].startswith("postgresql://") and "@postgres:5432/" in env["CHRONOMEM_DB"]
        assert env["CHRONOMEM_REDIS_URL"] == "redis://redis:6379/0"
        assert svc[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert svc[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert all(p.startswith("127.0.0.1:") for p in svc["server"]["ports"])  # not open to the network
    assert {"pgdata", "redisdata"} <= set(doc["volumes"])
    assert (ROOT / "Dockerfile").exists()
