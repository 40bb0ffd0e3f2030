"""One way to print a command a person pastes: every word quoted for sh, the line unchanged
on its way out. Each verb's own test pipes what it prints to sh (tests/shell_pipe.py)."""

from __future__ import annotations

import io
import shlex

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from gpucluster.command_lines import command_line, print_commands
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh


def test_the_pipe_sees_a_name_that_breaks_out(tmp_path):
    # Unquoted, a hostile name runs its payload: the per-verb tests would see it.
    run = pipe_to_sh(f"kubectl annotate node {HOSTILE_NAMES[0]}\n", ["kubectl"], tmp_path)
    assert run.strays == ["pwned-semicolon"]
    assert [call.argv for call in run.calls] == [["annotate", "node", "n1"]]


@given(st.lists(st.text(alphabet=st.characters(exclude_characters="\x00")), min_size=1))
def test_every_word_reads_back_whole(words):
    assert shlex.split(command_line(*words)) == words


def test_a_key_stays_bare_and_the_variables_come_first(tmp_path):
    line = command_line(
        "scontrol", "update", "nodename=$(touch pwned)", "reason=two words", env={"TRAIN_X": "a b;c"}
    )
    assert line == "TRAIN_X='a b;c' scontrol update nodename='$(touch pwned)' reason='two words'"
    run = pipe_to_sh(line, ["scontrol"], tmp_path, watched_env=["TRAIN_X"])
    assert run.strays == []
    assert [(call.argv, call.env) for call in run.calls] == [
        (["update", "nodename=$(touch pwned)", "reason=two words"], {"TRAIN_X": "a b;c"})
    ]


def test_lines_are_printed_as_they_are():
    stream = io.StringIO()
    # What rich alone would change: an emoji code, markup, a tab, a carriage return.
    lines = ["kubectl x ':thumbs_up: [bold]a[/bold]\tb\rc'", "second"]
    print_commands(Console(file=stream, force_terminal=True), lines)
    assert stream.getvalue() == "".join(line + "\n" for line in lines)
