# The nvcre controller and CLI image: `nvcrectl` is the entrypoint; the chart runs
# `nvcrectl controller run`. Dependencies are installed at the versions pinned in
# constraints/image.txt (hack/packaging/lock.sh), so a rebuild gets the same image.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md LICENSE ./
COPY constraints ./constraints
COPY charts ./charts
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install --constraint constraints/image.txt .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# An unprivileged user; the chart also runs it as non-root with a read-only root filesystem.
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin nvcre
USER 65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["nvcrectl"]
CMD ["controller", "run"]
