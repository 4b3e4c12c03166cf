"""The package itself: its version, its errors, its documentation."""

import os
import re

import loom

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_version_names_the_release():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        release = re.search(r"project\(Loom VERSION ([0-9.]+)", f.read())
    assert release and loom.__version__ == release.group(1)


def test_errors_are_python_exceptions():
    assert issubclass(loom.InvalidArgumentError, ValueError)
    assert issubclass(loom.IoError, OSError)
    for cls in (loom.NotFoundError, loom.CorruptError, loom.CompileError):
        assert issubclass(cls, loom.Error)


def test_help_documents_the_api():
    for thing in (loom.Translator, loom.Translator.translate, loom.compile,
                  loom.train, loom.Session.run, loom.Program.signature):
        assert thing.__doc__ and len(thing.__doc__) > 40, thing
