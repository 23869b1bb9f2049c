"""A Ctrl-C that a pybind11 extension's import turns into ImportError("initialization failed") is "Interrupted."
and exit 130, like any Ctrl-C (the CI saw it once in `cfrag ask`, 4 s in, while scipy imported)."""

import click
from click.testing import CliRunner

from haystack_cfrag.cli.app import _Main


def _group(error: BaseException) -> click.Group:
    @click.group(cls=_Main)
    @click.option("--debug", is_flag=True)
    def main(debug: bool) -> None:
        pass

    @main.command()
    def ask() -> None:
        raise error

    return main


def _import_error_from_ctrl_c() -> ImportError:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as stop:
            raise ImportError("initialization failed") from stop
    except ImportError as exc:
        return exc


def test_an_import_error_made_of_a_ctrl_c_is_interrupted_and_exit_130():
    result = CliRunner().invoke(_group(_import_error_from_ctrl_c()), ["ask"])
    assert result.exit_code == 130 and result.output.strip() == "Interrupted."


def test_another_import_error_stays_one_error_line():
    result = CliRunner().invoke(_group(ImportError("no module named x")), ["ask"])
    assert result.exit_code == 1 and "Error: ImportError: no module named x" in result.output
    assert "Interrupted" not in result.output
