# chronomem as a service image (REST server, job worker, MCP over HTTP).  No local model inside:
# point CHRONOMEM_LLM / CHRONOMEM_LLM_BASE_URL at an OpenAI-compatible server (see compose.yaml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install ".[postgres,redis,server,queue]" && useradd --system --home /app chronomem
USER chronomem
ENTRYPOINT ["chronomem"]
CMD ["serve", "--host", "0.0.0.0"]
