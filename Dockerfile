# The nvcre controller and CLI image: `nvcrectl` is the entrypoint; the chart runs
# `nvcrectl controller run`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# An unprivileged user; the chart also runs it as non-root with a read-only root filesystem.
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin nvcre
USER 65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["nvcrectl"]
CMD ["controller", "run"]
