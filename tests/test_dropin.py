"""The one installer of the drop-ins (``scatterx/_dropin.py``): a package put into ``sys.modules`` under another
name and taken out again, with the real package's precedence as an explicit argument. (The drop-ins' own
``install()`` run in ``tests/frontends/test_torch_scatter_install.py`` and ``tests/pyglib/test_install.py``.)"""

import sys
import types

import pytest

from scatterx._dropin import DropIn

NAME = "scatterx_test_dropin_target"  # a package name nothing installs


@pytest.fixture
def modules():
    """A drop-in package (with a submodule ``sub``) in ``sys.modules`` under its own name; cleaned up after."""
    me = types.ModuleType("scatterx_test_dropin_me")
    me.__file__ = "me/__init__.py"
    sub = types.ModuleType("scatterx_test_dropin_me.sub")
    sys.modules[me.__name__] = me
    yield me, sub
    for key in [k for k in sys.modules if k.startswith(("scatterx_test_dropin_me", NAME))]:
        del sys.modules[key]


def real_package():
    real = types.ModuleType(NAME)
    real.__file__ = f"site-packages/{NAME}/__init__.py"
    return real


@pytest.mark.parametrize("real_wins", [False, True])
def test_install_registers_the_package_and_its_submodules_and_uninstall_removes_them(modules, real_wins):
    me, sub = modules
    drop_in = DropIn(NAME, me.__name__, {"sub": sub}, real_wins=real_wins)
    assert not drop_in.is_installed() and not drop_in.real_installed()
    assert drop_in.install() is me and drop_in.install() is me  # again: nothing changes
    assert sys.modules[NAME] is me and sys.modules[f"{NAME}.sub"] is sub and drop_in.is_installed()
    assert drop_in.uninstall() and NAME not in sys.modules and f"{NAME}.sub" not in sys.modules
    assert not drop_in.uninstall()  # not installed: nothing to do


def test_without_real_wins_an_imported_real_package_is_set_aside_and_put_back(modules):
    me, sub = modules
    real = sys.modules[NAME] = real_package()
    drop_in = DropIn(NAME, me.__name__, {"sub": sub}, real_wins=False)
    assert drop_in.real_installed()
    assert drop_in.install() is me and sys.modules[NAME] is me
    drop_in.uninstall()
    assert sys.modules[NAME] is real and f"{NAME}.sub" not in sys.modules


def test_with_real_wins_a_real_package_keeps_its_place(modules):
    me, sub = modules
    real = sys.modules[NAME] = real_package()
    drop_in = DropIn(NAME, me.__name__, {"sub": sub}, real_wins=True)
    assert drop_in.install() is real and sys.modules[NAME] is real and not drop_in.is_installed()
    assert not drop_in.uninstall() and sys.modules[NAME] is real


def test_a_namespace_package_of_that_name_is_not_the_real_one(modules, tmp_path, monkeypatch):
    """A directory named like the package, without an ``__init__`` (such as ``tests/pyg_lib/`` on the path)."""
    me, sub = modules
    (tmp_path / NAME).mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    drop_in = DropIn(NAME, me.__name__, {"sub": sub}, real_wins=True)
    assert not drop_in.real_installed()
    assert drop_in.install() is me
    drop_in.uninstall()
