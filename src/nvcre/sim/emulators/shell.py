"""Just enough shell to see which program a container really runs.

Workloads hide their program behind wrappers: ``sh -c "...; exec mpirun ..."``,
``timeout 3600 mpirun``, ``env -u X mpirun``, ``/bin/bash /config/train.sh``. This
splits such a command into simple commands (segments), following ``-c`` scripts
and script files the pod has mounted, and tracks ``export``/``VAR=value``
assignments so ``$VAR`` and ``${VAR:-default}`` expand as they would.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Callable

from nvcre.sim.emulators.base import expand

_ARITH_SOURCE = re.compile(r"\$\(\((.*?)\)\)")
SHELLS = {"sh", "bash", "dash", "zsh", "ash", "ksh"}
_SEPARATORS = {";", "&&", "||", "|", "&", ";;", "(", ")", "|&"}
_KEYWORDS = {"then", "do", "else", "elif", "fi", "done", "if", "while", "until", "{", "}", "!", "time", "nohup", "exec"}


@dataclass
class Segment:
    """One simple command and the environment it sees."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else ""


def _is_c_flag(token: str) -> bool:
    return token.startswith("-") and not token.startswith("--") and "c" in token[1:]


def _is_assignment(token: str) -> bool:
    name, eq, _ = token.partition("=")
    return bool(eq) and name.isidentifier()


def split_script(text: str) -> list[list[str]]:
    """Split shell text into simple commands (tokens between separators)."""
    text = _ARITH_SOURCE.sub(lambda m: f"$__arith_{m.group(1).encode().hex()}__", text)
    text = text.replace("\\\n", " ").replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = text.split()
    commands: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token in _SEPARATORS:
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def _strip_wrappers(argv: list[str], env: dict[str, str]) -> list[str]:
    """Drop timeout/env/nohup/exec wrappers and leading assignments (into ``env``)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        base = os.path.basename(token)
        if token in _KEYWORDS:
            i += 1
        elif _is_assignment(token):
            name, _, value = token.partition("=")
            env[name] = value
            i += 1
        elif base == "timeout":
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if argv[i] in ("-s", "-k", "--signal", "--kill-after") else 1
            i += 1  # the duration
        elif base == "env":
            i += 1
            while i < len(argv) and (argv[i].startswith("-") or _is_assignment(argv[i])):
                if argv[i] in ("-u", "--unset", "-C", "--chdir"):
                    env.pop(argv[i + 1], None) if argv[i] in ("-u", "--unset") and i + 1 < len(argv) else None
                    i += 2
                    continue
                if _is_assignment(argv[i]):
                    name, _, value = argv[i].partition("=")
                    env[name] = value
                i += 1
        elif base in ("stdbuf", "nice", "ionice", "numactl", "taskset"):
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 1
        else:
            break
    return argv[i:]


_BARE_VAR = re.compile(r"\$(?:\{\w+\}|\w+)")


def _expand_all(argv: list[str], env: dict[str, str], positional: list[str] | None) -> list[str]:
    """Expand variables; ``$@``/``$*`` splice the script's positional arguments."""
    out: list[str] = []
    scope = dict(env)
    if positional is not None:
        scope.update({str(i + 1): value for i, value in enumerate(positional)})
        scope["#"] = str(len(positional))
    for token in argv:
        if positional is not None and token in ("$@", "$*", "${@}", "${*}"):
            out.extend(positional)
        elif _BARE_VAR.fullmatch(token):
            # an unquoted lone expansion is split into words; an empty one vanishes
            out.extend(expand(token, scope).split())
        else:
            out.append(expand(token, scope))
    return out


def segments(
    argv: list[str],
    env: dict[str, str],
    read_file: Callable[[str], str | None] = lambda path: None,
    _depth: int = 0,
    _positional: list[str] | None = None,
) -> list[Segment]:
    """Every simple command ``argv`` runs, in order, with its environment."""
    env = dict(env)
    raw = list(argv)
    argv = _strip_wrappers(_expand_all(argv, env, _positional), env)
    # a -c script is shell text: it is expanded when its own commands run, not now
    offset = len(raw) - len(argv)
    if argv and os.path.basename(argv[0]) in SHELLS and offset >= 0 and raw[offset:offset + 1] == argv[:1]:
        argv = argv[:1] + [raw[offset + k] if argv[k - 1:k] and _is_c_flag(argv[k - 1]) else argv[k]
                           for k in range(1, len(argv))]
    if not argv:
        return []
    if os.path.basename(argv[0]) in SHELLS and _depth < 4:
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
            flag = argv[i]
            if not flag.startswith("--") and "c" in flag[1:]:
                script = argv[i + 1] if i + 1 < len(argv) else ""
                positional = argv[i + 3:]  # after the script: $0, then $1...
                return _script_segments(script, env, read_file, _depth, positional)
            i += 2 if flag == "-o" else 1
        if i < len(argv) and argv[i] == "--":
            i += 1
        if i < len(argv):
            text = read_file(argv[i])
            if text is not None:
                return _script_segments(text, env, read_file, _depth, argv[i + 1:])
    return [Segment(argv, env)]


def _script_segments(
    script: str,
    env: dict[str, str],
    read_file: Callable[[str], str | None],
    depth: int,
    positional: list[str] | None = None,
) -> list[Segment]:
    out: list[Segment] = []
    for command in split_script(script):
        if command and command[0] in ("export", "declare", "local", "readonly"):
            for token in command[1:]:
                if _is_assignment(token):
                    name, _, value = token.partition("=")
                    env[name] = expand(value, env)
            continue
        if command and all(_is_assignment(t) for t in command):
            for token in command:
                name, _, value = token.partition("=")
                env[name] = expand(value, env)
            continue
        if command and command[0] == "unset":
            for name in command[1:]:
                env.pop(name, None)
            continue
        out.extend(segments(command, env, read_file, depth + 1, positional))
    return out
